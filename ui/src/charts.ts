// Chart options built from tool data (pure functions, unit tested): the stacked step-time
// graph, top-N pies with an "Other" sector, stacked columns.

import { type DataTable, cellValue, columnIndex } from './datatable';
import { escapeHtml } from './dom';
import { formatWithUnit } from './format';
import { OTHER_GREY, PALETTE, categoryColor } from './components/chart';

export interface StepSeries {
  id: string;
  name: string;
  color: string;
  values: number[];
}

export interface StepGraph {
  steps: string[];
  series: StepSeries[];
  tooltips: string[];
}

/**
 * The step-time graph's data from the step table: one stacked series per category column
 * named in `p.step_time_graph_column_ids` (else every number column but `stepTimeMs` and
 * the infeed-percent ones), in that order.
 */
export function stepGraph(table: DataTable): StepGraph {
  const cols = table.cols ?? [];
  const rows = table.rows ?? [];
  const listed = (table.p?.step_time_graph_column_ids ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((id) => id && id !== 'stepnum' && id !== 'tooltip');
  const ids = listed.length
    ? listed.filter((id) => columnIndex(table, id) >= 0)
    : cols
        .filter((c) => c.type === 'number' && c.id !== 'stepTimeMs' && !c.id.startsWith('infeedPercent'))
        .map((c) => c.id);
  const stepIndex = columnIndex(table, 'stepnum');
  const tooltipIndex = columnIndex(table, 'tooltip');
  const series = ids.map((id, i) => {
    const index = columnIndex(table, id);
    const column = cols[index];
    return {
      id,
      name: (column?.label || id).replace(/ \(in ms\)$/, ''),
      color: categoryColor(id) ?? categoryColor(column?.label ?? '') ?? PALETTE[i % PALETTE.length] ?? '#888',
      values: rows.map((r) => Number(cellValue(r, index) ?? 0)),
    };
  });
  return {
    steps: rows.map((r, i) => String(cellValue(r, stepIndex) ?? i)),
    series,
    tooltips: rows.map((r) => String(cellValue(r, tooltipIndex) ?? '')),
  };
}

/** Steps a step-time graph shows at first (the slider shows the rest). */
export const STEP_WINDOW = 200;

/** ECharts option of the stacked step-time graph (milliseconds per step). */
export function stepGraphOption(graph: StepGraph, title = 'Step time (ms)'): Record<string, unknown> {
  // Many steps: a zoom slider (and mouse-wheel zoom) below the axis; beyond STEP_WINDOW
  // steps the graph opens on the first STEP_WINDOW (every bar is an element to build: a
  // 1,500-step graph drawn whole took most of a second), the slider reaches the others.
  const zoom = graph.steps.length > 60;
  const window = graph.steps.length > STEP_WINDOW ? { startValue: 0, endValue: STEP_WINDOW - 1 } : {};
  return {
    animation: false,
    title: { text: title, left: 'center', textStyle: { fontSize: 14 } },
    tooltip: {
      trigger: 'axis',
      axisPointer: { type: 'shadow' },
      confine: true,
      formatter: (params: { dataIndex: number }[]) => {
        const i = params[0]?.dataIndex ?? 0;
        const text = graph.tooltips[i] || `Step ${graph.steps[i] ?? i}`;
        return escapeHtml(text).replace(/\n/g, '<br>');
      },
    },
    legend: { type: 'scroll', bottom: 0 },
    grid: { left: 60, right: 24, top: 40, bottom: zoom ? 116 : 90 },
    xAxis: { type: 'category', data: graph.steps, name: 'Step', nameLocation: 'middle', nameGap: 28 },
    yAxis: { type: 'value', name: 'ms' },
    dataZoom: zoom ? [{ type: 'inside', ...window }, { type: 'slider', bottom: 34, height: 18, ...window }] : [],
    series: graph.series.map((s) => ({
      name: s.name,
      type: 'bar',
      stack: 'step',
      barMaxWidth: 56,
      itemStyle: { color: s.color },
      emphasis: { focus: 'series' },
      data: s.values,
    })),
  };
}

export interface PieSlice {
  name: string;
  value: number;
}

/** Sums `value` by `name`, largest first (ties by name), keeping `limit` slices and summing the rest into "Other". */
export function pieSlices(pairs: [string, number][], limit = 10): PieSlice[] {
  const sums = new Map<string, number>();
  for (const [name, value] of pairs) {
    if (!Number.isFinite(value)) continue;
    sums.set(name, (sums.get(name) ?? 0) + value);
  }
  const sorted = [...sums.entries()]
    .map(([name, value]) => ({ name, value }))
    .filter((s) => s.value > 0)
    .sort((a, b) => b.value - a.value || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (sorted.length <= limit) return sorted;
  const kept = sorted.slice(0, limit);
  const rest = sorted.slice(limit).reduce((sum, s) => sum + s.value, 0);
  return [...kept, { name: 'Other', value: rest }];
}

/** Where a pie sits and where its legend starts (fractions of the chart's width). */
/** Pie slices with their colors: categories and "Other"/IDLE fixed, the rest the palette in turn. */
export function pieColors(slices: readonly PieSlice[]): (PieSlice & { itemStyle: { color: string } })[] {
  let next = 0;
  return slices.map((s) => {
    const fixed = s.name === 'Other' || s.name === 'IDLE' ? OTHER_GREY : categoryColor(s.name);
    return { ...s, itemStyle: { color: fixed ?? PALETTE[next++ % PALETTE.length] ?? '#888' } };
  });
}

export const PIE_LAYOUT = { centerX: 0.3, radius: 0.6, legendLeft: 0.6 };

/**
 * ECharts option of a pie with a scrolling legend and value/percent tooltips. Percentages
 * are drawn inside the sectors (large enough ones), so no label can reach the legend on
 * the right (issue: HLO stats labels overlapped the legend).
 */
export function pieOption(title: string, slices: PieSlice[], unit: string): Record<string, unknown> {
  return {
    animation: false,
    color: PALETTE,
    title: { text: title, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: {
      trigger: 'item',
      confine: true,
      formatter: (p: { name: string; value: number; percent: number }) =>
        `${escapeHtml(p.name)}<br>${escapeHtml(formatWithUnit(p.value, unit))} (${p.percent.toFixed(1)}%)`,
    },
    legend: {
      type: 'scroll',
      orient: 'vertical',
      left: `${PIE_LAYOUT.legendLeft * 100}%`,
      right: 8,
      top: 32,
      bottom: 8,
      tooltip: { show: true },
      formatter: (name: string) => (name.length > 30 ? `${name.slice(0, 29)}…` : name),
    },
    series: [
      {
        type: 'pie',
        radius: ['0%', `${PIE_LAYOUT.radius * 100}%`],
        center: [`${PIE_LAYOUT.centerX * 100}%`, '55%'],
        minShowLabelAngle: 18,
        label: { show: true, position: 'inside', formatter: (p: { percent: number }) => `${p.percent.toFixed(p.percent >= 10 ? 0 : 1)}%`, fontSize: 11, color: '#000', textBorderColor: '#fff', textBorderWidth: 2 },
        labelLine: { show: false },
        // "Other" and IDLE grey, known categories their color, the rest the palette in turn
        // (never the grey): "Other" never looks like a slice.
        data: pieColors(slices),
      },
    ],
  };
}
