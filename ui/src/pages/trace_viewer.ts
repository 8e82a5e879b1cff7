// The trace viewer: a canvas fed by oxprof's level-of-detail trace API
// (/oxprof/api/trace/{tracks,window,event,search,flow,aggregate}). One collapsible section
// per process, one track per thread (slices by depth) or counter (area chart); tools:
// select (click one, drag many → exact aggregate), pan, zoom, timing; wheel / W S A D zoom
// and pan at any time; search over the whole trace with next / previous; flow arrows of the
// selected event; what the zoom merges or hides is counted. The view is in the URL.
//
// Performance: windows are fetched with half a window of margin on each side, so panning
// redraws from memory (one draw per animation frame) and fetches only when the view leaves
// the loaded range or the zoom changes; only the rows on screen are drawn.

import { buildUrl, getJson } from '../api';
import { card } from '../components/common';
import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import {
  AXIS,
  type AggregateKey,
  type ColumnWindow,
  type EventRef,
  type FlowResult,
  HEADER,
  type Layout,
  ROW,
  type SearchResult,
  type Span,
  TimeScale,
  type TraceAggregate,
  type TraceEvent,
  type TraceTracks,
  type TraceWindow,
  type TrackRow,
  aggregateTotals,
  colorFor,
  counterSteps,
  firstVisible,
  flowArrows,
  formatDuration,
  formatMicros,
  layoutSections,
  panSpan,
  rowAt,
  sliceAt,
  sliceIndex,
  sortAggregate,
  spanForMatch,
  spanFromView,
  spanToView,
  stepMatch,
  tracksInBand,
  visibleTrackIds,
  zoomSpan,
} from '../trace';
import { type TraceTool, type TraceView, TOOLS, viewFromUrl, viewToUrl } from '../trace/view';
import { loadWindow, prepareWindowLoader, windowLoaderKind } from '../trace/window_loader';

const TRACE_API = '/oxprof/api/trace';
const FETCH_DELAY_MS = 40;
const SEARCH_DELAY_MS = 250;
const URL_DELAY_MS = 150;
const SEARCH_LIMIT = 1000;
const TOOL_LABELS: Record<TraceTool, string> = { select: 'Select (1)', pan: 'Pan (2)', zoom: 'Zoom (3)', timing: 'Timing (4)' };
const TOOL_HELP: Record<TraceTool, string> = {
  select: 'click a slice for its details; drag to select many (aggregate by name)',
  pan: 'drag to pan; click a slice for its details',
  zoom: 'drag an interval to zoom to it; click to zoom in (shift: out)',
  timing: 'drag to mark an interval and measure it',
};

interface Loaded {
  range: Span;
  width: number;
  tracksKey: string;
}

type Drag = { x0: number; y0: number; x: number; y: number; span: Span; moved: boolean; shift: boolean };

export function traceViewerPage(ctx: PageContext): HTMLElement {
  const { run, host } = ctx.state;
  const url = (route: string, params: Record<string, string | undefined> = {}) => buildUrl(`${TRACE_API}/${route}`, { run, host, ...params });
  const view: TraceView = viewFromUrl(ctx.view.get);
  prepareWindowLoader();

  const status = h('div', { class: 'trace-status', 'data-role': 'trace-status' });
  const hiddenBox = h('div', { class: 'trace-hidden', 'data-role': 'trace-hidden' });
  const labels = h('div', { class: 'trace-labels', 'data-role': 'trace-labels' });
  const canvas = h('canvas', { class: 'trace-canvas', 'data-role': 'trace-canvas' });
  const plot = h('div', { class: 'trace-plot' }, canvas);
  const viewer = h(
    'div',
    {
      class: 'trace-viewer',
      'data-chart': 'trace',
      'data-ready': 'false',
      tabindex: 0,
      'aria-label': 'Trace: W/S zoom, A/D pan, 1-4 choose the tool (select, pan, zoom, timing)',
    },
    labels,
    plot,
  );
  const toolButtons = TOOLS.map((t) =>
    h('button', { type: 'button', class: 'trace-tool', 'data-tool': t, title: TOOL_HELP[t], onclick: () => setTool(t) }, TOOL_LABELS[t]),
  );
  const help = h('span', { class: 'muted trace-help', 'data-role': 'trace-help' });
  const timingBox = h('span', { class: 'trace-timing', 'data-role': 'trace-timing', style: 'margin-left:12px;font-variant-numeric:tabular-nums' });
  const searchInput = h('input', {
    type: 'search',
    placeholder: 'Search names (prefix)',
    'data-role': 'trace-search',
    'aria-label': 'Search events by name prefix',
    style: 'width:16em',
  });
  const searchStatus = h('span', { class: 'muted', 'data-role': 'search-status', style: 'margin-left:6px;font-variant-numeric:tabular-nums' });
  const prevButton = h('button', { type: 'button', 'data-role': 'search-prev', title: 'Previous match (shift+Enter)', onclick: () => void stepSearch(-1) }, '◀');
  const nextButton = h('button', { type: 'button', 'data-role': 'search-next', title: 'Next match (Enter)', onclick: () => void stepSearch(1) }, '▶');
  const toolbar = h(
    'div',
    { class: 'trace-toolbar', 'data-role': 'trace-toolbar', style: 'display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:6px 0' },
    toolButtons,
    h('span', { style: 'margin-left:12px' }, searchInput, prevButton, nextButton, searchStatus),
    timingBox,
  );
  const details = h('div', { class: 'trace-details', 'data-role': 'trace-details' }, h('p', { class: 'muted' }, 'Click a slice to see its details.'));
  const page = h(
    'div',
    { class: 'page trace', 'data-page': 'trace_viewer' },
    card(
      null,
      h('div', { class: 'card-header' }, status, hiddenBox),
      toolbar,
      h('p', { class: 'muted trace-help', style: 'margin:2px 0 6px' }, 'Wheel or W/S: zoom · shift+wheel or A/D: pan · ', help),
      viewer,
    ),
    card('Details', details),
  );

  let tracks: TraceTracks | null = null;
  let bounds: Span = { start: 0, end: 1 };
  let span: Span = { start: 0, end: 1 };
  let data: ColumnWindow | null = null;
  let loaded: Loaded | null = null;
  let lay: Layout = { sections: [], rows: [], height: AXIS };
  const minDepths = new Map<number, number>();
  let width = 0;
  let canvasHeight = 1;
  let drag: Drag | null = null;
  let flow: { id: string; events: EventRef[] } | null = null;
  let search: { prefix: string; result: SearchResult | null; index: number } = { prefix: view.search, result: null, index: -1 };
  let aggregate: TraceAggregate | null = null;
  let aggSort: { key: AggregateKey; desc: boolean } = { key: 'total_ps', desc: true };
  let inFlight = false;
  let fetchTimer: ReturnType<typeof setTimeout> | undefined;
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  let urlTimer: ReturnType<typeof setTimeout> | undefined;
  let drawPending = false;
  let pendingDetails = 0;
  let colors: string[] = [];
  let textWidths: number[] = [];

  searchInput.value = view.search;

  const setError = (e: unknown) => {
    viewer.dataset.ready = 'true';
    replaceChildren(status, h('span', { class: 'error', 'data-role': 'trace-error' }, `Could not load the trace: ${e instanceof Error ? e.message : String(e)}`));
  };
  const plotWidth = () => Math.max(100, Math.floor(plot.clientWidth || 900));
  const saveView = () => {
    for (const [k, v] of Object.entries(viewToUrl(view))) ctx.view.set(k, v);
  };

  // ---- readiness (for tests and the benchmark): no fetch pending, details loaded ---------
  function updateReady(): void {
    const ready = !!tracks && !inFlight && !needsFetch() && pendingDetails === 0 && urlTimer === undefined;
    viewer.dataset.ready = String(ready);
  }

  // ---- layout and drawing ----------------------------------------------------------------
  function relayout(): void {
    if (!tracks) return;
    lay = layoutSections(tracks, data, view.collapsed, minDepths);
    for (const r of lay.rows) minDepths.set(r.info.id, r.depths);
    const nodes: HTMLElement[] = [];
    for (const s of lay.sections) {
      nodes.push(
        h(
          'div',
          {
            class: 'trace-section',
            style: `top:${s.top}px;height:${HEADER}px;cursor:pointer;user-select:none`,
            'data-section': s.pid,
            'data-collapsed': String(s.collapsed),
            role: 'button',
            'aria-expanded': String(!s.collapsed),
            title: `${s.collapsed ? 'Expand' : 'Collapse'} (${s.tracks} tracks)`,
            onclick: () => toggleSection(s.pid),
          },
          h('span', { 'aria-hidden': 'true', style: 'display:inline-block;width:1em' }, s.collapsed ? '▸' : '▾'),
          h('span', { 'data-role': 'section-name' }, s.name),
          s.collapsed ? h('span', { class: 'muted', style: 'font-weight:400' }, ` (${s.tracks} tracks)`) : null,
        ),
      );
    }
    for (const row of lay.rows) {
      nodes.push(
        h(
          'div',
          {
            class: 'trace-track-label',
            style: `top:${row.top}px;height:${row.depths * ROW}px`,
            'data-track': row.info.id,
            'data-kind': row.info.kind,
            'data-depths': row.depths,
            title: row.info.name,
          },
          h('span', { class: 'trace-track-name' }, row.info.name),
          row.hidden ? h('span', { class: 'trace-track-hidden', 'data-role': 'track-hidden' }, ` +${row.hidden.toLocaleString()} merged`) : null,
        ),
      );
    }
    replaceChildren(labels, nodes);
    labels.style.height = `${lay.height}px`;
    viewer.style.height = `${lay.height}px`;
    resizeCanvas();
  }

  /**
   * The canvas covers only the visible part of the plot (at most one screen high) and
   * follows the page's scroll: drawing and compositing cost stay bounded however many
   * tracks the trace has. `offset` is the plot's y at the canvas top.
   */
  function resizeCanvas(): void {
    width = plotWidth();
    plot.style.height = `${lay.height}px`;
    canvasHeight = Math.max(1, Math.min(lay.height, window.innerHeight || lay.height));
    const dpr = window.devicePixelRatio || 1;
    const cw = Math.floor(width * dpr);
    const ch = Math.floor(canvasHeight * dpr);
    if (canvas.width !== cw || canvas.height !== ch) {
      canvas.width = cw;
      canvas.height = ch;
      canvas.style.width = `${width}px`;
      canvas.style.height = `${canvasHeight}px`;
    }
  }

  function requestDraw(): void {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => {
      drawPending = false;
      draw();
    });
  }

  function draw(): void {
    const g = canvas.getContext('2d');
    if (!g || !tracks) return;
    const dpr = window.devicePixelRatio || 1;
    const height = lay.height;
    // Follow the scroll: the canvas shows plot rows [offset, offset + canvasHeight).
    const offset = Math.round(Math.max(0, Math.min(height - canvasHeight, -plot.getBoundingClientRect().top)));
    canvas.style.position = 'absolute';
    canvas.style.left = '0';
    canvas.style.top = `${offset}px`;
    canvas.dataset.offset = String(offset);
    g.setTransform(dpr, 0, 0, dpr, 0, -offset * dpr);
    g.clearRect(0, offset, width, canvasHeight);
    const scale = new TimeScale(span, width);
    const top = offset;
    const bottom = offset + canvasHeight;
    g.font = '11px sans-serif';
    // Time axis, relative to the trace start.
    g.fillStyle = '#555';
    g.strokeStyle = '#e3e3e3';
    g.lineWidth = 1;
    const step = niceStep((span.end - span.start) / 8);
    g.beginPath();
    for (let t = Math.ceil((span.start - bounds.start) / step) * step; t + bounds.start <= span.end; t += step) {
      const x = Math.round(scale.toX(t + bounds.start)) + 0.5;
      g.moveTo(x, AXIS - 6);
      g.lineTo(x, height);
      g.fillText(formatDuration(t), x + 3, AXIS - 10);
    }
    g.stroke();
    // Section headers.
    g.fillStyle = '#eef1f5';
    for (const s of lay.sections) g.fillRect(0, s.top, width, HEADER);

    const names = data?.names ?? [];
    const prefix = search.prefix;
    const matchId = search.result?.matches[search.index]?.id;
    const selectedId = view.selected;
    let selectedBox: [number, number, number] | null = null;
    const highlights: [number, number, number][] = [];
    // Slices are painted color by color after the loop: setting a fill style parses the
    // color, which cost more than the rectangles themselves with thousands of slices.
    const rects: (number[] | undefined)[] = [];
    const labels: number[] = [];
    for (const row of lay.rows) {
      const rowBottom = row.top + row.depths * ROW;
      if (rowBottom < top || row.top > bottom) continue;
      if (row.samples?.length) {
        drawCounter(g, row, scale);
        continue;
      }
      // Right edge drawn so far per depth: a slice within an already painted pixel is
      // skipped (at most about one rectangle per pixel and depth, whatever the count).
      const painted: number[] = [];
      const { id: ids, name: nameIds, ts: starts, dur: durations, depth: depths, count } = row.slices;
      for (let i = firstVisible(row.slices, span.start, row.maxDur); i < count; i++) {
        const ts = starts[i] ?? 0;
        if (ts > span.end) break; // sorted by start: the rest is right of the view
        const id = ids[i];
        const nameId = nameIds[i] ?? 0;
        const depth = depths[i] ?? 0;
        const x0 = scale.toX(ts);
        const x1 = scale.toX(ts + (durations[i] ?? 0));
        if (x1 < 0) continue;
        const x = Math.max(x0, -1);
        const w = Math.max(1, Math.min(x1, width + 1) - x);
        const edge = painted[depth] ?? -Infinity;
        if (x + w <= edge && id !== selectedId && id !== matchId) continue;
        painted[depth] = Math.max(edge, Math.floor(x) + 1, x + w);
        const y = row.top + depth * ROW;
        (rects[nameId] ??= []).push(x, y + 1, w);
        if (id === selectedId) selectedBox = [x, y, w];
        if (prefix && (names[nameId] ?? '').startsWith(prefix)) highlights.push([x, y, w]);
        else if (id === matchId) highlights.push([x, y, w]);
        if (w > 24) labels.push(x, y, w, nameId);
      }
    }
    rects.forEach((r, nameId) => {
      if (!r) return;
      g.fillStyle = colors[nameId] ?? '#999';
      for (let k = 0; k < r.length; k += 3) g.fillRect(r[k] ?? 0, r[k + 1] ?? 0, r[k + 2] ?? 0, ROW - 2);
    });
    g.fillStyle = '#111';
    for (let k = 0; k < labels.length; k += 4) {
      const [x, y, w, nameId] = [labels[k] ?? 0, labels[k + 1] ?? 0, labels[k + 2] ?? 0, labels[k + 3] ?? 0];
      const name = names[nameId] ?? '';
      const tw = textWidths[nameId] ?? (textWidths[nameId] = g.measureText(name).width);
      if (tw <= w - 6) g.fillText(name, x + 3, y + ROW - 5);
      else {
        const chars = Math.floor((name.length * (w - 14)) / tw);
        if (chars > 0) g.fillText(`${name.slice(0, chars)}…`, x + 3, y + ROW - 5);
      }
    }
    if (highlights.length) {
      g.strokeStyle = '#f4b400';
      g.lineWidth = 2;
      g.beginPath();
      for (const [x, y, w] of highlights) g.rect(x + 1, y + 2, Math.max(1, w - 2), ROW - 4);
      g.stroke();
    }
    if (selectedBox) {
      const [x, y, w] = selectedBox;
      g.strokeStyle = '#000';
      g.lineWidth = 2;
      g.strokeRect(x + 1, y + 2, Math.max(1, w - 2), ROW - 4);
    }
    g.lineWidth = 1;
    drawFlows(g, scale);
    drawOverlays(g, scale, height);
  }

  function drawCounter(g: CanvasRenderingContext2D, row: TrackRow, scale: TimeScale): void {
    const { points, max } = counterSteps(row.samples ?? [], data?.end_ps ?? span.end);
    const base = row.top + row.depths * ROW - 1;
    const hgt = row.depths * ROW - 4;
    const scaleMax = max > 0 ? max : 1;
    const color = colorFor(row.info.name);
    g.fillStyle = color;
    g.globalAlpha = 0.55;
    g.beginPath();
    g.moveTo(scale.toX(points[0]?.[0] ?? span.start), base);
    for (const [ps, v] of points) g.lineTo(scale.toX(ps), base - (Math.max(0, v) / scaleMax) * hgt);
    g.lineTo(scale.toX(points[points.length - 1]?.[0] ?? span.end), base);
    g.closePath();
    g.fill();
    g.globalAlpha = 1;
    g.strokeStyle = color;
    g.beginPath();
    points.forEach(([ps, v], i) => {
      const x = scale.toX(ps);
      const y = base - (Math.max(0, v) / scaleMax) * hgt;
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    });
    g.stroke();
    g.fillStyle = '#333';
    g.fillText(`max ${formatNumber(max)}`, 4, row.top + 11);
  }

  /** Where a flow's event is drawn: its row's depth of that slice (0 when merged away). */
  function locate(e: EventRef): { y: number } | null {
    const row = lay.rows.find((r) => r.info.id === e.track);
    if (!row) return null;
    const i = sliceIndex(row.slices, e.id);
    return { y: row.top + (i < 0 ? 0 : (row.slices.depth[i] ?? 0)) * ROW + ROW / 2 };
  }

  function drawFlows(g: CanvasRenderingContext2D, scale: TimeScale): void {
    const arrows = flow ? flowArrows(flow.events, locate) : [];
    canvas.dataset.flowArrows = String(arrows.length);
    if (flow) canvas.dataset.flowId = flow.id;
    else delete canvas.dataset.flowId;
    if (!arrows.length) return;
    g.strokeStyle = '#d93025';
    g.fillStyle = '#d93025';
    g.lineWidth = 1.5;
    for (const a of arrows) {
      const x0 = scale.toX(a.from.ps);
      const x1 = scale.toX(a.to.ps);
      g.beginPath();
      g.moveTo(x0, a.from.y);
      const mx = (x0 + x1) / 2;
      g.bezierCurveTo(mx, a.from.y, mx, a.to.y, x1, a.to.y);
      g.stroke();
      // Arrow head pointing right into the target.
      g.beginPath();
      g.moveTo(x1, a.to.y);
      g.lineTo(x1 - 7, a.to.y - 4);
      g.lineTo(x1 - 7, a.to.y + 4);
      g.closePath();
      g.fill();
    }
    g.lineWidth = 1;
  }

  function drawOverlays(g: CanvasRenderingContext2D, scale: TimeScale, height: number): void {
    // Drag selection (committed).
    if (view.range) {
      const x0 = scale.toX(view.range.span.start);
      const x1 = scale.toX(view.range.span.end);
      g.fillStyle = 'rgba(26,115,232,0.15)';
      g.strokeStyle = 'rgba(26,115,232,0.8)';
      const chosen = new Set(view.range.tracks);
      for (const row of lay.rows) {
        if (!chosen.has(row.info.id)) continue;
        g.fillRect(x0, row.top, Math.max(1, x1 - x0), row.depths * ROW);
      }
    }
    // Timing mark.
    if (view.timing) {
      const x0 = scale.toX(view.timing.start);
      const x1 = scale.toX(view.timing.end);
      g.fillStyle = 'rgba(0,0,0,0.07)';
      g.fillRect(x0, AXIS, Math.max(1, x1 - x0), height - AXIS);
      g.strokeStyle = '#1a73e8';
      g.beginPath();
      g.moveTo(Math.round(x0) + 0.5, 0);
      g.lineTo(Math.round(x0) + 0.5, height);
      g.moveTo(Math.round(x1) + 0.5, 0);
      g.lineTo(Math.round(x1) + 0.5, height);
      g.stroke();
      const label = formatDuration(view.timing.end - view.timing.start);
      const tw = g.measureText(label).width + 8;
      const lx = Math.min(Math.max(0, (x0 + x1) / 2 - tw / 2), width - tw);
      g.fillStyle = '#1a73e8';
      g.fillRect(lx, 2, tw, 14);
      g.fillStyle = '#fff';
      g.fillText(label, lx + 4, 13);
    }
    // A drag in progress.
    if (drag?.moved) {
      const x0 = Math.min(drag.x0, drag.x);
      const x1 = Math.max(drag.x0, drag.x);
      if (view.tool === 'select') {
        g.fillStyle = 'rgba(26,115,232,0.12)';
        g.strokeStyle = 'rgba(26,115,232,0.9)';
        const y0 = Math.min(drag.y0, drag.y);
        const y1 = Math.max(drag.y0, drag.y);
        g.fillRect(x0, y0, x1 - x0, y1 - y0);
        g.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0, y1 - y0);
      } else if (view.tool === 'zoom' || view.tool === 'timing') {
        g.fillStyle = view.tool === 'zoom' ? 'rgba(26,115,232,0.12)' : 'rgba(0,0,0,0.07)';
        g.fillRect(x0, AXIS, x1 - x0, height - AXIS);
      }
    }
  }

  // ---- status ------------------------------------------------------------------------------
  function showCounts(): void {
    const shown = `${formatDuration(span.start - bounds.start)} – ${formatDuration(span.end - bounds.start)} (${formatDuration(span.end - span.start)} of ${formatDuration(bounds.end - bounds.start)})`;
    replaceChildren(status, h('span', { 'data-role': 'trace-window', 'data-start-ps': span.start, 'data-end-ps': span.end }, shown));
    if (!data || !loaded) return replaceChildren(hiddenBox);
    hiddenBox.dataset.hidden = String(data.total_hidden);
    hiddenBox.dataset.inWindow = String(data.total_in_window);
    hiddenBox.dataset.fetchStart = String(data.start_ps);
    hiddenBox.dataset.fetchEnd = String(data.end_ps);
    hiddenBox.dataset.fetchWidth = String(loaded.width);
    hiddenBox.dataset.fetchTracks = loaded.tracksKey;
    replaceChildren(
      hiddenBox,
      data.total_hidden
        ? `${data.total_in_window.toLocaleString()} events loaded (this window ± half); ${data.total_hidden.toLocaleString()} merged or hidden at this zoom (zoom in to see them).`
        : `${data.total_in_window.toLocaleString()} events loaded (this window ± half), all shown.`,
    );
    hiddenBox.classList.toggle('has-hidden', data.total_hidden > 0);
  }

  function showTiming(): void {
    if (!view.timing) {
      delete timingBox.dataset.ps;
      return replaceChildren(timingBox);
    }
    const len = view.timing.end - view.timing.start;
    timingBox.dataset.ps = String(len);
    timingBox.dataset.startPs = String(view.timing.start);
    timingBox.dataset.endPs = String(view.timing.end);
    replaceChildren(
      timingBox,
      `Interval: ${formatDuration(len)} (${formatMicros(len)}) from ${formatDuration(view.timing.start - bounds.start)} `,
      h('button', { type: 'button', 'data-role': 'timing-clear', onclick: () => setTiming(null) }, 'clear'),
    );
  }

  function setTool(t: TraceTool): void {
    view.tool = t;
    for (const b of toolButtons) b.setAttribute('aria-pressed', String(b.dataset.tool === t));
    canvas.style.cursor = t === 'pan' ? 'grab' : t === 'select' ? 'default' : 'crosshair';
    replaceChildren(help, `${TOOL_LABELS[t]}: ${TOOL_HELP[t]}.`);
    saveView();
  }

  function setTiming(t: Span | null): void {
    view.timing = t;
    saveView();
    showTiming();
    requestDraw();
  }

  // ---- windows -----------------------------------------------------------------------------
  /** The `tracks` parameter: '' for all, 'none' when every section is collapsed. */
  function tracksKey(): string {
    const ids = tracks ? visibleTrackIds(tracks, view.collapsed) : null;
    return ids === null ? '' : ids.length ? ids.join(',') : 'none';
  }

  function wanted(): Loaded {
    const len = span.end - span.start;
    const px = plotWidth();
    const range = { start: Math.max(bounds.start, Math.floor(span.start - len / 2)), end: Math.min(bounds.end, Math.ceil(span.end + len / 2)) };
    const w = Math.max(1, Math.min(100_000, Math.round((px * (range.end - range.start)) / Math.max(1, len))));
    return { range, width: w, tracksKey: tracksKey() };
  }

  function needsFetch(): boolean {
    if (!tracks) return false;
    if (!loaded) return true;
    if (loaded.tracksKey !== tracksKey()) return true;
    if (span.start < loaded.range.start || span.end > loaded.range.end) return true;
    // Resolution of the loaded data against the view's (ps per pixel).
    const loadedRes = (loaded.range.end - loaded.range.start) / loaded.width;
    const viewRes = (span.end - span.start) / plotWidth();
    return loadedRes > viewRes * 1.5 || loadedRes < viewRes / 1.5;
  }

  /** Fetches soon: throttled (not debounced), so a long pan keeps loading as it goes. */
  function scheduleFetch(delay = FETCH_DELAY_MS): void {
    if (inFlight || fetchTimer !== undefined) return;
    fetchTimer = setTimeout(() => {
      fetchTimer = undefined;
      void fetchWindow();
    }, delay);
  }

  async function fetchWindow(): Promise<void> {
    if (inFlight || !needsFetch()) return updateReady();
    const want = wanted();
    inFlight = true;
    updateReady();
    try {
      // Every section collapsed: nothing to fetch.
      const empty: ColumnWindow = { start_ps: want.range.start, end_ps: want.range.end, resolution_ps: 1, names: [], tracks: [], total_in_window: 0, total_returned: 0, total_hidden: 0 };
      // Parsed and laid out in a worker: the page keeps drawing meanwhile.
      const w =
        want.tracksKey === 'none'
          ? empty
          : await loadWindow(
              url('window', {
                start_ps: String(want.range.start),
                end_ps: String(want.range.end),
                width: String(want.width),
                tracks: want.tracksKey || undefined,
              }),
            );
      data = w;
      loaded = want;
      viewer.dataset.windowLoader = windowLoaderKind();
      const probe = canvas.getContext('2d');
      if (probe) probe.font = '11px sans-serif';
      colors = w.names.map((n) => colorFor(n));
      textWidths = [];
      relayout();
      showCounts();
      draw();
    } catch (e) {
      setError(e);
      inFlight = false;
      return;
    }
    inFlight = false;
    if (needsFetch()) scheduleFetch(0);
    updateReady();
  }

  /** Writes the window to the URL, at most every URL_DELAY_MS (browsers throttle history updates). */
  function saveSpanSoon(): void {
    if (urlTimer !== undefined) return;
    urlTimer = setTimeout(() => {
      urlTimer = undefined;
      for (const [k, v] of Object.entries(spanToView(span, bounds))) ctx.view.set(k, v);
      updateReady();
    }, URL_DELAY_MS);
  }

  function setSpan(next: Span): void {
    if (next.start === span.start && next.end === span.end) return;
    span = next;
    saveSpanSoon();
    showCounts();
    requestDraw();
    if (needsFetch()) scheduleFetch();
    updateReady();
  }

  function toggleSection(pid: number): void {
    if (view.collapsed.has(pid)) view.collapsed.delete(pid);
    else view.collapsed.add(pid);
    saveView();
    relayout();
    draw();
    if (needsFetch()) scheduleFetch(0);
    updateReady();
  }

  // ---- selection and details ---------------------------------------------------------------
  async function loading<T>(work: Promise<T>): Promise<T> {
    pendingDetails++;
    updateReady();
    try {
      return await work;
    } finally {
      pendingDetails--;
      updateReady();
    }
  }

  async function select(id: number | null): Promise<void> {
    view.selected = id;
    if (id !== null) {
      view.range = null;
      aggregate = null;
    }
    saveView();
    flow = null;
    requestDraw();
    if (id === null) {
      delete details.dataset.eventId;
      return replaceChildren(details, h('p', { class: 'muted' }, 'Click a slice to see its details; drag to select many.'));
    }
    try {
      const ev = await loading(getJson<TraceEvent>(url('event', { id: String(id) })));
      if (view.selected !== id) return;
      showDetails(ev);
      if (ev.flow) {
        const f = await loading(getJson<FlowResult>(url('flow', { id: ev.flow[0] })));
        if (view.selected !== id) return;
        flow = { id: String(f.flow), events: f.events };
        requestDraw();
      }
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not load the event: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  function showDetails(ev: TraceEvent): void {
    const track = lay.rows.find((r) => r.info.id === ev.track)?.info ?? tracks?.sections.flatMap((s) => s.tracks).find((t) => t.id === ev.track);
    const section = tracks?.sections.find((s) => s.pid === ev.pid);
    const prop = (key: string, label: string, value: Node | string, extra: Record<string, string | number> = {}) =>
      h('tr', null, h('th', null, label), h('td', { 'data-field': key, ...extra }, value));
    const args = Object.entries(ev.args ?? {});
    details.dataset.eventId = String(ev.id);
    const links = h('p', { 'data-role': 'trace-links' });
    replaceChildren(
      details,
      h(
        'table',
        { class: 'props trace-props' },
        h(
          'tbody',
          null,
          prop('name', 'Name', ev.name),
          prop('start', 'Start', `${formatMicros(ev.ts_ps - bounds.start)} from the trace start`, { 'data-ps': ev.ts_ps }),
          prop('duration', 'Duration', formatMicros(ev.dur_ps), { 'data-ps': ev.dur_ps }),
          ev.self_ps !== undefined ? prop('self', 'Self time', formatMicros(ev.self_ps), { 'data-ps': ev.self_ps }) : null,
          prop('track', 'Track', `${section ? `${section.name} › ` : ''}${track ? track.name : String(ev.track)}`),
          ev.group_id !== undefined ? prop('group', 'Step (group id)', String(ev.group_id)) : null,
          ev.flow ? prop('flow', 'Flow', `${ev.flow[1]} of flow ${ev.flow[0]}`, { 'data-flow-id': ev.flow[0] }) : null,
        ),
      ),
      links,
      h('h3', null, 'Arguments'),
      args.length
        ? h(
            'table',
            { class: 'props trace-args', 'data-role': 'trace-args' },
            h('tbody', null, args.map(([k, v]) => h('tr', { 'data-arg': k }, h('th', null, k), h('td', null, typeof v === 'string' ? v : JSON.stringify(v))))),
          )
        : h('p', { class: 'muted', 'data-role': 'trace-no-args' }, 'No arguments.'),
    );
    void addLinks(ev, track?.name ?? '', links).catch(() => undefined);
  }

  /**
   * Links of an XLA op to the op profile and the graph viewer. The node is the `hlo_op`
   * argument (kernels) or the event's name on an "XLA Ops" track; the module is the event
   * of the section's "XLA Modules" track at the same time (its name carries the program
   * id, as the graph viewer lists modules), else the `hlo_module` argument.
   */
  async function addLinks(ev: TraceEvent, trackName: string, box: HTMLElement): Promise<void> {
    const str = (k: string) => (typeof ev.args[k] === 'string' ? (ev.args[k] as string) : undefined);
    const node = str('hlo_op') ?? (/^XLA Ops/.test(trackName) ? ev.name : undefined);
    if (!node) return;
    let module: string | undefined;
    const modulesTrack = tracks?.sections.find((s) => s.pid === ev.pid)?.tracks.find((t) => /^XLA Modules/.test(t.name));
    if (modulesTrack) {
      const at = String(ev.ts_ps + Math.floor(ev.dur_ps / 2));
      const w = await loading(getJson<TraceWindow>(url('window', { start_ps: at, end_ps: at, tracks: String(modulesTrack.id), width: '1' })));
      const hit = w.tracks[0]?.events?.find((e) => e.ts_ps <= ev.ts_ps + ev.dur_ps && e.ts_ps + e.dur_ps >= ev.ts_ps);
      if (hit) module = w.names[hit.name];
    }
    if (!module) {
      const name = str('hlo_module');
      const program = ev.args.program_id;
      module = name && program !== undefined ? `${name}(${String(program)})` : name;
    }
    if (!module || view.selected !== ev.id) return;
    const graph = `${ctx.link('graph_viewer')}&${new URLSearchParams({ module_name: module, node_name: node }).toString()}`;
    box.dataset.module = module;
    box.dataset.node = node;
    replaceChildren(
      box,
      h('a', { href: ctx.link('op_profile'), 'data-role': 'trace-link', 'data-link': 'op_profile' }, 'Open in op profile'),
      ' · ',
      h('a', { href: graph, 'data-role': 'trace-link', 'data-link': 'graph_viewer' }, `Open ${node} of ${module} in the graph viewer`),
    );
  }

  async function selectRange(range: { span: Span; tracks: number[] } | null): Promise<void> {
    view.range = range && range.tracks.length && range.span.end > range.span.start ? range : null;
    view.selected = null;
    flow = null;
    aggregate = null;
    saveView();
    requestDraw();
    const r = view.range;
    if (!r) return void select(null);
    delete details.dataset.eventId;
    replaceChildren(details, h('p', { class: 'muted' }, 'Aggregating the selection…'));
    try {
      const a = await loading(
        getJson<TraceAggregate>(url('aggregate', { start_ps: String(Math.round(r.span.start)), end_ps: String(Math.round(r.span.end)), tracks: r.tracks.join(',') })),
      );
      if (view.range !== r) return;
      aggregate = a;
      showAggregate();
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not aggregate the selection: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  function showAggregate(): void {
    const a = aggregate;
    if (!a) return;
    const rows = sortAggregate(a.rows, aggSort.key, aggSort.desc);
    const totals = aggregateTotals(a.rows);
    const head = (key: AggregateKey, label: string) =>
      h(
        'th',
        {
          'data-sort': key,
          style: 'cursor:pointer',
          'aria-sort': aggSort.key === key ? (aggSort.desc ? 'descending' : 'ascending') : 'none',
          onclick: () => {
            aggSort = { key, desc: aggSort.key === key ? !aggSort.desc : key !== 'name' };
            showAggregate();
          },
        },
        label + (aggSort.key === key ? (aggSort.desc ? ' ▼' : ' ▲') : ''),
      );
    const cell = (field: string, ps: number) => h('td', { 'data-field': field, 'data-ps': ps, class: 'num' }, formatMicros(ps));
    replaceChildren(
      details,
      h(
        'p',
        { 'data-role': 'trace-aggregate-summary' },
        `${totals.count.toLocaleString()} events of ${a.tracks.length} tracks in ${formatDuration(a.end_ps - a.start_ps)} (every event in the selection, whatever the zoom). `,
        h('button', { type: 'button', 'data-role': 'aggregate-clear', onclick: () => void selectRange(null) }, 'clear'),
      ),
      h(
        'div',
        { style: 'max-height:420px;overflow:auto' },
        h(
          'table',
          { class: 'trace-aggregate', 'data-role': 'trace-aggregate', 'data-num-events': a.num_events, 'data-start-ps': a.start_ps, 'data-end-ps': a.end_ps },
          h('thead', null, h('tr', null, head('name', 'Name'), head('count', 'Count'), head('total_ps', 'Total'), head('avg_ps', 'Average'), head('min_ps', 'Min'), head('max_ps', 'Max'))),
          h(
            'tbody',
            null,
            rows.map((r) =>
              h(
                'tr',
                { 'data-agg-name': r.name },
                h('td', { 'data-field': 'name' }, r.name),
                h('td', { 'data-field': 'count', class: 'num' }, r.count.toLocaleString()),
                cell('total', r.total_ps),
                cell('avg', r.avg_ps),
                cell('min', r.min_ps),
                cell('max', r.max_ps),
              ),
            ),
          ),
        ),
      ),
    );
  }

  // ---- search ------------------------------------------------------------------------------
  async function runSearch(prefix: string): Promise<void> {
    search = { prefix, result: null, index: -1 };
    view.search = prefix;
    saveView();
    requestDraw();
    if (!prefix) {
      delete searchStatus.dataset.total;
      return replaceChildren(searchStatus);
    }
    replaceChildren(searchStatus, 'searching…');
    try {
      const r = await loading(getJson<SearchResult>(url('search', { prefix, limit: String(SEARCH_LIMIT) })));
      if (search.prefix !== prefix) return;
      search.result = r;
      showSearch();
      requestDraw();
    } catch (e) {
      replaceChildren(searchStatus, h('span', { class: 'error' }, e instanceof Error ? e.message : String(e)));
    }
  }

  function showSearch(): void {
    const r = search.result;
    if (!r) return;
    searchStatus.dataset.total = String(r.total);
    searchStatus.dataset.index = String(search.index);
    const current = r.matches[search.index];
    if (current) searchStatus.dataset.matchId = String(current.id);
    else delete searchStatus.dataset.matchId;
    const pos = search.index >= 0 ? `${search.index + 1} of ` : '';
    replaceChildren(
      searchStatus,
      r.total === 0 ? 'no match' : `${pos}${r.total.toLocaleString()} match${r.total === 1 ? '' : 'es'}${r.truncated ? ` (first ${r.matches.length.toLocaleString()} browsable)` : ''}`,
    );
  }

  async function stepSearch(step: 1 | -1): Promise<void> {
    const prefix = searchInput.value;
    if (prefix !== search.prefix || !search.result) await runSearch(prefix);
    const r = search.result;
    if (!r || !r.matches.length) return;
    search.index = stepMatch(search.index, r.matches.length, step);
    showSearch();
    const m = r.matches[search.index];
    if (!m) return;
    const section = tracks?.sections.find((s) => s.tracks.some((t) => t.id === m.track));
    if (section && view.collapsed.has(section.pid)) toggleSection(section.pid);
    setSpan(spanForMatch(m, span, bounds));
    await select(m.id);
  }

  searchInput.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => void runSearch(searchInput.value), SEARCH_DELAY_MS);
  });
  searchInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      clearTimeout(searchTimer);
      void stepSearch(e.shiftKey ? -1 : 1);
    }
  });

  // ---- interaction -------------------------------------------------------------------------
  /** A mouse position in plot coordinates (x from the plot's left, y from its top). */
  const canvasPoint = (e: MouseEvent) => {
    const rect = plot.getBoundingClientRect();
    return { x: e.clientX - rect.left, y: e.clientY - rect.top };
  };

  canvas.addEventListener(
    'wheel',
    (e) => {
      e.preventDefault();
      const scale = new TimeScale(span, width);
      const anchor = scale.toPs(canvasPoint(e).x);
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        setSpan(panSpan(span, ((e.deltaX || e.deltaY) / width) * (span.end - span.start), bounds));
      } else {
        setSpan(zoomSpan(span, anchor, Math.pow(1.0015, Math.max(-400, Math.min(400, e.deltaY))), bounds));
      }
    },
    { passive: false },
  );

  canvas.addEventListener('mousedown', (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    viewer.focus({ preventScroll: true });
    const p = canvasPoint(e);
    drag = { x0: p.x, y0: p.y, x: p.x, y: p.y, span, moved: false, shift: e.shiftKey };
    if (view.tool === 'pan') canvas.style.cursor = 'grabbing';
  });
  const onMove = (e: MouseEvent) => {
    if (!drag) return;
    const p = canvasPoint(e);
    drag.x = p.x;
    drag.y = p.y;
    if (Math.abs(p.x - drag.x0) > 3 || Math.abs(p.y - drag.y0) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (view.tool === 'pan') setSpan(panSpan(drag.span, (-(p.x - drag.x0) / width) * (drag.span.end - drag.span.start), bounds));
    else requestDraw();
  };
  const onUp = (e: MouseEvent) => {
    const d = drag;
    if (!d) return;
    drag = null;
    const p = canvasPoint(e);
    const scale = new TimeScale(span, width);
    if (view.tool === 'pan') canvas.style.cursor = 'grab';
    if (!d.moved) {
      if (view.tool === 'zoom') return setSpan(zoomSpan(span, scale.toPs(p.x), e.shiftKey ? 2 : 0.5, bounds));
      if (view.tool === 'timing') return setTiming(null);
      const row = rowAt(lay.rows, p.y);
      if (!row) return void select(null);
      const hit = sliceAt(row.slices, Math.floor((p.y - row.top) / ROW), scale.toPs(p.x), scale.psPerPx * 2);
      return void select(hit < 0 ? null : (row.slices.id[hit] ?? null));
    }
    const a = scale.toPs(Math.max(0, Math.min(d.x0, p.x)));
    const b = scale.toPs(Math.min(width, Math.max(d.x0, p.x)));
    const picked = { start: Math.round(a), end: Math.round(b) };
    if (view.tool === 'zoom') setSpan(zoomSpan(picked, (a + b) / 2, 1, bounds));
    else if (view.tool === 'timing') setTiming(picked);
    else if (view.tool === 'select') void selectRange({ span: picked, tracks: tracksInBand(lay.rows, d.y0, p.y) });
    requestDraw();
  };
  const onKey = (e: KeyboardEvent) => {
    if (!viewer.isConnected) return detach();
    const t = e.target as HTMLElement | null;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey || !tracks) return;
    const len = span.end - span.start;
    const mid = (span.start + span.end) / 2;
    const key = e.key.toLowerCase();
    const toolIndex = ['1', '2', '3', '4'].indexOf(key);
    if (toolIndex >= 0) {
      const tool = TOOLS[toolIndex];
      if (tool) setTool(tool);
      return e.preventDefault();
    }
    switch (key) {
      case 'w':
        setSpan(zoomSpan(span, mid, 0.5, bounds));
        break;
      case 's':
        setSpan(zoomSpan(span, mid, 2, bounds));
        break;
      case 'a':
        setSpan(panSpan(span, -len / 4, bounds));
        break;
      case 'd':
        setSpan(panSpan(span, len / 4, bounds));
        break;
      case 'escape':
        if (view.timing) setTiming(null);
        else if (view.range) void selectRange(null);
        else void select(null);
        break;
      default:
        return;
    }
    e.preventDefault();
  };
  const onResize = () => {
    if (!viewer.isConnected) return detach();
    if (tracks) {
      resizeCanvas();
      draw();
      if (needsFetch()) scheduleFetch();
    }
  };
  const onScroll = () => {
    if (!viewer.isConnected) return detach();
    requestDraw();
  };
  function detach(): void {
    window.removeEventListener('mousemove', onMove);
    window.removeEventListener('mouseup', onUp);
    document.removeEventListener('keydown', onKey);
    window.removeEventListener('resize', onResize);
    window.removeEventListener('scroll', onScroll);
    clearTimeout(fetchTimer);
    clearTimeout(searchTimer);
    clearTimeout(urlTimer);
  }
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  document.addEventListener('keydown', onKey);
  window.addEventListener('resize', onResize);
  window.addEventListener('scroll', onScroll, { passive: true });

  // ---- load --------------------------------------------------------------------------------
  setTool(view.tool);
  void (async () => {
    try {
      tracks = await getJson<TraceTracks>(url('tracks'));
      bounds = { start: tracks.start_ps, end: Math.max(tracks.end_ps, tracks.start_ps + 1) };
      span = spanFromView(ctx.view.get, bounds);
      // Wait until the page is in the document so the canvas has its width.
      await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
      relayout();
      showCounts();
      showTiming();
      const restore: Promise<void>[] = [fetchWindow()];
      if (view.range) restore.push(selectRange(view.range));
      else if (view.selected !== null) restore.push(select(view.selected));
      if (view.search) restore.push(runSearch(view.search));
      await Promise.all(restore);
    } catch (e) {
      setError(e);
    }
  })();
  return page;
}

/** A round step (1, 2, 5 × 10^k) at least `raw`. */
function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function formatNumber(v: number): string {
  return Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : String(Math.round(v * 1000) / 1000);
}
