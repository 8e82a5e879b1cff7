// Framework op stats: include/exclude IDLE, four pie charts (device/host × op type/op
// name, total self-time), and the full table (sort, filter by op name, CSV export).

import { chartElement, disposeCharts } from '../components/chart';
import { card } from '../components/common';
import { renderTable } from '../components/table';
import { pieOption, pieSlices } from '../charts';
import { type DataTable, type NumberFormat, asTables, cellValue, columnIndex } from '../datatable';
import { h } from '../dom';
import type { PageContext } from '../page';

/** The slices of one pie: total self-time of `host_or_device == executor` rows, grouped by `groupBy`. */
export function selfTimeSlices(table: DataTable, executor: 'Host' | 'Device', groupBy: 'type' | 'operation') {
  const exec = columnIndex(table, 'host_or_device');
  const group = columnIndex(table, groupBy);
  const self = columnIndex(table, 'total_self_time');
  const pairs: [string, number][] = (table.rows ?? [])
    .filter((r) => cellValue(r, exec) === executor)
    .map((r) => [String(cellValue(r, group) ?? ''), Number(cellValue(r, self) ?? 0)]);
  return pieSlices(pairs, 10);
}

export function frameworkOpStatsPage(ctx: PageContext): HTMLElement {
  const tables = asTables(ctx.data);
  const includeIdle = ctx.view.get('idle') === 'yes';
  // XProf's response: [0] with IDLE rows, [1] without.
  const table = (includeIdle ? tables[0] : (tables[1] ?? tables[0])) ?? { cols: [], rows: [] };
  const page = h('div', { class: 'page framework-op-stats', 'data-page': 'framework_op_stats' });

  const idleSelect = h(
    'select',
    { 'data-role': 'idle', 'aria-label': 'Include IDLE time in statistics' },
    h('option', { value: 'no' }, 'No'),
    h('option', { value: 'yes' }, 'Yes'),
  );
  idleSelect.value = includeIdle ? 'yes' : 'no';
  const controls = h(
    'div',
    { class: 'controls' },
    h('label', { class: 'selector' }, h('span', null, 'Include IDLE time in statistics'), idleSelect),
    h('div', { class: 'spacer' }),
    h('a', { class: 'button', href: ctx.csvUrl, 'data-role': 'server-csv', download: '' }, 'Export as CSV (server)'),
  );
  page.append(
    card(
      null,
      controls,
      h('p', { class: 'description' }, '"IDLE" is the part of the total execution time on the device (or host) that is idle. In the pie charts, "Other" sums the sectors too small to be shown one by one.'),
      modelProperties(table),
    ),
  );

  const charts = h('div', { class: 'chart-grid' });
  const hasDevice = (table.rows ?? []).some((r) => cellValue(r, columnIndex(table, 'host_or_device')) === 'Device');
  const pies: [string, string, 'Device' | 'Host', 'type' | 'operation'][] = [
    ['device-by-type', 'On device: total self-time (grouped by type)', 'Device', 'type'],
    ['device-by-name', 'On device: total self-time', 'Device', 'operation'],
    ['host-by-type', 'On host: total self-time (grouped by type)', 'Host', 'type'],
    ['host-by-name', 'On host: total self-time', 'Host', 'operation'],
  ];
  for (const [key, title, executor, group] of pies) {
    const slices = selfTimeSlices(table, executor, group);
    const body = slices.length
      ? chartElement(key, pieOption(title, slices, 'µs'), undefined, 340)
      : h('div', { class: 'empty-chart', 'data-chart-empty': key }, h('h3', null, title), executor === 'Device' && !hasDevice ? 'No device ops in this profile.' : 'No data.');
    charts.append(h('div', { class: 'chart-cell' }, body));
  }
  page.append(card('Total self-time', charts));

  const formats: Record<string, NumberFormat> = {};
  for (const c of table.cols ?? []) if (/percent$/i.test(c.id)) formats[c.id] = 'fraction-percent';
  formats.rank = 'integer';
  formats.occurrences = 'integer';
  page.append(
    renderTable(
      table,
      {
        key: 'ops',
        title: 'Framework operations',
        csvName: `${ctx.state.tool}_${includeIdle ? 'with' : 'without'}_idle`,
        formats,
        filterColumns: ['operation'],
        filterPlaceholder: 'Filter by operation name',
        keyColumns: ['operation', 'type', 'host_or_device', 'occurrences', 'total_self_time', 'avg_self_time', 'total_time', 'avg_time'],
      },
      ctx.view,
    ),
  );

  idleSelect.addEventListener('change', () => {
    ctx.view.set('idle', idleSelect.value === 'yes' ? 'yes' : null);
    disposeCharts();
    const replacement = frameworkOpStatsPage(ctx);
    page.replaceWith(replacement);
  });
  return page;
}

function modelProperties(table: DataTable): HTMLElement | null {
  const props = table.p ?? {};
  const arch = props.architecture_type;
  const task = props.task_type;
  if (!arch && !task) return null;
  // XProf's task type reads the framework op names (gradient scopes); the overview's
  // "Training" reads the XLA programs: say which, so that they do not seem to disagree.
  return h(
    'p',
    { class: 'muted', 'data-role': 'model-properties' },
    `Model architecture: ${arch ?? 'n/a'} · Task: ${task ?? 'n/a'}${task ? ' (from the framework op names: gradient name scopes mean training)' : ''}`,
  );
}
