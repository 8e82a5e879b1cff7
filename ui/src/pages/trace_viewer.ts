// The trace viewer: a canvas fed by oxprof's level-of-detail trace API
// (/oxprof/api/trace/{tracks,window,event}). One section per process, one track per thread,
// slices laid out by depth; pan/zoom (wheel, drag, W/S/A/D) fetch new windows; a click
// shows the slice's details; what the zoom merges or hides is counted; the window is in the URL.

import { buildUrl, getJson } from '../api';
import { card } from '../components/common';
import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import {
  type Slice,
  type Span,
  TimeScale,
  type TraceEvent,
  type TraceTracks,
  type TraceWindow,
  type TrackInfo,
  colorFor,
  formatDuration,
  formatMicros,
  layoutTrack,
  panSpan,
  sliceAt,
  spanFromView,
  spanToView,
  zoomSpan,
} from '../trace';

const TRACE_API = '/oxprof/api/trace';
const ROW = 18;
const HEADER = 22;
const AXIS = 24;
const FETCH_DELAY_MS = 80;

interface TrackRow {
  info: TrackInfo;
  top: number;
  depths: number;
  slices: Slice[];
  hidden: number;
  samples?: [number, number][];
}

export function traceViewerPage(ctx: PageContext): HTMLElement {
  const { run, host } = ctx.state;
  const url = (route: string, params: Record<string, string | undefined> = {}) => buildUrl(`${TRACE_API}/${route}`, { run, host, ...params });

  const status = h('div', { class: 'trace-status', 'data-role': 'trace-status' });
  const hiddenBox = h('div', { class: 'trace-hidden', 'data-role': 'trace-hidden' });
  const labels = h('div', { class: 'trace-labels', 'data-role': 'trace-labels' });
  const canvas = h('canvas', { class: 'trace-canvas', 'data-role': 'trace-canvas' });
  const plot = h('div', { class: 'trace-plot' }, canvas);
  const viewer = h(
    'div',
    { class: 'trace-viewer', 'data-chart': 'trace', 'data-ready': 'false', tabindex: 0, 'aria-label': 'Trace: W/S zoom, A/D pan, drag to pan, click to select' },
    labels,
    plot,
  );
  const details = h('div', { class: 'trace-details', 'data-role': 'trace-details' }, h('p', { class: 'muted' }, 'Click a slice to see its details.'));
  const page = h(
    'div',
    { class: 'page trace', 'data-page': 'trace_viewer' },
    card(
      null,
      h('div', { class: 'card-header' }, status, hiddenBox),
      h('p', { class: 'muted trace-help' }, 'Zoom: mouse wheel or W/S · Pan: drag or A/D · Click a slice for its details.'),
      viewer,
    ),
    card('Details', details),
  );

  let tracks: TraceTracks | null = null;
  let bounds: Span = { start: 0, end: 1 };
  let span: Span = { start: 0, end: 1 };
  let data: TraceWindow | null = null;
  let rows: TrackRow[] = [];
  let selected: number | null = null;
  let seq = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let width = 0;

  const setError = (e: unknown) => {
    viewer.dataset.ready = 'true';
    replaceChildren(status, h('span', { class: 'error', 'data-role': 'trace-error' }, `Could not load the trace: ${e instanceof Error ? e.message : String(e)}`));
  };

  const plotWidth = () => Math.max(100, Math.floor(plot.clientWidth || 900));

  function layout(): void {
    rows = [];
    let y = AXIS;
    const byId = new Map((data?.tracks ?? []).map((t) => [t.id, t]));
    const labelNodes: HTMLElement[] = [];
    for (const section of tracks?.sections ?? []) {
      labelNodes.push(h('div', { class: 'trace-section', style: `top:${y}px;height:${HEADER}px`, 'data-section': section.pid }, section.name));
      y += HEADER;
      for (const info of section.tracks) {
        const wt = byId.get(info.id);
        const slices = wt ? layoutTrack(wt) : [];
        const depths = info.kind === 'counter' ? 2 : Math.max(1, ...slices.map((s) => s.depth + 1));
        const row: TrackRow = { info, top: y, depths, slices, hidden: wt?.hidden ?? 0, samples: wt?.samples };
        rows.push(row);
        const height = depths * ROW;
        labelNodes.push(
          h(
            'div',
            { class: 'trace-track-label', style: `top:${y}px;height:${height}px`, 'data-track': info.id, 'data-depths': depths, title: info.name },
            h('span', { class: 'trace-track-name' }, info.name),
            row.hidden ? h('span', { class: 'trace-track-hidden', 'data-role': 'track-hidden' }, ` +${row.hidden.toLocaleString()} merged`) : null,
          ),
        );
        y += height + 2;
      }
    }
    replaceChildren(labels, labelNodes);
    const height = y + 4;
    labels.style.height = `${height}px`;
    viewer.style.height = `${height}px`;
    width = plotWidth();
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.floor(width * dpr);
    canvas.height = Math.floor(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }

  function draw(): void {
    const g = canvas.getContext('2d');
    if (!g || !tracks) return;
    const dpr = window.devicePixelRatio || 1;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, canvas.height / dpr);
    const scale = new TimeScale(span, width);
    // Time axis, relative to the trace start.
    g.fillStyle = '#555';
    g.font = '11px sans-serif';
    g.strokeStyle = '#ddd';
    const step = niceStep((span.end - span.start) / 8);
    for (let t = Math.ceil((span.start - bounds.start) / step) * step; t + bounds.start <= span.end; t += step) {
      const x = Math.round(scale.toX(t + bounds.start)) + 0.5;
      g.beginPath();
      g.moveTo(x, AXIS - 6);
      g.lineTo(x, canvas.height / dpr);
      g.stroke();
      g.fillText(formatDuration(t), x + 3, AXIS - 10);
    }
    const names = data?.names ?? [];
    for (const row of rows) {
      if (row.samples?.length) {
        const max = Math.max(...row.samples.map((s) => s[1]), 1e-12);
        g.fillStyle = colorFor(row.info.name);
        g.beginPath();
        const base = row.top + row.depths * ROW;
        g.moveTo(scale.toX(row.samples[0]?.[0] ?? span.start), base);
        for (const [ts, v] of row.samples) g.lineTo(scale.toX(ts), base - (v / max) * (row.depths * ROW - 2));
        g.lineTo(scale.toX(row.samples[row.samples.length - 1]?.[0] ?? span.end), base);
        g.fill();
        continue;
      }
      for (const s of row.slices) {
        const x0 = scale.toX(s.event.ts_ps);
        const x1 = scale.toX(s.event.ts_ps + s.event.dur_ps);
        if (x1 < 0 || x0 > width) continue;
        const x = Math.max(x0, -1);
        const w = Math.max(1, Math.min(x1, width + 1) - x);
        const y = row.top + s.depth * ROW;
        const name = names[s.event.name] ?? '';
        g.fillStyle = colorFor(name);
        g.fillRect(x, y + 1, w, ROW - 2);
        if (s.event.id === selected) {
          g.strokeStyle = '#000';
          g.lineWidth = 2;
          g.strokeRect(x + 1, y + 2, Math.max(1, w - 2), ROW - 4);
          g.lineWidth = 1;
          g.strokeStyle = '#ddd';
        }
        if (w > 30) {
          g.save();
          g.beginPath();
          g.rect(x, y, w, ROW);
          g.clip();
          g.fillStyle = '#111';
          g.fillText(name, x + 3, y + ROW - 5);
          g.restore();
        }
      }
    }
  }

  function showCounts(): void {
    const shown = `${formatDuration(span.start - bounds.start)} – ${formatDuration(span.end - bounds.start)} (${formatDuration(span.end - span.start)} of ${formatDuration(bounds.end - bounds.start)})`;
    replaceChildren(status, h('span', { 'data-role': 'trace-window', 'data-start-ps': span.start, 'data-end-ps': span.end }, shown));
    if (!data) return replaceChildren(hiddenBox);
    hiddenBox.dataset.hidden = String(data.total_hidden);
    hiddenBox.dataset.inWindow = String(data.total_in_window);
    replaceChildren(
      hiddenBox,
      data.total_hidden
        ? `${data.total_in_window.toLocaleString()} events in this window; ${data.total_hidden.toLocaleString()} merged or hidden at this zoom (zoom in to see them).`
        : `${data.total_in_window.toLocaleString()} events in this window, all shown.`,
    );
    hiddenBox.classList.toggle('has-hidden', data.total_hidden > 0);
  }

  async function fetchWindow(): Promise<void> {
    const mine = ++seq;
    viewer.dataset.ready = 'false';
    try {
      const w = await getJson<TraceWindow>(url('window', { start_ps: String(span.start), end_ps: String(span.end), width: String(plotWidth()) }));
      if (mine !== seq) return;
      data = w;
      layout();
      draw();
      showCounts();
      viewer.dataset.ready = 'true';
    } catch (e) {
      if (mine === seq) setError(e);
    }
  }

  function setSpan(next: Span): void {
    if (next.start === span.start && next.end === span.end) return;
    span = next;
    for (const [k, v] of Object.entries(spanToView(span, bounds))) ctx.view.set(k, v);
    viewer.dataset.ready = 'false';
    draw();
    showCounts();
    clearTimeout(timer);
    timer = setTimeout(() => void fetchWindow(), FETCH_DELAY_MS);
  }

  async function select(id: number | null): Promise<void> {
    selected = id;
    draw();
    if (id === null) return replaceChildren(details, h('p', { class: 'muted' }, 'Click a slice to see its details.'));
    details.dataset.loading = 'true';
    try {
      const ev = await getJson<TraceEvent>(url('event', { id: String(id) }));
      if (selected !== id) return;
      showDetails(ev);
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not load the event: ${e instanceof Error ? e.message : String(e)}`));
    } finally {
      delete details.dataset.loading;
    }
  }

  function showDetails(ev: TraceEvent): void {
    const track = rows.find((r) => r.info.id === ev.track)?.info;
    const prop = (key: string, label: string, value: string, extra: Record<string, string | number> = {}) =>
      h('tr', null, h('th', null, label), h('td', { 'data-field': key, ...extra }, value));
    const args = Object.entries(ev.args ?? {});
    details.dataset.eventId = String(ev.id);
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
          prop('track', 'Track', track ? track.name : String(ev.track)),
        ),
      ),
      h('h3', null, 'Arguments'),
      args.length
        ? h(
            'table',
            { class: 'props trace-args', 'data-role': 'trace-args' },
            h('tbody', null, args.map(([k, v]) => h('tr', { 'data-arg': k }, h('th', null, k), h('td', null, typeof v === 'string' ? v : JSON.stringify(v))))),
          )
        : h('p', { class: 'muted', 'data-role': 'trace-no-args' }, 'No arguments.'),
    );
  }

  // ---- interaction ----------------------------------------------------------------------
  const plotX = (clientX: number) => clientX - canvas.getBoundingClientRect().left;

  canvas.addEventListener(
    'wheel',
    (e) => {
      e.preventDefault();
      const scale = new TimeScale(span, width);
      const anchor = scale.toPs(plotX(e.clientX));
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        setSpan(panSpan(span, ((e.deltaX || e.deltaY) / width) * (span.end - span.start), bounds));
      } else {
        setSpan(zoomSpan(span, anchor, Math.pow(1.0015, Math.max(-400, Math.min(400, e.deltaY))), bounds));
      }
    },
    { passive: false },
  );

  let drag: { x: number; span: Span; moved: boolean } | null = null;
  canvas.addEventListener('mousedown', (e) => {
    if (e.button !== 0) return;
    viewer.focus({ preventScroll: true });
    drag = { x: e.clientX, span, moved: false };
  });
  const onMove = (e: MouseEvent) => {
    if (!drag) return;
    const dx = e.clientX - drag.x;
    if (Math.abs(dx) > 3) drag.moved = true;
    if (drag.moved) setSpan(panSpan(drag.span, (-dx / width) * (drag.span.end - drag.span.start), bounds));
  };
  const onUp = (e: MouseEvent) => {
    if (!drag) return;
    const wasClick = !drag.moved;
    drag = null;
    if (wasClick) {
      const rect = canvas.getBoundingClientRect();
      const x = e.clientX - rect.left;
      const y = e.clientY - rect.top;
      const row = rows.find((r) => y >= r.top && y < r.top + r.depths * ROW);
      if (!row) return void select(null);
      const scale = new TimeScale(span, width);
      const hit = sliceAt(row.slices, Math.floor((y - row.top) / ROW), scale.toPs(x), scale.psPerPx * 2);
      void select(hit ? hit.event.id : null);
    }
  };
  const onKey = (e: KeyboardEvent) => {
    if (!viewer.isConnected) return detach();
    const t = e.target as HTMLElement | null;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey || !tracks) return;
    const len = span.end - span.start;
    const mid = (span.start + span.end) / 2;
    switch (e.key.toLowerCase()) {
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
      default:
        return;
    }
    e.preventDefault();
  };
  const onResize = () => {
    if (!viewer.isConnected) return detach();
    if (tracks && plotWidth() !== width) {
      layout();
      draw();
      clearTimeout(timer);
      timer = setTimeout(() => void fetchWindow(), FETCH_DELAY_MS);
    }
  };
  function detach(): void {
    window.removeEventListener('mousemove', onMove);
    window.removeEventListener('mouseup', onUp);
    document.removeEventListener('keydown', onKey);
    window.removeEventListener('resize', onResize);
    clearTimeout(timer);
  }
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  document.addEventListener('keydown', onKey);
  window.addEventListener('resize', onResize);

  // ---- load ------------------------------------------------------------------------------
  void (async () => {
    try {
      tracks = await getJson<TraceTracks>(url('tracks'));
      bounds = { start: tracks.start_ps, end: Math.max(tracks.end_ps, tracks.start_ps + 1) };
      span = spanFromView(ctx.view.get, bounds);
      // Wait until the page is in the document so the canvas has its width.
      await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
      showCounts();
      await fetchWindow();
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
