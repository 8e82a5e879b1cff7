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

/** Creates a chart element (`data-chart=key`); the chart is drawn once the element is in the page. */
export function chartElement(key: string, option: ChartOption, onReady?: (chart: Chart) => void, height = 360): HTMLElement {
  const el = h('div', { class: 'chart', 'data-chart': key, role: 'img', 'aria-label': key });
  el.style.height = `${height}px`;
  queueMicrotask(() => {
    if (!el.isConnected) return;
    if (!canDraw()) {
      el.dataset.ready = 'unsupported';
      el.textContent = 'This browser cannot draw charts (no canvas).';
      return;
    }
    const chart = echarts.init(el, undefined, { renderer: 'canvas' });
    chart.setOption(option);
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
