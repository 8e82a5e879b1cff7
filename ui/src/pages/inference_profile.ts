// The inference profile: requests and batches of a serving run (XProf's `inference_profile`
// tool). A model selector (XProf's first table), then for the chosen model its request
// latency summary, a chart of the sampled requests' latency by percentile, and the request
// and batch tables (percentile samples, averages per batch size, the overall average).

import { chartElement, disposeChartsIn } from '../components/chart';
import { card, metric } from '../components/common';
import { renderTable } from '../components/table';
import { asTables, cellValue, columnIndex, type DataTable } from '../datatable';
import { h } from '../dom';
import { formatMillis } from '../format';
import type { PageContext } from '../page';

/** A latency in ms (XProf's text) in adaptive units. */
function latencyText(ms: string | undefined): string {
  const v = Number(ms);
  return ms !== undefined && ms !== '' && Number.isFinite(v) ? formatMillis(v) : 'n/a';
}

const MODEL_KEY = 'model';

/** The tables of each model: its requests, then its batches when the run batches. */
export function modelTables(tables: DataTable[]): { models: string[]; hasBatching: boolean; perModel: Map<string, [DataTable, DataTable | null]> } {
  const meta = tables[0] ?? { cols: [], rows: [] };
  const models = (meta.rows ?? []).map((r) => String(cellValue(r, 0) ?? ''));
  const hasBatching = meta.p?.hasBatching === 'true';
  const perModel = new Map<string, [DataTable, DataTable | null]>();
  let i = 1;
  for (const model of models) {
    const requests = tables[i++];
    const batches = hasBatching ? (tables[i++] ?? null) : null;
    if (requests) perModel.set(model, [requests, batches]);
  }
  return { models, hasBatching, perModel };
}

function latencyChart(requests: DataTable): HTMLElement | null {
  const percentile = columnIndex(requests, 'percentile');
  const latency = columnIndex(requests, 'latency_ms');
  const sampled = (requests.rows ?? []).filter((r) => /^[\d.]+$/.test(String(cellValue(r, percentile) ?? '')));
  if (!sampled.length) return null;
  const option = {
    animation: false,
    title: { text: 'Request latency by percentile (ms)', left: 'center', textStyle: { fontSize: 14 } },
    tooltip: { trigger: 'axis', confine: true },
    grid: { left: 60, right: 24, top: 40, bottom: 40 },
    xAxis: { type: 'category', name: 'percentile', data: sampled.map((r) => String(cellValue(r, percentile) ?? '')) },
    yAxis: { type: 'value', name: 'ms' },
    series: [{ name: 'Latency', type: 'bar', barMaxWidth: 24, data: sampled.map((r) => Number(cellValue(r, latency) ?? 0)) }],
  };
  return chartElement('inference-request-latency', option);
}

export function inferenceProfilePage(ctx: PageContext): HTMLElement {
  const { models, hasBatching, perModel } = modelTables(asTables(ctx.data));
  const page = h('div', { class: 'page inference-profile', 'data-page': 'inference_profile' });
  if (!models.length) {
    page.append(card('Inference profile', h('p', { class: 'empty-chart', 'data-role': 'no-requests' }, 'No models in this profile.')));
    return page;
  }
  const stored = ctx.view.get(MODEL_KEY);
  const model = stored && perModel.has(stored) ? stored : (models[0] ?? '');
  const select = h(
    'select',
    { 'data-role': 'model-select', 'aria-label': 'Model' },
    models.map((m) => h('option', { value: m, ...(m === model ? { selected: '' } : {}) }, m)),
  ) as HTMLSelectElement;
  const body = h('div', { 'data-role': 'model-body' });
  page.append(card('Model', h('div', { class: 'controls' }, h('label', null, 'Model ', select), h('span', { 'data-role': 'has-batching' }, hasBatching ? 'batching: yes' : 'batching: no'))), body);
  const render = (chosen: string) => {
    disposeChartsIn(body);
    body.replaceChildren(...modelSection(ctx, chosen, perModel.get(chosen)));
  };
  select.addEventListener('change', () => {
    ctx.view.set(MODEL_KEY, select.value === models[0] ? null : select.value);
    render(select.value);
  });
  render(model);
  return page;
}

/** The summary, chart and tables of one model. */
function modelSection(ctx: PageContext, model: string, tables: [DataTable, DataTable | null] | undefined): HTMLElement[] {
  const page: HTMLElement[] = [];
  const [requests, batches] = tables ?? [null, null];
  if (!requests) return page;
  const metrics = h('div', { class: 'metrics' });
  metrics.append(
    metric('Request throughput', `${requests.p?.throughput ?? ''} /s`, 'request-throughput'),
    metric('Average request latency', latencyText(requests.p?.averageLatencyMs), 'request-latency'),
  );
  if (batches) {
    metrics.append(
      metric('Batch throughput', `${batches.p?.throughput ?? ''} /s`, 'batch-throughput'),
      metric('Average batch latency', latencyText(batches.p?.averageLatencyMs), 'batch-latency'),
    );
  }
  const chart = latencyChart(requests);
  page.push(card('Requests', metrics, chart));
  const ms: Record<string, 'ms'> = {};
  for (const c of [...(requests.cols ?? []), ...(batches?.cols ?? [])]) if (c.type === 'number') ms[c.id] = 'ms';
  page.push(
    renderTable(
      requests,
      {
        key: 'requests',
        title: 'Requests (sampled at percentiles of latency)',
        csvName: `inference_requests_${model}`,
        hidden: ['trace_viewer_url'],
        formats: { ...ms, batching_request_size: 'integer' },
        filterColumns: ['percentile', 'request_id'],
        emptyText: 'No requests for this model.',
      },
      ctx.view,
    ),
  );
  if (batches) {
    page.push(
      renderTable(
        batches,
        {
          key: 'batches',
          title: 'Batches (sampled at percentiles of latency)',
          csvName: `inference_batches_${model}`,
          hidden: ['trace_viewer_url'],
          formats: { ...ms, padding_amount: 'integer', batch_size_after_padding: 'integer', batching_efficiency: 'fraction-percent' },
          filterColumns: ['percentile', 'batch_id'],
          emptyText: 'No batches for this model.',
        },
        ctx.view,
      ),
    );
  }
  return page;
}
