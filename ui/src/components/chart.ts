// Apache ECharts, tree-shaken to the charts oxprof draws (bar, line, pie), with the canvas
// renderer. Charts are disposed when the page changes and follow the window size.

import { BarChart, LineChart, PieChart } from 'echarts/charts';
import {
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  TitleComponent,
  TooltipComponent,
} from 'echarts/components';
import * as echarts from 'echarts/core';
import { CanvasRenderer } from 'echarts/renderers';
import { h } from '../dom';
import { currentTheme } from '../theme';

echarts.use([
  BarChart,
  LineChart,
  PieChart,
  GridComponent,
  LegendComponent,
  TitleComponent,
  TooltipComponent,
  DataZoomComponent,
  CanvasRenderer,
]);

export type ChartOption = echarts.EChartsCoreOption;
export type Chart = echarts.ECharts;

const live = new Set<Chart>();
let resizeHooked = false;

/**
 * Creates a chart element (`data-chart=key`); the chart is drawn once the element is in the
 * page, in the page's theme. Its text alternative (`aria-label`, role img) describes the
 * chart from its option (title, series, number of points, largest values) unless `alt` is
 * given.
 */
export function chartElement(key: string, option: ChartOption, onReady?: (chart: Chart) => void, height = 360, alt?: string): HTMLElement {
  const el = h('div', { class: 'chart', 'data-chart': key, role: 'img', 'aria-label': alt ?? describeChart(option) });
  el.style.height = `${height}px`;
  queueMicrotask(() => {
    if (!el.isConnected) return;
    if (!canDraw()) {
      el.dataset.ready = 'unsupported';
      el.textContent = 'This browser cannot draw charts (no canvas).';
      return;
    }
    const dark = currentTheme() === 'dark';
    const chart = echarts.init(el, dark ? 'dark' : undefined, { renderer: 'canvas' });
    chart.setOption(dark ? { backgroundColor: 'transparent', ...option } : option);
    live.add(chart);
    el.dataset.ready = 'true';
    onReady?.(chart);
  });
  if (!resizeHooked) {
    resizeHooked = true;
    window.addEventListener('resize', () => live.forEach((c) => c.resize()));
  }
  return el;
}

let drawable: boolean | undefined;

/** Whether canvas 2D drawing works here (it does in every browser; not in jsdom). */
function canDraw(): boolean {
  if (drawable === undefined) {
    try {
      drawable = !!document.createElement('canvas').getContext('2d');
    } catch {
      drawable = false;
    }
  }
  return drawable;
}

/** Disposes every chart (called before a page is replaced). */
export function disposeCharts(): void {
  live.forEach((c) => c.dispose());
  live.clear();
}

/** Distinct, readable colors; step-time categories get fixed ones (input red, compute green). */
export const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#76b7b2',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
  '#59a14f',
  '#e15759',
  '#86bcb6',
  '#d37295',
];

export const INPUT_RED = '#d62728';
export const COMPUTE_GREEN = '#2ca02c';
/** "Other", "All others" and idle time: grey everywhere, never a palette color. */
export const OTHER_GREY = '#8c8c8c';

/**
 * The one color of a step-time (or time-breakdown) category on every page — overview,
 * input pipeline, pod viewer, PyTorch steps, pies — by its column id or its label:
 * device compute green, input red, everything "other" grey.
 */
const CATEGORY_COLORS: [RegExp, string][] = [
  [/^(device|tc)?compute$|^devicecompute|^tccompute|^kernel$|^kernels$/, COMPUTE_GREEN],
  [/^scv0infeed/, '#ff7f0e'],
  [/^(tc)?infeed$|^input$|^dataloader$/, INPUT_RED],
  [/^devicetodevice|^memcpy/, '#9467bd'],
  [/^memset/, '#c5b0d5'],
  [/^devicecollective|^communication|^collective/, '#8c564b'],
  [/^hostcompute|^cpuexec/, '#1f77b4'],
  [/^kernellaunch|^runtime/, '#e377c2'],
  [/^(tc)?outfeed$|^output$/, '#bcbd22'],
  [/^compil/, '#17becf'],
  [/^hosttransfer/, '#aec7e8'],
  [/^scv0compute/, '#98df8a'],
  [/^(tc)?idle|^deviceidle/, '#c7c7c7'],
  [/^(all)?others?$|^allothers/, OTHER_GREY],
];

/** The category's color (see CATEGORY_COLORS), or null for a name that is not a category. */
export function categoryColor(key: string): string | null {
  const k = key
    .toLowerCase()
    .replace(/\(.*\)/g, '')
    .replace(/[^a-z0-9]/g, '')
    .replace(/(time)?(ms|us|inms|inus)?$/, '')
    .replace(/time$/, '');
  for (const [re, color] of CATEGORY_COLORS) if (re.test(k)) return color;
  return null;
}

/** Disposes the charts inside `root` (before that part of the page is redrawn). */
export function disposeChartsIn(root: Element): void {
  root.querySelectorAll<HTMLElement>('[data-chart]').forEach((el) => {
    const chart = echarts.getInstanceByDom(el);
    if (chart) {
      live.delete(chart);
      chart.dispose();
    }
  });
}

interface DescribedSeries {
  type?: string;
  name?: string;
  data?: unknown[];
}

function valueOf(d: unknown): number | null {
  if (typeof d === 'number') return d;
  if (Array.isArray(d)) return typeof d[1] === 'number' ? d[1] : null;
  if (d && typeof d === 'object') {
    const v = (d as { value?: unknown }).value;
    if (typeof v === 'number') return v;
    if (Array.isArray(v) && typeof v[1] === 'number') return v[1];
  }
  return null;
}

const nameOf = (d: unknown, i: number, categories: unknown[]): string =>
  d && typeof d === 'object' && typeof (d as { name?: unknown }).name === 'string' ? String((d as { name: string }).name) : String(categories[i] ?? i + 1);

/**
 * A text alternative of a chart from its ECharts option: its title, kind, series and size,
 * and for pies the largest sectors, e.g. "Pie chart: Total self-time (µs). Largest: a 52%,
 * b 30%, c 10%."
 */
export function describeChart(option: ChartOption): string {
  const o = option as { title?: { text?: string } | { text?: string }[]; series?: DescribedSeries[] | DescribedSeries; xAxis?: { data?: unknown[] } | { data?: unknown[] }[] };
  const title = (Array.isArray(o.title) ? o.title[0]?.text : o.title?.text) ?? '';
  const series = (Array.isArray(o.series) ? o.series : o.series ? [o.series] : []).filter((x) => x);
  const xAxis = Array.isArray(o.xAxis) ? o.xAxis[0] : o.xAxis;
  const categories = xAxis?.data ?? [];
  const kinds = [...new Set(series.map((x) => x.type ?? 'chart'))];
  const kind = kinds.length === 1 ? `${kinds[0] === 'bar' ? 'Bar' : kinds[0] === 'pie' ? 'Pie' : kinds[0] === 'line' ? 'Line' : kinds[0] === 'scatter' ? 'Scatter' : 'A'} chart` : 'Chart';
  const parts = [`${kind}${title ? `: ${title}` : ''}.`];
  if (kinds.length === 1 && kinds[0] === 'pie') {
    const data = series[0]?.data ?? [];
    const values = data.map((d, i) => ({ name: nameOf(d, i, []), v: valueOf(d) ?? 0 }));
    const total = values.reduce((t, x) => t + x.v, 0);
    const top = [...values].sort((a, b) => b.v - a.v).slice(0, 3);
    if (total > 0 && top.length) parts.push(`${values.length} sectors; largest: ${top.map((x) => `${x.name} ${((100 * x.v) / total).toFixed(0)}%`).join(', ')}.`);
  } else if (series.length) {
    const points = Math.max(0, ...series.map((x) => x.data?.length ?? 0));
    const names = series.map((x) => x.name).filter((n): n is string => !!n);
    parts.push(`${points} ${categories.length ? 'categories' : 'points'}${names.length ? `; series: ${names.slice(0, 8).join(', ')}${names.length > 8 ? ` and ${names.length - 8} more` : ''}` : ''}.`);
    // Largest stacked total per category (bars of the step-time graphs).
    if (categories.length && kinds[0] === 'bar') {
      const totals = categories.map((_, i) => series.reduce((t, x) => t + (valueOf(x.data?.[i]) ?? 0), 0));
      const max = Math.max(...totals);
      const at = totals.indexOf(max);
      if (Number.isFinite(max) && at >= 0) parts.push(`Largest: ${String(categories[at])} at ${Number(max.toPrecision(4))}.`);
    }
  }
  return parts.join(' ');
}
