// Roofline model: device information (peaks, ridge points), log-log scatter charts of
// operational intensity vs attained FLOP rate with one roofline per memory level and its
// ridge point (program level and operation level), filters (infeed/outfeed, category,
// bound by, op name; in the URL; a click on a point selects that op) and the tables.

import { ScatterChart } from 'echarts/charts';
import { MarkLineComponent } from 'echarts/components';
import * as echarts from 'echarts/core';
import { PALETTE, chartElement } from '../components/chart';
import { card, diagnosticsBox } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import { graphViewerHref, sourceInfoNode } from '../components/xla';
import { type DataTable, type NumberFormat, type Row, asTables, cellValue, columnIndex, findTableWithColumn, formatNumber } from '../datatable';
import { escapeHtml, h, replaceChildren } from '../dom';
import type { PageContext } from '../page';

echarts.use([ScatterChart, MarkLineComponent]);

/** XProf's chart window (operational intensity in FLOP/byte, rate in GFLOP/s). */
export const AXIS = { minX: 0.00001, maxX: 100000, minY: 0.00001, maxY: 10000000 };

/** One roofline: memory-bound slope up to the ridge point, then flat at the peak FLOP rate. */
export interface Roofline {
  name: string;
  /** GFLOP/s. */
  peakFlopRate: number;
  /** GiB/s (XProf's unit; the slope of the memory-bound part). */
  peakBandwidth: number;
  /** FLOP/byte where the two parts meet. */
  ridgePoint: number;
  color: string;
}

/** GiB/s → GB/s (XProf's bandwidths are GiB/s, its ridge points FLOP per decimal byte). */
const GIB_TO_GB = 1.073741824;

const num = (p: Record<string, string>, key: string) => {
  const v = Number(p[key]);
  return Number.isFinite(v) ? v : 0;
};

/**
 * The rooflines XProf draws for a device (`p` = the table properties): GPUs get the shared
 * memory / L1 roofline (`peak_vmem_write_bw`), TPUs the VMEM read/write ones with merged
 * VMEM and CMEM read/write ones with CMEM; every device gets HBM. The ridge point is the
 * server's when given, else peak FLOP rate (GFLOP/s) / bandwidth (GiB/s in GB/s). Lines
 * without a bandwidth are left out.
 */
export function rooflines(p: Record<string, string>): Roofline[] {
  const peak = num(p, 'peak_flop_rate');
  const isGpu = (p.device_type ?? '').includes('GPU');
  const specs: [string, string, string, string][] = [];
  if (isGpu) specs.push(['Shared Mem / L1', 'peak_vmem_write_bw', 'vmem_write_ridge_point', 'green']);
  else {
    if (Number(p.has_merged_vmem)) specs.push(['VMEM Read', 'peak_vmem_read_bw', 'vmem_read_ridge_point', 'red'], ['VMEM Write', 'peak_vmem_write_bw', 'vmem_write_ridge_point', 'green']);
    if (Number(p.has_cmem)) specs.push(['CMEM Read', 'peak_cmem_read_bw', 'cmem_read_ridge_point', '#d62728'], ['CMEM Write', 'peak_cmem_write_bw', 'cmem_write_ridge_point', '#2ca02c']);
  }
  specs.push(['HBM', 'peak_hbm_bw', 'hbm_ridge_point', 'black']);
  return specs
    .map(([name, bwKey, ridgeKey, color]) => {
      const bw = num(p, bwKey);
      const ridge = num(p, ridgeKey) || (bw > 0 ? peak / (bw * GIB_TO_GB) : 0);
      return { name, peakFlopRate: peak, peakBandwidth: bw, ridgePoint: ridge, color };
    })
    .filter((r) => r.peakBandwidth > 0 && r.peakFlopRate > 0);
}

/**
 * The three points of a roofline's polyline across the chart window: start, ridge point,
 * end. The memory-bound part is the line through the ridge point with slope 1 in log-log
 * (rate = intensity × peak / ridge), so it meets the compute roof exactly at the ridge.
 */
export function rooflinePoints(r: Roofline, minX = AXIS.minX, maxX = AXIS.maxX): [number, number][] {
  return [
    [minX, attainable(r, minX)],
    [r.ridgePoint, r.peakFlopRate],
    [maxX, r.peakFlopRate],
  ];
}

/** Attainable FLOP rate (GFLOP/s) at operational intensity `x` under a roofline. */
export function attainable(r: Roofline, x: number): number {
  return r.ridgePoint > 0 ? Math.min(r.peakFlopRate, (x * r.peakFlopRate) / r.ridgePoint) : 0;
}

export interface RooflinePoint {
  row: number;
  name: string;
  category: string;
  x: number;
  y: number;
}

/** Scatter points of rows (x = bottleneck operational intensity, y = FLOP rate); rows without FLOPs or with an unknown bound are left out (they cannot sit on a log scale). */
export function scatterPoints(table: DataTable, rows: number[]): RooflinePoint[] {
  const xi = columnIndex(table, 'bottleneck_operational_intensity');
  const yi = columnIndex(table, 'measured_flop_rate');
  const bi = columnIndex(table, 'bound_by');
  const ni = columnIndex(table, 'operation');
  const ci = columnIndex(table, 'category');
  const si = columnIndex(table, 'step');
  const all = table.rows ?? [];
  const out: RooflinePoint[] = [];
  for (const i of rows) {
    const r = all[i];
    if (!r) continue;
    const x = Number(cellValue(r, xi));
    const y = Number(cellValue(r, yi));
    if (!(x > 0) || !(y > 0) || cellValue(r, bi) === 'Unknown') continue;
    const category = String(cellValue(r, ci) ?? '');
    const name = category === 'Program' ? `Program (${String(cellValue(r, si) ?? '')})` : String(cellValue(r, ni) ?? '');
    out.push({ row: i, name, category, x, y });
  }
  return out;
}

/** GFLOP/s as XProf's device info shows it (TFLOP/s above 1000). */
export function gigaflopsText(v: number): string {
  return v >= 1000 ? `${formatNumber(v / 1000, 2)} TFLOP/s` : `${formatNumber(v, 2)} GFLOP/s`;
}

/** Axis labels of powers of ten (`0.001`, `1`, `1,000`). */
function logLabel(value: number): string {
  return value >= 1 ? formatNumber(value, 0) : String(Number(value.toPrecision(1)));
}

function scatterOption(title: string, lines: Roofline[], points: RooflinePoint[], selectedName: string): Record<string, unknown> {
  const categories = [...new Set(points.map((p) => p.category))];
  const series: Record<string, unknown>[] = lines.map((r) => ({
    name: `${r.name} roofline`,
    type: 'line',
    data: rooflinePoints(r),
    symbol: 'none',
    lineStyle: { color: r.color, width: 1.5 },
    itemStyle: { color: r.color },
    tooltip: { show: false },
    z: 1,
  }));
  series.push({
    name: 'Ridge points',
    type: 'scatter',
    symbol: 'diamond',
    symbolSize: 11,
    data: lines.map((r, i) => ({ value: [r.ridgePoint, r.peakFlopRate], name: `${r.name} ridge point`, itemStyle: { color: r.color }, label: { position: i % 2 ? 'bottom' : 'top' } })),
    label: { show: true, position: 'top', formatter: (p: { value: number[] }) => `${formatNumber(p.value[0] ?? 0, 2)}`, fontSize: 10 },
    z: 3,
  });
  categories.forEach((c, i) => {
    series.push({
      name: c,
      type: 'scatter',
      symbolSize: c === 'Program' ? 12 : 8,
      symbol: c === 'Program' ? 'triangle' : 'circle',
      itemStyle: { color: PALETTE[i % PALETTE.length], opacity: 0.85 },
      data: points
        .filter((p) => p.category === c)
        .map((p) => ({
          value: [p.x, p.y],
          name: p.name,
          row: p.row,
          itemStyle: p.name === selectedName ? { borderColor: '#000', borderWidth: 2 } : undefined,
          symbolSize: p.name === selectedName ? 16 : undefined,
        })),
      z: 4,
    });
  });
  return {
    animation: false,
    title: { text: title, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: {
      trigger: 'item',
      confine: true,
      formatter: (p: { name: string; seriesName: string; value: number[] }) =>
        `${escapeHtml(p.name)}${p.seriesName !== 'Ridge points' ? `<br>${escapeHtml(p.seriesName)}` : ''}<br>${formatNumber(p.value[0] ?? 0, 3)} FLOP/byte<br>${formatNumber(p.value[1] ?? 0, 3)} GFLOP/s`,
    },
    legend: { type: 'scroll', orient: 'vertical', right: 0, top: 30, bottom: 10, width: 170 },
    grid: { left: 70, right: 200, top: 40, bottom: 50 },
    xAxis: { type: 'log', name: 'Operational intensity (FLOP/byte, log scale)', nameLocation: 'middle', nameGap: 28, min: AXIS.minX, max: AXIS.maxX, logBase: 10, interval: 1, axisLabel: { formatter: logLabel, hideOverlap: false } },
    yAxis: { type: 'log', name: 'GFLOP/s (log scale)', min: AXIS.minY, max: AXIS.maxY, logBase: 10, interval: 1, axisLabel: { formatter: logLabel, hideOverlap: false } },
    series,
  };
}

const FORMATS: Record<string, NumberFormat> = {
  rank: 'integer',
  occurrences: 'integer',
  total_self_time_percent: 'fraction-percent',
  cumulative_total_self_time_percent: 'fraction-percent',
  total_time_in_percentage: 'fraction-percent',
  roofline_efficiency: 'fraction-percent',
  compute_efficiency: 'fraction-percent',
  max_mem_bw_utilization: 'fraction-percent',
};

/** Columns XProf shows (the others behind "all columns"). */
const PROGRAM_COLUMNS = ['step', 'total_time_per_core', 'measured_flop_rate', 'bound_by', 'hbm_bw', 'roofline_efficiency', 'compute_efficiency', 'max_mem_bw_utilization'];
const OP_COLUMNS = ['rank', 'hlo_module_id', 'category', 'operation', 'occurrences', 'total_time', 'total_self_time', 'measured_flop_rate', 'model_flop_rate', 'bottleneck_operational_intensity', 'bound_by', 'hbm_bw', 'roofline_efficiency', 'compute_efficiency', 'max_mem_bw_utilization', 'source_info'];

export function rooflinePage(ctx: PageContext): HTMLElement {
  const tables = asTables(ctx.data);
  const table = findTableWithColumn(tables, 'bottleneck_operational_intensity') ?? tables[0] ?? { cols: [], rows: [] };
  const p = table.p ?? {};
  const lines = rooflines(p);
  const isGpu = (p.device_type ?? '').includes('GPU');
  const page = h('div', { class: 'page roofline', 'data-page': 'roofline_model' });
  const diag = diagnosticsBox(findTableWithColumn(tables, 'severity'));
  if (diag) page.append(diag);

  // Device information.
  const info: [string, string][] = [['Device type', p.device_type || 'unknown']];
  if (!isGpu && p.megacore !== undefined) info.push(['Megacore', Number(p.megacore) ? 'Yes' : 'No']);
  info.push([isGpu ? 'Peak FLOP rate per GPU' : 'Peak FLOP rate per TensorCore', gigaflopsText(num(p, 'peak_flop_rate'))]);
  info.push([isGpu ? 'Peak HBM bandwidth per GPU' : 'Peak HBM bandwidth per TensorCore', `${p.peak_hbm_bw ?? '0'} GiB/s`]);
  if (isGpu) info.push(['Peak shared memory / L1 bandwidth per GPU', `${p.peak_vmem_write_bw ?? '0'} GiB/s`]);
  else {
    if (Number(p.has_merged_vmem)) info.push(['Peak VMEM read bandwidth', `${p.peak_vmem_read_bw} GiB/s`], ['Peak VMEM write bandwidth', `${p.peak_vmem_write_bw} GiB/s`]);
    if (Number(p.has_cmem)) info.push(['Peak CMEM read bandwidth', `${p.peak_cmem_read_bw} GiB/s`], ['Peak CMEM write bandwidth', `${p.peak_cmem_write_bw} GiB/s`]);
  }
  for (const r of lines) info.push([`${r.name} ridge point`, `${formatNumber(r.ridgePoint, 3)} FLOP/byte`]);
  const tsm = num(p, 'time_scale_multiplier');
  if (tsm > 0 && tsm !== 1) info.push(['Time scale multiplier', String(tsm)]);
  page.append(
    card(
      'Device information',
      h('div', { class: 'controls' }, renderProperties(info, 'device-info'), h('div', { class: 'spacer' }), h('a', { class: 'button', href: ctx.csvUrl, 'data-role': 'server-csv', download: '' }, 'Export as CSV (server)')),
      lines.length ? null : h('p', { class: 'muted', 'data-role': 'no-peaks' }, 'This profile has no device peak FLOP rate or bandwidth (e.g. a CPU-only profile), so no roofline can be drawn.'),
    ),
  );

  const all = table.rows ?? [];
  const col = (id: string) => columnIndex(table, id);
  const value = (r: Row, id: string) => cellValue(r, col(id));

  // Filters (in the URL): infeed/outfeed, category, bound by, op name.
  const distinct = (id: string, rows: Row[]) => [...new Set(rows.map((r) => String(value(r, id) ?? '')))].filter((v) => v).sort();
  const opRowsAll = all.map((r, i) => ({ r, i })).filter(({ r }) => value(r, 'step') === 'Total');
  const infeed = h('input', { type: 'checkbox', 'data-role': 'roof-infeed', 'aria-label': 'Include infeed and outfeed ops' });
  const catSelect = h('select', { 'data-role': 'roof-category', 'aria-label': 'Category' }, h('option', { value: '' }, 'All'), distinct('category', opRowsAll.map((x) => x.r)).map((c) => h('option', { value: c }, c)));
  const boundSelect = h('select', { 'data-role': 'roof-bound', 'aria-label': 'Bound by' }, h('option', { value: '' }, 'All'), distinct('bound_by', opRowsAll.map((x) => x.r)).map((c) => h('option', { value: c }, c)));
  const opFilter = h('input', { type: 'search', class: 'filter', 'data-role': 'roof-op', placeholder: 'Filter by op name', 'aria-label': 'Filter by op name', list: 'roof-ops' });
  const opList = h('datalist', { id: 'roof-ops' }, [...new Set(opRowsAll.map(({ r }) => String(value(r, 'operation') ?? '')))].slice(0, 2000).map((n) => h('option', { value: n })));
  const allCols = h('input', { type: 'checkbox', 'data-role': 'roof-all-columns', 'aria-label': 'Show all columns' });
  const v = ctx.view;
  infeed.checked = v.get('roof.infeed') !== 'no';
  catSelect.value = v.get('roof.cat');
  boundSelect.value = v.get('roof.bound');
  opFilter.value = v.get('roofline_op_name');
  allCols.checked = v.get('roof.cols') === 'all';

  const programSection = h('div');
  const opSection = h('div');
  const hiddenExcept = (keep: string[]) => (allCols.checked ? [] : (table.cols ?? []).map((c) => c.id).filter((id) => !keep.includes(id)));
  const renderCell = (id: string, cell: unknown, row: unknown[]) => {
    if (id === 'source_info' && typeof cell === 'string') return sourceInfoNode(cell);
    if (id === 'operation' && typeof cell === 'string' && cell) {
      const program = String(row[col('hlo_module_id')] ?? '');
      if (program && program !== '0' && String(row[col('category')]) !== 'Program') {
        return h('a', { href: graphViewerHref(ctx.state.run, ctx.state.host, cell, { programId: program }), 'data-role': 'graph-link', title: 'Open in the graph viewer' }, cell);
      }
    }
    return null;
  };
  const subTable = (rows: number[]): DataTable => ({ ...table, rows: rows.map((i) => all[i]).filter((r): r is Row => !!r) });

  const render = () => {
    // Every row comes twice, with and without infeed/outfeed ops (XProf's filter column);
    // "Total (HW)" always includes them.
    const keepInfeed = (r: Row) => col('include_infeed_outfeed') < 0 || value(r, 'include_infeed_outfeed') === infeed.checked || value(r, 'step') === 'Total (HW)';
    // Program level: the `Program` rows (Total, Total (HW), Average, steps).
    const programRows = all.map((r, i) => ({ r, i })).filter(({ r }) => value(r, 'category') === 'Program' && keepInfeed(r));
    const programIdx = programRows.map(({ i }) => i);
    replaceChildren(
      programSection,
      chartElement('roofline-program', scatterOption('Program-level roofline', lines, scatterPoints(table, programIdx), ''), undefined, 420),
      renderTable(subTable(programIdx), { key: 'roof-program', title: 'Programs', csvName: 'roofline_programs', hidden: hiddenExcept(PROGRAM_COLUMNS), formats: FORMATS, emptyText: 'No program rows.' }, ctx.view),
    );
    // Operation level: the `Total` rows of ops, filtered.
    const q = opFilter.value.trim().toLowerCase();
    const opIdx = opRowsAll
      .filter(({ r }) => keepInfeed(r) && (!catSelect.value || value(r, 'category') === catSelect.value) && (!boundSelect.value || value(r, 'bound_by') === boundSelect.value) && (!q || String(value(r, 'operation') ?? '').toLowerCase().includes(q)))
      .map(({ i }) => i);
    const points = scatterPoints(table, opIdx);
    const exact = opFilter.value.trim();
    replaceChildren(
      opSection,
      chartElement(
        'roofline-ops',
        scatterOption('Operation-level roofline', lines, points, exact),
        (chart) => {
          // Where the first op points are drawn (pixels in the chart), for tests and tools.
          const el = chart.getDom();
          const pixels = points.slice(0, 50).map((pt) => [pt.name, ...(chart.convertToPixel({ seriesName: pt.category }, [pt.x, pt.y]) as number[])]);
          el.dataset.pointPixels = JSON.stringify(pixels);
          chart.on('click', (e) => {
            const d = e.data as { name?: string; row?: number } | undefined;
            if (d?.row === undefined || !d.name || d.name.startsWith('Program (')) return;
            opFilter.value = d.name;
            v.set('roofline_op_name', d.name);
            render();
          });
        },
        460,
      ),
      h('p', { class: 'muted', 'data-role': 'roof-point-count', 'data-points': points.length, 'data-rows': opIdx.length }, `${points.length} of ${opIdx.length} ops shown as points (ops without FLOPs or with an unknown bound cannot be placed). Click a point to select its op.`),
      renderTable(subTable(opIdx), { key: 'roof-ops', title: 'Operations', csvName: 'roofline_ops', hidden: hiddenExcept(OP_COLUMNS), formats: FORMATS, renderCell, emptyText: 'No ops match.', filterColumns: ['operation', 'category'] }, ctx.view),
    );
  };
  const set = (key: string, val: string | null) => {
    v.set(key, val);
    render();
  };
  infeed.addEventListener('change', () => set('roof.infeed', infeed.checked ? null : 'no'));
  catSelect.addEventListener('change', () => set('roof.cat', catSelect.value || null));
  boundSelect.addEventListener('change', () => set('roof.bound', boundSelect.value || null));
  opFilter.addEventListener('change', () => set('roofline_op_name', opFilter.value || null));
  opFilter.addEventListener('input', () => {
    if (!opFilter.value) set('roofline_op_name', null);
  });
  allCols.addEventListener('change', () => set('roof.cols', allCols.checked ? 'all' : null));

  page.append(
    card(
      'Program-level analysis',
      h('p', { class: 'description' }, '"Total" aggregates all ops of the session, "Total (HW)" uses hardware counters, "Average" the complete steps only.'),
      programSection,
    ),
    card(
      'Operation-level analysis',
      h(
        'div',
        { class: 'controls' },
        h('label', { class: 'selector' }, infeed, h('span', null, 'Include infeed/outfeed')),
        h('label', { class: 'selector' }, h('span', null, 'Category'), catSelect),
        h('label', { class: 'selector' }, h('span', null, 'Bound by'), boundSelect),
        h('label', { class: 'selector' }, h('span', null, 'Op'), opFilter, opList),
        h('label', { class: 'selector' }, allCols, h('span', null, 'Show all columns')),
      ),
      opSection,
    ),
  );
  render();
  return page;
}
