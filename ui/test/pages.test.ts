import { describe, expect, it } from 'vitest';
import { richText } from '../src/components/common';
import { renderTable } from '../src/components/table';
import { parseCsv } from '../src/datatable';
import { frameworkOpStatsPage } from '../src/pages/framework_op_stats';
import { genericPage } from '../src/pages/generic';
import { inputPipelinePage } from '../src/pages/input_pipeline';
import { kernelStatsPage } from '../src/pages/kernel_stats';
import { overviewPage } from '../src/pages/overview';
import { podViewerPage } from '../src/pages/pod_viewer';
import { context, fixture, memoryStore } from './helpers';

const texts = (root: Element, selector: string) => [...root.querySelectorAll(selector)].map((e) => e.textContent ?? '');

describe('table component', () => {
  const table = {
    cols: [
      { id: 'name', label: 'Name', type: 'string' },
      { id: 'time', label: 'Time', type: 'number' },
    ],
    rows: [
      { c: [{ v: 'b' }, { v: 2 }] },
      { c: [{ v: 'a' }, { v: 10 }] },
      { c: [{ v: 'c' }, { v: 1 }] },
    ],
  };
  it('sorts on header clicks and keeps the sort in the store', () => {
    const store = memoryStore();
    const el = renderTable(table, { key: 't', csvName: 'x' }, store);
    document.body.append(el);
    const header = el.querySelector<HTMLElement>('th[data-col="time"]');
    header?.click();
    expect(store.values['t.sort']).toBe('time.desc');
    expect(texts(el, 'td[data-col="name"]')).toEqual(['a', 'b', 'c']);
    el.querySelector<HTMLElement>('th[data-col="time"]')?.click();
    expect(store.values['t.sort']).toBe('time.asc');
    expect(texts(el, 'td[data-col="name"]')).toEqual(['c', 'b', 'a']);
    el.remove();
  });
  it('restores sort and filter from the store, and filters', () => {
    const store = memoryStore({ 't.sort': 'name.desc', 't.q': 'a' });
    const el = renderTable(table, { key: 't', csvName: 'x' }, store);
    expect(texts(el, 'td[data-col="name"]')).toEqual(['a']);
    expect(el.querySelector('[data-role="count"]')?.textContent).toBe('1 of 3 rows');
    const input = el.querySelector<HTMLInputElement>('[data-role="filter"]');
    if (input) {
      input.value = '';
      input.dispatchEvent(new Event('input'));
    }
    expect(texts(el, 'td[data-col="name"]')).toEqual(['c', 'b', 'a']);
    expect(store.values['t.q']).toBeUndefined();
  });
});

describe('pages render XProf data', () => {
  it('overview: summary numbers, top ops, run environment, recommendation links', () => {
    const el = overviewPage(context('overview_page', fixture('overview_page.tf_custom_loop.json')));
    expect(el.querySelector('[data-metric="steptime_ms_average"] [data-role="value"]')?.textContent).toBe('26.7 ms');
    expect(el.querySelector('[data-prop="infeed_time_ms_avg"]')?.textContent).toBe('24.6 ms (σ 1.7 ms)');
    expect(el.querySelector('[data-chart="step-time"]')).not.toBeNull();
    expect(el.querySelector('[data-props="run-environment"] [data-prop="Device type"]')?.textContent).toBe('CPU');
    const links = [...el.querySelectorAll<HTMLAnchorElement>('a.tool-link')].map((a) => a.dataset.tool);
    expect(links).toContain('input_pipeline_analyzer');
    expect(links).toContain('trace_viewer');
    expect(el.querySelector('[data-role="statement"]')?.textContent).toContain('HIGHLY input-bound');
    const external = el.querySelector<HTMLAnchorElement>('a[href^="https://www.tensorflow.org/guide/data_performance_analysis"]');
    expect(external?.target).toBe('_blank');
  });
  it('overview: inference variant', () => {
    const el = overviewPage(context('overview_page', fixture('overview_page.tpu_inference_2.json')));
    expect(el.querySelector('[data-prop="device_duty_cycle_percent"]')?.textContent).toBe('86.5%');
    expect(el.querySelector('[data-table="top"] [data-role="count"]')?.textContent).toBe('10 rows');
    expect(el.querySelector('[data-role="diagnostics"]')?.textContent).toContain('No step marker observed');
  });
  it('overview: TPU training variant names every component', () => {
    const el = overviewPage(context('overview_page', fixture('overview_page.tpu_synthetic_training.json')));
    const components = [...el.querySelectorAll<HTMLElement>('[data-section="tpu-training"] [data-component]')].map((c) => c.dataset.component);
    expect(components).toEqual([
      'flops-utilization',
      'tpu-duty-cycle',
      'memory-bandwidth-utilization',
      'program-goodput-efficiency',
      'device-compute-precisions',
      'tensorcore-active-time',
    ]);
    expect(el.querySelector('[data-prop="mxu_utilization_percent"]')?.textContent).toBe('40.2%');
    expect(el.querySelector('[data-prop="device_duty_cycle_percent"]')?.textContent).toBe('48.8%');
    expect(el.querySelector('[data-prop="hbm_utilization_percent"]')?.textContent).toBe('62.0%');
    expect(el.querySelector('[data-component="program-goodput-efficiency"] [data-role="missing"]')?.textContent).toContain('n/a');
    expect(el.querySelector('[data-chart="step-time"]')).not.toBeNull();
  });
  it('input pipeline: conclusion, statistics, host breakdown, input-op table', () => {
    const el = inputPipelinePage(context('input_pipeline_analyzer', fixture('input_pipeline_analyzer.tf_custom_loop.json')));
    expect(el.querySelector('[data-role="input-conclusion"]')?.textContent).toContain('HIGHLY input-bound');
    expect(el.querySelector('[data-metric="steptime_ms_standard_deviation"] [data-role="value"]')?.textContent).toBe('1.6 ms');
    expect(el.querySelector('[data-chart="host-breakdown"]')).not.toBeNull();
    expect(el.querySelector('[data-table="ops"] [data-role="count"]')?.textContent).toBe('7 rows');
    expect(el.querySelectorAll('[data-section="recommendation"] li')).toHaveLength(5);
  });
  it('framework op stats: idle switch, four pies, table filter by op name', () => {
    const data = fixture('framework_op_stats.tf_custom_loop.json');
    const noIdle = frameworkOpStatsPage(context('framework_op_stats', data));
    expect(noIdle.querySelector('[data-table="ops"] [data-role="count"]')?.textContent).toBe('47 rows');
    expect(noIdle.querySelectorAll('[data-chart], [data-chart-empty]')).toHaveLength(4);
    const idle = frameworkOpStatsPage(context('framework_op_stats', data, { idle: 'yes', 'ops.q': 'idle' }));
    expect(idle.querySelector('[data-table="ops"] [data-role="count"]')?.textContent).toBe('1 of 48 rows');
  });
  it('kernel stats: pie of top kernels and the full table', () => {
    const el = kernelStatsPage(context('kernel_stats', fixture('kernel_stats.gpu_multi_worker.json')));
    expect(el.querySelector('[data-chart="top-kernels"]')).not.toBeNull();
    expect(el.querySelector('[data-table="kernels"] [data-role="count"]')?.textContent).toBe('15 rows');
  });
  it('pod viewer: slider, chart, details card', () => {
    const el = podViewerPage(context('pod_viewer', fixture('pod_viewer.gpu_multi_worker.json')));
    expect(el.querySelector<HTMLInputElement>('[data-role="step-slider"]')?.max).toBe('0');
    expect(el.querySelector('[data-role="details"]')?.textContent).toContain('Device compute');
    expect(el.querySelector('[data-role="details"] [data-prop="Bottleneck"]')?.textContent).toBe('Device compute');
  });
  it('generic page: every DataTable as a table, other JSON as text', () => {
    const tables = genericPage(context('hlo_stats', fixture('framework_op_stats.tf_custom_loop.json')));
    expect(tables.querySelectorAll('[data-table]')).toHaveLength(2);
    const json = genericPage(context('memory_profile', { a: 1 }));
    expect(json.querySelector('[data-role="json"]')?.textContent).toContain('"a": 1');
  });
});

describe('rich text', () => {
  it('keeps http anchors, shows other markup as text, links tool names', () => {
    const div = document.createElement('div');
    div.append(...richText('See <a href="https://x.org/a" target="_blank">docs</a> and <a href="javascript:alert(1)">bad</a> <b>x</b> in trace_viewer', (t) => `?tool=${t}`));
    expect(div.querySelectorAll('a')).toHaveLength(2);
    expect(div.querySelector('a')?.getAttribute('href')).toBe('https://x.org/a');
    expect(div.querySelector('a.tool-link')?.getAttribute('href')).toBe('?tool=trace_viewer');
    expect(div.textContent).toBe('See docs and bad <b>x</b> in trace_viewer');
  });
});

describe('CSV export of a table', () => {
  it('exports the filtered, sorted rows with the column labels', async () => {
    const created: Blob[] = [];
    const original = URL.createObjectURL;
    URL.createObjectURL = (b: Blob) => {
      created.push(b);
      return 'blob:x';
    };
    URL.revokeObjectURL = () => undefined;
    const el = renderTable(
      { cols: [{ id: 'n', label: 'Name', type: 'string' }, { id: 'v', label: 'V', type: 'number' }], rows: [{ c: [{ v: 'x' }, { v: 1 }] }, { c: [{ v: 'y' }, { v: 2 }] }] },
      { key: 'k', csvName: 'out', defaultSort: { column: 'v', direction: 'desc' } },
      memoryStore(),
    );
    el.querySelector<HTMLButtonElement>('[data-role="csv"]')?.click();
    URL.createObjectURL = original;
    expect(created).toHaveLength(1);
    const text = await created[0]!.text();
    expect(parseCsv(text)).toEqual([
      ['Name', 'V'],
      ['y', '2'],
      ['x', '1'],
    ]);
  });
});

describe('overview inference variant', () => {
  it('draws the session latency chart when the latency table has rows', () => {
    const data = fixture('overview_page.tpu_inference_2.json') as { cols?: { id: string }[]; rows?: unknown[] }[];
    const latency = data.find((t) => t.cols?.some((c) => c.id === 'percentile'));
    if (latency) latency.rows = [{ c: [{ v: '50%' }, { v: 1 }, { v: 2 }, { v: 0.5 }, { v: 3.5 }] }];
    const el = overviewPage(context('overview_page', data));
    expect(el.querySelector('[data-chart="inference-latency"]')).not.toBeNull();
  });
});

describe('XProf strings with markup', () => {
  it('input pipeline: an anchor in summary_nextstep becomes a link, not text', () => {
    const data = fixture('input_pipeline_analyzer.tf_custom_loop.json') as { cols?: { id: string }[]; p?: Record<string, string> }[];
    const device = data.find((t) => t.cols?.some((c) => c.id === 'stepnum'));
    if (device?.p) device.p.summary_nextstep = 'Consider using <a href="https://www.tensorflow.org/guide/data" target="_blank">the tf.data API</a> now.';
    const el = inputPipelinePage(context('input_pipeline_analyzer', data));
    const next = el.querySelector('[data-role="summary-nextstep"]');
    expect(next?.textContent).toBe('Consider using the tf.data API now.');
    expect(next?.querySelector('a')?.getAttribute('href')).toBe('https://www.tensorflow.org/guide/data');
  });
});

describe('XProf\'s -nan standard deviations (issue: "σ -nan ms" on the V100 input pipeline)', () => {
  const withNan = (name: string) => {
    const data = fixture(name) as { cols?: { id: string }[]; p?: Record<string, string> }[];
    const device = data.find((t) => t.cols?.some((c) => c.id === 'stepnum'));
    if (!device?.p) throw new Error(`${name}: no step table`);
    for (const key of ['compile_time_ms_sdv', 'infeed_time_ms_sdv', 'infeed_percent_standard_deviation']) device.p[key] = '-nan';
    device.p.steptime_ms_standard_deviation = 'nan';
    return data;
  };
  it('input pipeline: the breakdown and the metrics leave the σ out, the averages stay', () => {
    const el = inputPipelinePage(context('input_pipeline_analyzer', withNan('input_pipeline_analyzer.tf_custom_loop.json')));
    expect(el.textContent).not.toMatch(/\bnan\b/i);
    expect(el.querySelector('[data-props="device-breakdown"] [data-prop="Input time"]')?.textContent).toBe('24.6 ms');
    expect(el.querySelector('[data-props="device-breakdown"] [data-prop="Host compute time"]')?.textContent).toBe('1.4 ms (σ 0.2 ms)');
    expect(el.querySelector('[data-metric="steptime_ms_standard_deviation"] [data-role="value"]')?.textContent).toBe('n/a');
  });
  it('overview: the same', () => {
    const el = overviewPage(context('overview_page', withNan('overview_page.tf_custom_loop.json')));
    expect(el.textContent).not.toMatch(/\bnan\b/i);
    expect(el.querySelector('[data-prop="infeed_time_ms_avg"]')?.textContent).toBe('24.6 ms');
  });
});

describe('large tables', () => {
  it('render only the rows in view (virtualised), key columns first, raw values kept', async () => {
    const { VIRTUAL_ABOVE, orderColumns, visibleRange } = await import('../src/components/table');
    const n = 10_000;
    const table = {
      cols: [{ id: 'rank', label: 'Rank', type: 'number' }, { id: 'operation', label: 'Operation', type: 'string' }, { id: 'total_time', label: 'Total time (us)', type: 'number' }],
      rows: Array.from({ length: n }, (_, i) => ({ c: [{ v: i + 1 }, { v: `op_${i}` }, { v: 1234.5 * (i + 1) }] })),
    };
    const el = renderTable(table, { key: 'big', csvName: 'x', keyColumns: ['operation'] }, memoryStore());
    document.body.append(el);
    const rows = el.querySelectorAll('tbody tr:not(.spacer-row)').length;
    expect(rows).toBeGreaterThan(0);
    expect(rows).toBeLessThan(VIRTUAL_ABOVE);
    expect(el.querySelector('[data-role="count"]')?.textContent).toBe('10,000 rows');
    expect([...el.querySelectorAll('thead th')].map((th) => th.getAttribute('data-col'))).toEqual(['operation', 'rank', 'total_time']);
    // Times in adaptive units, the header without the unit, the raw value kept.
    const cell = el.querySelector('tbody td[data-col="total_time"]');
    expect(cell?.textContent).toBe('1.234 ms');
    expect(cell?.getAttribute('data-value')).toBe('1234.5');
    expect(el.querySelector('thead th[data-col="total_time"]')?.textContent).toBe('Total time');
    el.remove();
    expect(orderColumns(table.cols, ['total_time', 'operation'])).toEqual([2, 1, 0]);
    expect(visibleRange(2700, 540, n, 27, 10)).toEqual({ first: 90, last: 130 });
    expect(visibleRange(0, 540, 5, 27, 10)).toEqual({ first: 0, last: 5 });
  });
});
