// HLO op stats: XProf's charts (time per HLO category, per HLO op, on rematerialization,
// rematerialization per category, outside compilation; FLOP rate of the ops in decreasing
// self time) and the full table (category and program filters, text filter, sort, CSV;
// op names link to the graph viewer, source info shown as text with its stack).

import { chartElement } from '../components/chart';
import { card } from '../components/common';
import { renderTable } from '../components/table';
import { graphViewerHref, sourceInfoNode } from '../components/xla';
import { type PieSlice, pieOption, pieSlices } from '../charts';
import { type DataTable, type NumberFormat, type Row, asTables, cellValue, columnIndex } from '../datatable';
import { escapeHtml, h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import { timelineHref } from '../timeline';

/** Columns XProf shows by default (the others behind "all columns"). */
export const DEFAULT_COLUMNS = [
  'rank',
  'program_id',
  'category',
  'hlo_op_name',
  'hlo_op_expression',
  'tf_op_name',
  'occurrences',
  'total_time',
  'avg_time',
  'total_self_time',
  'total_self_time_percent',
  'model_flop_rate',
  'bound_by',
  'source_info',
];

/** Self time summed by the values of column `by` (rows passing `keep`), largest first. */
export function selfTimeBy(table: DataTable, by: string, keep: (row: Row) => boolean = () => true, limit = 10): PieSlice[] {
  const group = columnIndex(table, by);
  const self = columnIndex(table, 'total_self_time');
  if (group < 0 || self < 0) return [];
  const pairs: [string, number][] = (table.rows ?? []).filter(keep).map((r) => [String(cellValue(r, group) ?? ''), Number(cellValue(r, self) ?? 0)]);
  return pieSlices(pairs, limit);
}

/** Self time per HLO op, named `op (program id)` (op names repeat across programs). */
export function opSlices(table: DataTable, limit = 10): PieSlice[] {
  const name = columnIndex(table, 'hlo_op_name');
  const program = columnIndex(table, 'program_id');
  const self = columnIndex(table, 'total_self_time');
  if (name < 0 || self < 0) return [];
  const pairs: [string, number][] = (table.rows ?? []).map((r) => {
    const p = program >= 0 ? String(cellValue(r, program) ?? '') : '';
    return [`${String(cellValue(r, name) ?? '')}${p ? ` (${p})` : ''}`, Number(cellValue(r, self) ?? 0)];
  });
  return pieSlices(pairs, limit);
}

/** The FLOP-rate chart's points: ops in decreasing total self time, with their GFLOP/s. */
export function flopRatePoints(table: DataTable): { name: string; rate: number; self: number }[] {
  const name = columnIndex(table, 'hlo_op_name');
  const rate = columnIndex(table, 'model_flop_rate');
  const self = columnIndex(table, 'total_self_time');
  const program = columnIndex(table, 'program_id');
  return (table.rows ?? [])
    .map((r, i) => ({
      name: `${String(cellValue(r, name) ?? '')}${program >= 0 && cellValue(r, program) ? ` (${String(cellValue(r, program))})` : ''}`,
      rate: Math.max(0, Number(cellValue(r, rate) ?? 0)),
      self: Number(cellValue(r, self) ?? 0),
      i,
    }))
    .sort((a, b) => b.self - a.self || a.i - b.i)
    .map(({ name: n, rate: v, self: s }) => ({ name: n, rate: v, self: s }));
}

function flopRateOption(points: { name: string; rate: number }[]): Record<string, unknown> {
  return {
    animation: false,
    title: { text: 'FLOP rate (GFLOP/s) of HLO ops in decreasing total self time', left: 'center', textStyle: { fontSize: 13 } },
    tooltip: {
      trigger: 'axis',
      confine: true,
      formatter: (params: { dataIndex: number }[]) => {
        const p = points[params[0]?.dataIndex ?? 0];
        return p ? `${escapeHtml(p.name)}<br>${p.rate.toLocaleString('en-US', { maximumFractionDigits: 3 })} GFLOP/s` : '';
      },
    },
    grid: { left: 70, right: 20, top: 40, bottom: 40 },
    xAxis: { type: 'category', data: points.map((p) => p.name), axisLabel: { show: false }, name: 'HLO ops (decreasing self time)', nameLocation: 'middle', nameGap: 12 },
    yAxis: { type: 'value', name: 'GFLOP/s' },
    dataZoom: points.length > 80 ? [{ type: 'inside' }] : [],
    series: [{ type: 'bar', data: points.map((p) => p.rate), itemStyle: { color: '#4e79a7' }, barMaxWidth: 24 }],
  };
}

export function hloStatsPage(ctx: PageContext): HTMLElement {
  const table = asTables(ctx.data)[0] ?? { cols: [], rows: [] };
  // XProf's deep-link parameters: `hlo_op_name` (filter) and `program_id` (`name(id)` or id).
  const linkedOp = ctx.view.get('hlo_op_name');
  const linkedProgram = ctx.view.get('program_id');
  if (linkedOp || linkedProgram) {
    if (linkedOp) ctx.view.set('hlo.q', linkedOp);
    if (linkedProgram) ctx.view.set('hlo.prog', /\((\d+)\)$/.exec(linkedProgram)?.[1] ?? linkedProgram);
    ctx.view.set('hlo_op_name', null);
    ctx.view.set('program_id', null);
  }
  const page = h('div', { class: 'page hlo-stats', 'data-page': 'hlo_stats' });
  const rows = table.rows ?? [];
  page.append(
    card(
      null,
      h(
        'div',
        { class: 'controls' },
        h(
          'div',
          { class: 'description' },
          h('p', null, 'Filter the table by HLO op category, program, or any text of the HLO op name, HLO op text or framework op name.'),
          h('p', null, '"IDLE" is the part of the total device time that is idle. In the pie charts, "Other" sums the sectors too small to be shown one by one.'),
        ),
        h('div', { class: 'spacer' }),
        h('a', { class: 'button', href: ctx.csvUrl, 'data-role': 'server-csv', download: '' }, 'Export as CSV (server)'),
      ),
    ),
  );

  // Charts.
  const remat = columnIndex(table, 'hlo_rematerialization');
  const charts = h('div', { class: 'chart-grid hlo-chart-grid' });
  const pie = (key: string, title: string, slices: PieSlice[], empty: string) =>
    h('div', { class: 'chart-cell' }, slices.length ? chartElement(key, pieOption(title, slices, 'µs'), undefined, 320) : h('div', { class: 'empty-chart', 'data-chart-empty': key }, h('h3', null, title), empty));
  const byCategory = selfTimeBy(table, 'category');
  charts.append(
    pie('hlo-category', 'Time per HLO category', byCategory, 'No HLO ops in this profile (HLO stats need device ops).'),
    pie('hlo-op', 'Time per HLO operation', opSlices(table), 'No HLO ops.'),
    pie('hlo-remat', 'Time spent on rematerialization', selfTimeBy(table, 'hlo_rematerialization'), 'No HLO ops.'),
    pie('hlo-remat-category', 'Rematerialization time per HLO category', selfTimeBy(table, 'category', (r) => cellValue(r, remat) === 'Yes'), 'No rematerialized ops.'),
    pie('hlo-outside', 'Time spent on outside compilation', selfTimeBy(table, 'outside_compilation'), 'No HLO ops.'),
  );
  const points = flopRatePoints(table);
  page.append(
    card(
      'Charts',
      charts,
      points.some((p) => p.rate > 0)
        ? chartElement('hlo-flop-rate', flopRateOption(points), undefined, 300)
        : h('p', { class: 'empty-chart', 'data-chart-empty': 'hlo-flop-rate' }, points.length ? 'No HLO op has a measured FLOP rate (no cost analysis for these ops).' : ''),
    ),
  );

  // Table filters (category, program) in the URL; the text filter is the table's own.
  const distinct = (id: string) => {
    const i = columnIndex(table, id);
    return [...new Set(rows.map((r) => String(cellValue(r, i) ?? '')))].filter((v) => v).sort();
  };
  const catSelect = h('select', { 'data-role': 'hlo-category', 'aria-label': 'HLO op category' }, h('option', { value: '' }, 'All'), distinct('category').map((c) => h('option', { value: c }, c)));
  const progSelect = h('select', { 'data-role': 'hlo-program', 'aria-label': 'Program id' }, h('option', { value: '' }, 'All'), distinct('program_id').map((c) => h('option', { value: c }, c)));
  const allCols = h('input', { type: 'checkbox', 'data-role': 'hlo-all-columns', 'aria-label': 'Show all columns' });
  catSelect.value = ctx.view.get('hlo.cat');
  progSelect.value = ctx.view.get('hlo.prog');
  allCols.checked = ctx.view.get('hlo.cols') === 'all';
  const tableHost = h('div');
  const formats: Record<string, NumberFormat> = { rank: 'integer', occurrences: 'integer' };
  for (const c of table.cols ?? []) if (/_percent$/.test(c.id)) formats[c.id] = 'percent';
  const programCol = columnIndex(table, 'program_id');
  const renderRows = () => {
    const cat = catSelect.value;
    const prog = progSelect.value;
    const ci = columnIndex(table, 'category');
    const filtered: DataTable = {
      ...table,
      rows: rows.filter((r) => (!cat || cellValue(r, ci) === cat) && (!prog || cellValue(r, programCol) === prog)),
    };
    const hidden = allCols.checked ? [] : (table.cols ?? []).map((c) => c.id).filter((id) => !DEFAULT_COLUMNS.includes(id));
    replaceChildren(
      tableHost,
      renderTable(
        filtered,
        {
          key: 'hlo',
          title: 'HLO ops',
          csvName: 'hlo_stats',
          hidden,
          formats,
          filterColumns: ['category', 'hlo_op_name', 'hlo_op_expression', 'tf_op_name'],
          filterPlaceholder: 'Filter by HLO op name, text or framework op',
          defaultSort: { column: 'rank', direction: 'asc' },
          emptyText: 'No HLO ops in this profile (HLO stats need device ops).',
          rowAction: {
            label: 'Timeline',
            role: 'show-in-timeline',
            title: 'Show this op in the trace viewer (its longest run, every run highlighted)',
            href: (row) => {
              const op = row[columnIndex(filtered, 'hlo_op_name')];
              return typeof op === 'string' && op ? timelineHref(ctx.state, { name: op, track: 'XLA Ops' }) : null;
            },
          },
          renderCell: (id, value, row) => {
            if (id === 'source_info' && typeof value === 'string') return sourceInfoNode(value);
            if (id === 'hlo_op_name' && typeof value === 'string' && value) {
              const program = String(row[programCol] ?? '');
              if (!program || program === '0') return null;
              return h('a', { href: graphViewerHref(ctx.state.run, ctx.state.host, value, { programId: program }), 'data-role': 'graph-link', title: 'Open in the graph viewer' }, value);
            }
            return null;
          },
        },
        ctx.view,
      ),
    );
  };
  const refresh = (key: string, value: string) => {
    ctx.view.set(key, value || null);
    renderRows();
  };
  catSelect.addEventListener('change', () => refresh('hlo.cat', catSelect.value));
  progSelect.addEventListener('change', () => refresh('hlo.prog', progSelect.value));
  allCols.addEventListener('change', () => refresh('hlo.cols', allCols.checked ? 'all' : ''));
  page.append(
    card(
      null,
      h(
        'div',
        { class: 'controls' },
        h('label', { class: 'selector' }, h('span', null, 'HLO op category'), catSelect),
        h('label', { class: 'selector' }, h('span', null, 'Program id'), progSelect),
        h('label', { class: 'selector' }, allCols, h('span', null, 'Show all columns')),
      ),
    ),
    tableHost,
  );
  renderRows();
  return page;
}
