// The Input pipeline analyzer: summary, device-side step-time graph and statistics,
// host-side breakdown chart, input-op statistics table, recommendations, diagnostics.

import { chartElement } from '../components/chart';
import { NO_STEP_DIAGNOSTIC, card, diagnosticsBox, metric, richText } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import { pieOption, pieSlices, stepGraph, stepGraphOption } from '../charts';
import { type DataTable, cellValue, findTableWithColumn } from '../datatable';
import { h } from '../dom';
import { type PageContext, notesSayNoSteps } from '../page';
import { finiteText, formatMicros } from '../format';
import { BREAKDOWN_FIELDS, sigmaSuffix } from './overview';

/** Host-side input time categories (properties of the input-op table, in microseconds). */
export const HOST_CATEGORIES: [string, string][] = [
  ['Enqueuing data to device', 'enqueue_us'],
  ['Reading data from files in advance', 'advanced_file_read_us'],
  ['Reading data from files on demand', 'demanded_file_read_us'],
  ['Data preprocessing', 'preprocessing_us'],
  ['Other data reading or processing', 'unclassified_nonequeue_us'],
];

/** `σ S<unit> · rest`, or `rest` alone when XProf's σ is not a number (`-nan`). */
function withSigma(sdv: string | undefined, unit: string, rest: string): string {
  const s = finiteText(sdv);
  return s === null ? rest : `σ ${s}${unit} · ${rest}`;
}

export function inputPipelinePage(ctx: PageContext): HTMLElement {
  const tables = ctx.data;
  const device = findTableWithColumn(tables, 'stepnum');
  const host = findTableWithColumn(tables, 'opName');
  const recs = findTableWithColumn(tables, 'link');
  const diagnostics = findTableWithColumn(tables, 'severity');
  const dp = device?.p ?? {};
  const page = h('div', { class: 'page input-pipeline', 'data-page': 'input_pipeline_analyzer' });
  // No steps: oxprof's note says so once (with the fix); XProf's same message is left out.
  const noStepsNoted = (device?.rows?.length ?? 0) === 0 && notesSayNoSteps(ctx);
  const diag = diagnosticsBox(diagnostics, noStepsNoted ? NO_STEP_DIAGNOSTIC : undefined);
  if (diag) page.append(diag);

  // Summary.
  if (!noStepsNoted) page.append(
    card(
      'Summary: is your program input-bound?',
      h('p', { class: 'statement', 'data-role': 'input-conclusion' }, richText(dp.input_conclusion ?? 'No analysis available.', ctx.link)),
      dp.summary_nextstep ? h('p', { class: 'next-step', 'data-role': 'summary-nextstep' }, richText(dp.summary_nextstep, ctx.link)) : null,
      dp.hardware_type ? h('p', { class: 'muted' }, `Hardware: ${dp.hardware_type}`) : null,
    ),
  );

  // Device side.
  const deviceCard = card('Device-side analysis: step time');
  deviceCard.dataset.section = 'device';
  const metrics = h(
    'div',
    { class: 'metrics' },
    metric('Average step time', `${dp.steptime_ms_average ?? 'n/a'} ms`, 'steptime_ms_average'),
    metric('Standard deviation', finiteText(dp.steptime_ms_standard_deviation) === null ? 'n/a' : `${dp.steptime_ms_standard_deviation} ms`, 'steptime_ms_standard_deviation'),
    metric('Minimum', `${dp.steptime_ms_minimum ?? 'n/a'} ms`, 'steptime_ms_minimum'),
    metric('Maximum', `${dp.steptime_ms_maximum ?? 'n/a'} ms`, 'steptime_ms_maximum'),
  );
  if (dp.infeed_percent_average !== undefined) {
    metrics.append(
      metric(
        '% of step time waiting for input',
        `${dp.infeed_percent_average}%`,
        'infeed_percent_average',
        withSigma(dp.infeed_percent_standard_deviation, '', `min ${dp.infeed_percent_minimum ?? ''} · max ${dp.infeed_percent_maximum ?? ''}`),
      ),
    );
  }
  deviceCard.append(metrics);
  if (device && (device.rows?.length ?? 0) > 0) {
    deviceCard.append(chartElement('device-step-time', stepGraphOption(stepGraph(device), 'Device step time (ms)')));
    const breakdown: [string, string][] = [];
    for (const [label, key] of BREAKDOWN_FIELDS) {
      const avg = dp[`${key}_avg`];
      if (avg !== undefined) breakdown.push([label, `${avg} ms${sigmaSuffix(dp[`${key}_sdv`], ' ms')}`]);
    }
    if (breakdown.length) deviceCard.append(h('h3', null, 'Step-time breakdown (average per step)'), renderProperties(breakdown, 'device-breakdown'));
    deviceCard.append(
      renderTable(
        device,
        {
          key: 'steps',
          title: 'Steps',
          hidden: ['tooltip'],
          csvName: `${ctx.state.tool}_steps`,
          filterColumns: ['stepnum'],
          filterPlaceholder: 'Filter by step',
        },
        ctx.view,
      ),
    );
  } else {
    deviceCard.append(h('p', { class: 'empty-chart', 'data-role': 'no-steps' }, 'No steps were found, so there is no device-side step-time graph.'));
  }
  if (!noStepsNoted) page.append(deviceCard);

  // Host side.
  const hostCard = card('Host-side analysis: input processing');
  hostCard.dataset.section = 'host';
  if (host) {
    const hp = host.p ?? {};
    const slices = pieSlices(
      HOST_CATEGORIES.map(([label, key]) => [label, Number(hp[key] ?? 0)] as [string, number]),
      10,
    );
    if (slices.length) {
      hostCard.append(chartElement('host-breakdown', pieOption('Input time on host by category', slices, 'µs'), undefined, 340));
    } else {
      hostCard.append(h('p', { class: 'empty-chart' }, 'No input processing time was recorded on the host.'));
    }
    hostCard.append(
      renderProperties(
        HOST_CATEGORIES.map(([label, key]) => [label, hp[key] !== undefined && Number.isFinite(Number(hp[key])) ? formatMicros(Number(hp[key])) : 'n/a']),
        'host-breakdown',
      ),
      renderTable(
        host,
        {
          key: 'ops',
          title: 'Input-op statistics',
          csvName: `${ctx.state.tool}_input_ops`,
          formats: { timeInPercent: 'fraction-percent', selfTimeInPercent: 'fraction-percent' },
          filterColumns: ['opName', 'category'],
          filterPlaceholder: 'Filter by input op or category',
          emptyText: 'No input ops were found on the host.',
        },
        ctx.view,
      ),
    );
  } else {
    hostCard.append(h('p', null, 'No host-side input analysis.'));
  }
  page.append(hostCard);

  if (recs && (recs.rows?.length ?? 0) > 0) page.append(recommendations(recs, ctx));
  return page;
}

function recommendations(table: DataTable, ctx: PageContext): HTMLElement {
  const section = card(
    'Recommendations',
    h('ul', { class: 'tips' }, (table.rows ?? []).map((r) => h('li', null, ...richText(String(cellValue(r, 0) ?? ''), ctx.link)))),
  );
  section.dataset.section = 'recommendation';
  return section;
}
