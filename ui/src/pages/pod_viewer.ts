// Pod viewer: a step slider, stacked columns of the step-time breakdown per worker (core),
// a details card for the worker under the pointer, and the per-worker table.

import { PALETTE, categoryColor, chartElement, disposeChartsIn } from '../components/chart';
import { NO_STEP_DIAGNOSTIC, card, diagnosticsObjectBox } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import type { DataTable } from '../datatable';
import { formatMicros } from '../format';
import { h, replaceChildren } from '../dom';
import { type PageContext, notesSayNoSteps } from '../page';
import { stepTraceLink } from './overview';

interface CoreStats {
  hostName?: string;
  chipId?: number;
  nodeId?: number;
  stepNum?: number;
  totalDurationUs?: number;
  bottleneck?: string;
  stepBreakdownUs?: Record<string, number>;
}

interface PodStep {
  stepNum?: number;
  podStatsPerCore?: Record<string, CoreStats>;
}

export interface PodViewerData {
  podStatsSequence?: { podStatsMap?: PodStep[] };
  stepBreakdownEvents?: { id: number; name: string }[];
  diagnostics?: unknown;
  deviceType?: string;
}

export interface Worker {
  core: string;
  label: string;
  stats: CoreStats;
}

/** The workers (cores) of one step, in core-id order (numeric when the ids are numbers). */
export function workersOf(step: PodStep | undefined): Worker[] {
  const cores = Object.entries(step?.podStatsPerCore ?? {});
  cores.sort(([a], [b]) => (Number(a) - Number(b)) || (a < b ? -1 : a > b ? 1 : 0));
  return cores.map(([core, stats]) => ({
    core,
    label: `${stats.hostName ?? '?'} · chip ${stats.chipId ?? '?'} · node ${stats.nodeId ?? '?'}`,
    stats,
  }));
}


export function podViewerPage(ctx: PageContext): HTMLElement {
  const data = (ctx.data ?? {}) as PodViewerData;
  const steps = data.podStatsSequence?.podStatsMap ?? [];
  const events = data.stepBreakdownEvents ?? [];
  const page = h('div', { class: 'page pod-viewer', 'data-page': 'pod_viewer' });
  const diag = diagnosticsObjectBox(data.diagnostics, !steps.length && notesSayNoSteps(ctx) ? NO_STEP_DIAGNOSTIC : undefined);
  if (diag) page.append(diag);
  if (!steps.length) {
    // oxprof's note above already says that no steps were found, and how to add them.
    page.append(
      notesSayNoSteps(ctx)
        ? card('Pod viewer', h('p', { class: 'empty-chart', 'data-role': 'pod-empty' }, 'Nothing to show per worker: see the note above.'))
        : card('Pod viewer', h('p', { class: 'empty-chart', 'data-role': 'no-steps' }, 'No steps were found, so there is nothing to show per worker.')),
    );
    return page;
  }
  let index = Math.min(Math.max(Number(ctx.view.get('step') || 0) | 0, 0), steps.length - 1);
  const slider = h('input', { type: 'range', min: 0, max: steps.length - 1, step: 1, 'data-role': 'step-slider', 'aria-label': 'Step' });
  slider.value = String(index);
  const stepLabel = h('span', { class: 'step-label', 'data-role': 'step-label' });
  const stepLink = h('a', { 'data-role': 'open-step', class: 'button' }, 'Open this step in the trace viewer');
  const chartHolder = h('div', { class: 'pod-chart' });
  const details = h('div', { class: 'details-card card', 'data-role': 'details' }, h('p', { class: 'muted' }, 'Hover over a column to see the worker’s details.'));
  const tableHolder = h('div');

  const showDetails = (worker: Worker | undefined) => {
    if (!worker) return;
    const s = worker.stats;
    const breakdown = events.map(({ id, name }) => [name, formatMicros(Number(s.stepBreakdownUs?.[String(id)] ?? 0))] as [string, string]);
    replaceChildren(
      details,
      h('h3', null, `Worker ${worker.core}`),
      renderProperties(
        [
          ['Host', s.hostName ?? ''],
          ['Chip', String(s.chipId ?? '')],
          ['Node', String(s.nodeId ?? '')],
          ['Step', String(s.stepNum ?? '')],
          ['Total duration', formatMicros(Number(s.totalDurationUs ?? 0))],
          ['Bottleneck', s.bottleneck ?? ''],
          ...breakdown,
        ],
        'worker',
      ),
    );
    details.dataset.core = worker.core;
  };

  const render = () => {
    const step = steps[index];
    const workers = workersOf(step);
    stepLabel.textContent = `Step ${step?.stepNum ?? index} (${index + 1} of ${steps.length})`;
    stepLink.setAttribute('href', stepTraceLink(ctx, String(step?.stepNum ?? index)));
    const option = {
      animation: false,
      title: { text: 'Step-time breakdown per worker', left: 'center', textStyle: { fontSize: 14 } },
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true, valueFormatter: (v: number) => formatMicros(Number(v)) },
      legend: { type: 'scroll', bottom: 0 },
      grid: { left: 70, right: 24, top: 40, bottom: 80 },
      xAxis: { type: 'category', data: workers.map((w) => w.core), name: 'Worker (core id)', nameLocation: 'middle', nameGap: 28 },
      yAxis: { type: 'value', name: 'µs' },
      series: events.map(({ id, name }, i) => ({
        name,
        type: 'bar',
        stack: 'breakdown',
        barMaxWidth: 96,
        itemStyle: { color: categoryColor(name) ?? PALETTE[i % PALETTE.length] },
        data: workers.map((w) => Number(w.stats.stepBreakdownUs?.[String(id)] ?? 0)),
      })),
    };
    disposeChartsIn(chartHolder);
    replaceChildren(
      chartHolder,
      chartElement('pod-workers', option, (chart) => {
        chart.on('mouseover', (params) => showDetails(workers[(params as { dataIndex: number }).dataIndex]));
        chart.getZr().on('mousemove', (e) => {
          const point = [e.offsetX, e.offsetY];
          if (!chart.containPixel('grid', point)) return;
          const converted = chart.convertFromPixel('grid', point) as number[] | number;
          const x = Array.isArray(converted) ? converted[0] : converted;
          if (typeof x === 'number') showDetails(workers[Math.round(x)]);
        });
      }),
    );
    showDetails(workers[0]);
    const table: DataTable = {
      cols: [
        { id: 'core', label: 'Worker (core id)', type: 'string' },
        { id: 'host', label: 'Host', type: 'string' },
        { id: 'chip', label: 'Chip', type: 'number' },
        { id: 'node', label: 'Node', type: 'number' },
        { id: 'total', label: 'Total duration (µs)', type: 'number' },
        { id: 'bottleneck', label: 'Bottleneck', type: 'string' },
        ...events.map((e) => ({ id: `b${e.id}`, label: `${e.name} (µs)`, type: 'number' })),
      ],
      rows: workers.map((w) => ({
        c: [
          { v: w.core },
          { v: w.stats.hostName ?? '' },
          { v: w.stats.chipId ?? null },
          { v: w.stats.nodeId ?? null },
          { v: w.stats.totalDurationUs ?? 0 },
          { v: w.stats.bottleneck ?? '' },
          ...events.map((e) => ({ v: Number(w.stats.stepBreakdownUs?.[String(e.id)] ?? 0) })),
        ],
      })),
    };
    replaceChildren(
      tableHolder,
      renderTable(table, { key: 'workers', title: 'Workers in this step', csvName: `pod_viewer_step_${step?.stepNum ?? index}`, filterColumns: ['core', 'host', 'bottleneck'], filterPlaceholder: 'Filter by worker, host or bottleneck' }, ctx.view),
    );
  };

  slider.addEventListener('input', () => {
    index = Number(slider.value) | 0;
    ctx.view.set('step', index ? String(index) : null);
    render();
  });

  page.append(
    card(
      'Pod viewer',
      h('div', { class: 'controls' }, h('label', { class: 'selector slider' }, h('span', null, 'Step'), slider), stepLabel, stepLink),
      h('div', { class: 'pod-layout' }, chartHolder, details),
      data.deviceType ? h('p', { class: 'muted' }, `Device type: ${data.deviceType}`) : null,
    ),
    tableHolder,
  );
  render();
  return page;
}
