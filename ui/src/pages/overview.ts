// The Overview page: performance summary, step-time graph (or the inference latency
// chart), top-10 ops, run environment, recommendation for next steps, diagnostics.

import { type Chart, chartElement } from '../components/chart';
import { NO_STEP_DIAGNOSTIC, card, diagnosticsBox, metric, richText, toolLinks } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import { stepGraph, stepGraphOption } from '../charts';
import { type DataTable, cellValue, columnIndex, findTableWithColumn } from '../datatable';
import { h } from '../dom';
import { finiteText, formatMillis } from '../format';
import { type PageContext, notesSayNoSteps } from '../page';
import { tpuTrainingSummary } from './overview_tpu';
import { smartSuggestionsSection } from './counters';
import { findingsCard } from '../components/findings';

/** ` (σ S<unit>)` after an average, or nothing when XProf's σ is not a number (`-nan`). */
export function sigmaSuffix(sdv: string | undefined, unit: string): string {
  const s = finiteText(sdv);
  return s === null ? '' : ` (σ ${s}${unit})`;
}

/** Step-time breakdown averages of non-TPU profiles (as XProf's summary lists them). */
export const BREAKDOWN_FIELDS: [string, string][] = [
  ['All others time', 'other_time_ms'],
  ['Compilation time', 'compile_time_ms'],
  ['Output time', 'outfeed_time_ms'],
  ['Input time', 'infeed_time_ms'],
  ['Kernel launch time', 'kernel_launch_time_ms'],
  ['Host compute time', 'host_compute_time_ms'],
  ['Device collective communication time', 'device_collectives_time_ms'],
  ['Device to device time', 'device_to_device_time_ms'],
  ['Device compute time', 'device_compute_time_ms'],
];

/** TPU summary fields (FLOPS, duty cycle, bandwidth... are in the TPU summary card, overview_tpu.ts). */
const TPU_FIELDS: [string, string][] = [
  ['Device idle time', 'device_idle_time_percent'],
  ['Host idle time', 'host_idle_time_percent'],
];

const TPU_STEP_FIELDS: [string, string][] = [
  ['TensorCore compute', 'tc_compute_ms_average'],
  ['TensorCore input', 'tc_infeed_ms_average'],
  ['TensorCore output', 'tc_outfeed_ms_average'],
  ['TensorCore idle', 'tc_idle_ms_average'],
  ['Host transfer', 'host_transfer_ms_average'],
];

export function overviewPage(ctx: PageContext): HTMLElement {
  const tables = ctx.data;
  const general = findTableWithColumn(tables, 'selfTimePercent');
  const input = findTableWithColumn(tables, 'stepnum');
  const env = findTableWithColumn(tables, 'host_id');
  const rec = findTableWithColumn(tables, 'tip_type');
  const inference = findTableWithColumn(tables, 'percentile');
  const diagnostics = findTableWithColumn(tables, 'severity');
  const gp = general?.p ?? {};
  const ip = input?.p ?? {};
  const hardware = ip.hardware_type ?? '';
  const isTpu = hardware === 'TPU';
  const isInference = (inference?.rows?.length ?? 0) > 0;
  const hasSteps = (input?.rows?.length ?? 0) > 0;
  // oxprof's note already says (once, with the fix) that no steps were found.
  const noStepsNoted = !hasSteps && notesSayNoSteps(ctx);

  const page = h('div', { class: 'page overview', 'data-page': 'overview_page' });
  const diag = diagnosticsBox(diagnostics, noStepsNoted ? NO_STEP_DIAGNOSTIC : undefined);
  if (diag) page.append(diag);
  const findings = findingsCard(ctx);
  if (findings) page.append(findings);

  // Performance summary.
  const metrics = h('div', { class: 'metrics' });
  if (!isInference || (input?.rows?.length ?? 0) > 0) {
    const avg = hasSteps || isInference ? (ip.steptime_ms_average ?? '') : '';
    const sdv = ip.steptime_ms_standard_deviation ?? '';
    metrics.append(
      metric(
        'Average step time',
        avg ? `${avg} ms` : 'n/a',
        'steptime_ms_average',
        avg ? `${finiteText(sdv) === null ? '' : `σ ${sdv} ms · `}min ${ip.steptime_ms_minimum ?? ''} ms · max ${ip.steptime_ms_maximum ?? ''} ms` : undefined,
      ),
    );
  }
  const lines: [string, string, string][] = [];
  if (isTpu) {
    for (const [label, key] of TPU_STEP_FIELDS) if (ip[key] !== undefined) lines.push([label, `${ip[key]} ms`, key]);
    for (const [label, key] of TPU_FIELDS) if (gp[key] !== undefined) lines.push([label, gp[key] ?? '', key]);
  } else if (hasSteps) {
    for (const [label, key] of BREAKDOWN_FIELDS) {
      const avg = ip[`${key}_avg`];
      if (avg === undefined) continue;
      lines.push([label, `${avg} ms${sigmaSuffix(ip[`${key}_sdv`], ' ms')}`, `${key}_avg`]);
    }
  }
  const placement: [string, string, string][] = [];
  const add = (label: string, key: string, source: Record<string, string>) => {
    if (source[key] !== undefined) placement.push([label, source[key] ?? '', key]);
  };
  add('Framework op placement: host', 'host_tf_op_percent', gp);
  add('Framework op placement: device', 'device_tf_op_percent', gp);
  add('Op time spent on eager execution: host', 'host_op_time_eager_percent', gp);
  add('Op time spent on eager execution: device', 'device_op_time_eager_percent', gp);
  add('Device compute precisions: 16-bit', 'device_compute_16bit_percent', gp);
  add('Device compute precisions: 32-bit', 'device_compute_32bit_percent', gp);
  const summaryList = (title: string, items: [string, string, string][]) =>
    items.length
      ? h(
          'div',
          { class: 'summary-list' },
          h('h3', null, title),
          h('dl', { class: 'properties' }, items.map(([label, value, key]) => [h('dt', null, label), h('dd', { 'data-prop': key }, value)])),
        )
      : null;
  page.append(
    card(
      'Performance summary',
      metrics,
      h(
        'div',
        { class: 'summary-columns' },
        summaryList(isTpu ? 'TPU' : 'Step-time breakdown (average per step)', lines),
        summaryList('Op placement, eager execution, precisions', placement),
      ),
      gp.remark_text ? h('p', { class: `remark remark-${gp.remark_color || 'none'}` }, richText(gp.remark_text, ctx.link)) : null,
    ),
  );

  if (isTpu) page.append(tpuTrainingSummary(gp, ip));

  // Step-time graph or inference latency.
  if (isInference && inference) page.append(...inferenceSection(inference, ctx));
  if (input && hasSteps) {
    const graph = stepGraph(input);
    page.append(
      card(
        'Step-time graph',
        h(
          'p',
          { class: 'description' },
          isTpu
            ? 'Time of each step, stacked by TPU category (TensorCore compute, input, output, TensorCore idle, host transfer). Click a step to open it in the trace viewer.'
            : 'Time of each step, stacked by category: input wait in red, device compute in green. Click a step to open it in the trace viewer.',
        ),
        chartElement('step-time', stepGraphOption(graph), (chart) => openStepOnClick(chart, graph.steps, ctx)),
      ),
    );
  } else if (!isInference && !noStepsNoted) {
    page.append(card('Step-time graph', h('p', { class: 'empty-chart', 'data-role': 'no-steps' }, ip.input_conclusion || 'No steps were found in this profile.')));
  }

  // Top 10 ops.
  if (general) {
    page.append(
      renderTable(
        general,
        {
          key: 'top',
          title: 'Top 10 operations on device',
          csvName: `${ctx.state.tool}_top_ops`,
          formats: { selfTimePercent: 'fraction-percent', cumulativeTimePercent: 'fraction-percent' },
          filterColumns: ['operation', 'category'],
          filterPlaceholder: 'Filter by operation or category',
          keyColumns: ['operation', 'category', 'selfTimePercent', 'cumulativeTimePercent'],
          emptyText: 'No device operations in this profile.',
        },
        ctx.view,
      ),
    );
  }

  // Run environment.
  if (env) {
    const ep = env.p ?? {};
    const props: [string, string | Node][] = [
      ['Number of hosts', ep.host_count ?? ''],
      ['Number of tasks', ep.task_count ?? ''],
      ['Device type', ep.device_type ?? ''],
      ['Number of device cores', ep.device_core_count ?? ''],
      // XProf's `is_training` looks for gradient ops in the XLA programs only: a profile
      // without XLA programs (TensorFlow without XLA) reads "false" even when framework op
      // stats (which looks at framework op names) says "Training". Say where it comes from.
      ['Training', trainingNode(ep.is_training, ctx)],
    ];
    page.append(
      card(
        'Run environment',
        renderProperties(props, 'run-environment'),
        (env.rows?.length ?? 0) > 0
          ? renderTable(env, { key: 'hosts', title: 'Hosts', csvName: `${ctx.state.tool}_hosts` }, ctx.view)
          : null,
      ),
    );
  }

  // Recommendation for next steps.
  if (rec) page.append(recommendation(rec, ctx, noStepsNoted));
  page.append(smartSuggestionsSection(ctx));
  return page;
}

/** The run environment's `is_training` with where XProf reads it from. */
export function trainingText(isTraining: string | undefined): string {
  if (isTraining === 'true') return 'yes (gradient ops in the XLA programs)';
  if (isTraining === 'false') return 'not detected (no gradient ops in the XLA programs; framework op stats reads framework op names instead)';
  return isTraining ?? '';
}

/**
 * The Training row: XProf's answer, and when it found no gradient ops in the XLA programs,
 * not a flat "no" beside framework op stats' "Task: Training" but where to read the task.
 */
function trainingNode(isTraining: string | undefined, ctx: PageContext): Node {
  if (isTraining !== 'false') return document.createTextNode(trainingText(isTraining));
  return h(
    'span',
    { 'data-role': 'training-unknown' },
    'not from the XLA programs (none has gradient ops); ',
    h('a', { href: ctx.link('framework_op_stats'), class: 'tool-link' }, 'framework op stats'),
    ' reads the task from the framework op names',
  );
}

/** A click on a step's column opens that step in the trace viewer (`step_name`). */
export function openStepOnClick(chart: Chart, steps: readonly string[], ctx: PageContext): void {
  chart.getZr().on('click', (e) => {
    const point = [e.offsetX, e.offsetY];
    if (!chart.containPixel('grid', point)) return;
    const converted = chart.convertFromPixel('grid', point) as number[] | number;
    const x = Math.round(Array.isArray(converted) ? (converted[0] ?? -1) : converted);
    const step = steps[x];
    if (step !== undefined) location.href = stepTraceLink(ctx, step);
  });
}

/** The trace viewer at a step, by its name as the step-time graph labels it (or its number). */
export function stepTraceLink(ctx: PageContext, step: string): string {
  const key = /^\d+$/.test(step) ? 'step' : 'step_name';
  return `${ctx.link('trace_viewer@')}&${new URLSearchParams({ [key]: step }).toString()}`;
}

/**
 * The inference variant (runs that do not train and have requests): average session time,
 * the latency breakdown at percentiles (host compute, device compute, host–device
 * communication) as a table and a stacked chart, and a link to the inference profile.
 */
function inferenceSection(table: DataTable, ctx: PageContext): HTMLElement[] {
  const total = columnIndex(table, 'totalTimeMs');
  const avgRow = (table.rows ?? []).find((r) => cellValue(r, 0) === 'Avg');
  const avg = avgRow ? Number(cellValue(avgRow, total) ?? 0) : NaN;
  const ms = (v: unknown) => (Number.isFinite(Number(v)) ? formatMillis(Number(v)) : 'n/a');
  const session = h(
    'div',
    { class: 'metrics' },
    metric('Average session time', ms(avg), 'average_session_time', 'mean latency of the inference requests (sessions)'),
  );
  const breakdown = h(
    'table',
    { class: 'data-table', 'data-table': 'inference-latency' },
    h('thead', null, h('tr', null, (table.cols ?? []).map((c) => h('th', { 'data-col': c.id }, c.label ?? c.id)))),
    h(
      'tbody',
      null,
      (table.rows ?? []).map((r) =>
        h(
          'tr',
          { 'data-row': String(cellValue(r, 0) ?? '') },
          (table.cols ?? []).map((c, i) => h('td', { 'data-col': c.id, 'data-value': String(cellValue(r, i) ?? ''), class: i === 0 ? null : 'num' }, i === 0 ? String(cellValue(r, i) ?? '') : ms(cellValue(r, i)))),
        ),
      ),
    ),
  );
  return [
    card(
      'Inference session latency',
      session,
      h('p', { class: 'description' }, 'Latency breakdown of the inference sessions at percentiles: host compute, device compute and host–device communication. ', h('a', { href: ctx.link('inference_profile'), 'data-role': 'inference-profile-link' }, 'Requests and batches in the inference profile')),
      breakdown,
    ),
    card('Inference session latency breakdown', inferenceChart(table)),
  ];
}

function inferenceChart(table: DataTable): HTMLElement {
  const percentile = columnIndex(table, 'percentile');
  const ids = ['hostTimeMs', 'deviceTimeMs', 'communicationTimeMs'];
  const colors = ['#1f77b4', '#2ca02c', '#ff7f0e'];
  const rows = table.rows ?? [];
  const option = {
    animation: false,
    title: { text: 'Inference session latency at percentile (ms)', left: 'center', textStyle: { fontSize: 14 } },
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, confine: true },
    legend: { bottom: 0 },
    grid: { left: 60, right: 24, top: 40, bottom: 60 },
    xAxis: { type: 'category', data: rows.map((r) => String(cellValue(r, percentile) ?? '')) },
    yAxis: { type: 'value', name: 'ms' },
    series: ids.map((id, i) => ({
      name: table.cols?.[columnIndex(table, id)]?.label ?? id,
      type: 'bar',
      stack: 'latency',
      barMaxWidth: 96,
      itemStyle: { color: colors[i] },
      data: rows.map((r) => Number(cellValue(r, columnIndex(table, id)) ?? 0)),
    })),
  };
  return chartElement('inference-latency', option);
}

function recommendation(rec: DataTable, ctx: PageContext, noStepsNoted: boolean): HTMLElement {
  const p = rec.p ?? {};
  const tipType = columnIndex(rec, 'tip_type');
  const link = columnIndex(rec, 'link');
  const description = columnIndex(rec, 'description');
  const groups = new Map<string, Node[][]>();
  for (const row of rec.rows ?? []) {
    const title = String(cellValue(row, description) ?? cellValue(row, tipType) ?? '');
    const list = groups.get(title) ?? [];
    list.push(richText(String(cellValue(row, link) ?? ''), ctx.link));
    groups.set(title, list);
  }
  const statements = ['statement', 'kernel_launch_statement', 'all_other_statement', 'device_collectives_statement', 'precision_statement']
    .map((k) => p[k])
    .filter((s): s is string => !!s)
    .filter((s) => !(noStepsNoted && /no step time measured/i.test(s)));
  const section = card(
    'Recommendation for next step',
    ...statements.map((s) => h('p', { class: 'statement', 'data-role': 'statement' }, ...richText(s, ctx.link))),
  );
  section.dataset.section = 'recommendation';
  for (const [title, items] of groups) {
    section.append(h('h3', null, ...toolLinks(title)), h('ul', { class: 'tips' }, items.map((nodes) => h('li', null, ...nodes))));
  }
  return section;
}
