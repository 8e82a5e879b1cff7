// The trace viewer: a workspace over oxprof's level-of-detail trace API
// (/oxprof/api/trace/*) that fills the window: a toolbar (tools, search, hosts, keys), a
// time ruler that stays put, pinned tracks, the tracks scrolling inside the workspace, and
// a docked, resizable panel (details of the selection, search results). One collapsible
// section per process (and per host when several hosts are shown), one track per thread
// (slices by depth) or counter. Keys: `?` lists them. The view is in the URL.
//
// This file wires the pieces: trace/model.ts (the view model: state, layouts, which window
// to fetch), trace/draw.ts (canvas), trace/track_area.ts (a scrolling track list with its
// sticky canvas), trace/toolbar.ts, trace/search.ts, trace/selection.ts (the panel's
// Details), trace/input.ts (mouse and keys), trace/help.ts, trace/widgets.ts (tooltip,
// resizers, hosts picker), trace/client.ts (requests).
//
// Performance: windows are fetched with half a view of margin on each side (parsed into
// columns in a worker), so panning redraws from memory (one draw per animation frame) and
// fetches only when the view leaves the loaded range or the zoom changes; only rows on
// screen are drawn.

import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import { type ColumnWindow, type EventRef, type Span, spanForMatch, spanFromView, spanToView, zoomSpan } from '../trace';
import { TraceClient } from '../trace/client';
import { HelpSheet } from '../trace/help';
import { Input } from '../trace/input';
import { TraceModel } from '../trace/model';
import { Renderer } from '../trace/render';
import { SearchController } from '../trace/search';
import { Selection } from '../trace/selection';
import { Toolbar } from '../trace/toolbar';
import { TrackArea } from '../trace/track_area';
import { STEP_KEYS, type TraceTool, viewFromUrl, viewToUrl } from '../trace/view';
import { loadWindow, prepareWindowLoader, windowLoaderKind } from '../trace/window_loader';
import { mountHostPicker, resizer, stepSpan, tooltipFor } from '../trace/widgets';

const FETCH_DELAY_MS = 40;
const URL_DELAY_MS = 150;

export function traceViewerPage(ctx: PageContext): HTMLElement {
  const view = viewFromUrl(ctx.view.get);
  const client = new TraceClient(ctx.state.run, ctx.state.host, view.hosts);
  const model = new TraceModel(view);
  prepareWindowLoader();

  // ---- widgets ------------------------------------------------------------------------------
  const area = new TrackArea('main', {
    toggleSection: (pid) => change(() => model.toggleSection(pid)),
    toggleHost: (host) => change(() => model.toggleHost(host)),
    pin: (id) => change(() => model.togglePin(id)),
    hide: (id) => change(() => model.hide(id)),
    unhideSection: (pid) => change(() => model.unhideSection(pid)),
  });
  const pinnedArea = new TrackArea('pinned', {
    toggleSection: () => undefined,
    toggleHost: () => undefined,
    pin: (id) => change(() => model.togglePin(id)),
    hide: (id) => change(() => model.hide(id)),
    unhideSection: () => undefined,
  });
  const areas = [pinnedArea, area];
  const bar = new Toolbar((t) => setTool(t));
  const rulerCanvas = h('canvas', { class: 'trace-ruler', 'data-role': 'trace-ruler', 'aria-hidden': 'true' });
  const rulerBase = h('div', { class: 'trace-ruler-base', 'data-role': 'trace-ruler-base' });
  const rulerRow = h('div', { class: 'trace-ruler-row' }, rulerBase, rulerCanvas);
  const tab = (key: string, label: string, selected: boolean) =>
    h('button', { type: 'button', role: 'tab', class: 'trace-tab', 'data-tab': key, 'aria-selected': String(selected), onclick: () => showTab(key === 'details' ? 'details' : 'results') }, label);
  const detailsTab = tab('details', 'Details', true);
  const resultsTab = tab('results', 'Search results', false);
  const details = h('div', { class: 'trace-details', 'data-role': 'trace-details', role: 'tabpanel' });
  const results = h('div', { class: 'trace-details hidden', 'data-role': 'trace-results', role: 'tabpanel' }, h('p', { class: 'muted' }, 'Search to list matching events.'));
  const panel = h('section', { class: 'trace-panel', 'data-role': 'trace-panel', 'aria-label': 'Selection details' }, h('div', { class: 'trace-tabs', role: 'tablist' }, detailsTab, resultsTab), details, results);
  const separator = (role: string, orientation: string, label: string) => h('div', { class: role === 'label-resizer' ? 'trace-label-handle' : 'trace-panel-handle', 'data-role': role, role: 'separator', 'aria-orientation': orientation, 'aria-label': label, tabindex: 0 });
  const labelHandle = separator('label-resizer', 'vertical', 'Resize the track names');
  const panelHandle = separator('panel-resizer', 'horizontal', 'Resize the details panel');
  const timeline = h('div', { class: 'trace-timeline' }, rulerRow, pinnedArea.scroll, area.scroll, labelHandle);
  const tooltip = h('div', { class: 'trace-tooltip hidden', 'data-role': 'trace-tooltip', role: 'tooltip' });
  const workspace = h(
    'div',
    {
      class: 'trace-viewer',
      'data-chart': 'trace',
      'data-ready': 'false',
      tabindex: 0,
      role: 'application',
      'aria-roledescription': 'trace viewer',
      'aria-label': 'Trace: W/S zoom, A/D pan, 1-4 tools, f fit, 0 reset, m mark, [ ] previous/next slice, ? all keys',
    },
    timeline,
    panelHandle,
    panel,
    tooltip,
  );
  const help = new HelpSheet();
  bar.helpButton.addEventListener('click', () => help.toggle());
  const page = h('div', { class: 'page trace', 'data-page': 'trace_viewer', 'data-fill': 'viewport' }, bar.element, workspace, help.element);
  resizer(labelHandle, 'x', 'oxprof.trace.labels', 240, 120, 720, (px) => workspace.style.setProperty('--trace-label-w', `${px}px`), () => onResize());
  const panelInitial = Math.round(Math.min(260, (window.innerHeight || 800) * 0.28));
  resizer(panelHandle, 'y', 'oxprof.trace.panel', panelInitial, 80, 2000, (px) => workspace.style.setProperty('--trace-panel-h', `${px}px`), () => onResize(), true);

  const renderer = new Renderer(model, view, areas, { canvas: rulerCanvas, base: rulerBase });
  renderer.changed = () => requestDraw();
  let inFlight = false;
  let fetchTimer: ReturnType<typeof setTimeout> | undefined;
  let urlTimer: ReturnType<typeof setTimeout> | undefined;
  let drawPending = false;
  let pending = 0;
  let reveal: { id: number; track: number } | null = null;

  const plotWidth = () => Math.max(100, Math.floor(area.plot.clientWidth || 900));
  const saveView = () => {
    for (const [k, v] of Object.entries(viewToUrl(view))) ctx.view.set(k, v);
  };
  const setError = (e: unknown) => {
    workspace.dataset.ready = 'true';
    replaceChildren(bar.status, h('span', { class: 'error', 'data-role': 'trace-error', role: 'alert' }, `Could not load the trace: ${e instanceof Error ? e.message : String(e)}`));
  };
  /**
   * `data-view-ready`: the view is drawn from a window that covers it at its zoom (what a
   * user waits for); `data-ready` (tests): also no request pending and the URL written.
   */
  function updateReady(): void {
    const drawn = !!model.tracks && !inFlight && !model.needsFetch(plotWidth());
    workspace.dataset.viewReady = String(drawn);
    workspace.dataset.ready = String(drawn && pending === 0 && urlTimer === undefined);
  }
  async function loading<T>(work: Promise<T>): Promise<T> {
    pending++;
    updateReady();
    try {
      return await work;
    } finally {
      pending--;
      updateReady();
    }
  }
  const host = { save: saveView, redraw: () => requestDraw(), loading, jump };
  const selection = new Selection(model, view, client, ctx, details, { ...host, showDetails: () => showTab('details') });
  const search = new SearchController(model, view, client, bar, results, resultsTab, host);

  // ---- layout and drawing -------------------------------------------------------------------
  function relayout(): void {
    if (!model.tracks) return;
    model.relayout();
    const width = plotWidth();
    pinnedArea.scroll.classList.toggle('hidden', model.pinned.rows.length === 0);
    pinnedArea.setLayout(model.pinned, width, model.pinned.height);
    area.setLayout(model.main, width, area.scroll.clientHeight);
    rulerRow.style.paddingRight = `${Math.max(0, area.scroll.offsetWidth - area.scroll.clientWidth)}px`;
    if (reveal) revealEvent();
  }

  /** Scrolls to the event to reveal (a jump), once its row is laid out. */
  function revealEvent(): void {
    const r = reveal;
    const at = r ? model.eventY(r) : null;
    if (!at) return;
    (at.area === 'pinned' ? pinnedArea : area).reveal(at.y);
    if (model.data && model.loaded && !model.needsFetch(plotWidth())) reveal = null;
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
    if (model.tracks) renderer.draw(plotWidth(), input.drag);
  }

  // ---- status --------------------------------------------------------------------------------
  const showCounts = () => bar.showWindow(model, plotWidth());
  const showTiming = () => bar.showTiming(view.timing, model.bounds.start, () => setTiming(null));

  function setTool(t: TraceTool): void {
    view.tool = t;
    bar.showTool(t);
    for (const a of areas) a.canvas.style.cursor = t === 'pan' ? 'grab' : t === 'select' ? 'default' : 'crosshair';
    workspace.dataset.tool = t;
    saveView();
  }

  function setTiming(t: Span | null): void {
    view.timing = t;
    saveView();
    showTiming();
    requestDraw();
  }

  function showTab(which: 'details' | 'results'): void {
    detailsTab.setAttribute('aria-selected', String(which === 'details'));
    resultsTab.setAttribute('aria-selected', String(which === 'results'));
    details.classList.toggle('hidden', which !== 'details');
    results.classList.toggle('hidden', which !== 'results');
  }

  // ---- windows -------------------------------------------------------------------------------
  /**
   * Fetches soon: at once when no fetch started in the last FETCH_DELAY_MS (a single zoom
   * step answers without waiting), else when that time is up — throttled, not debounced,
   * so a long pan keeps loading as it goes.
   */
  let lastFetch = -Infinity;
  function scheduleFetch(delay = FETCH_DELAY_MS): void {
    if (inFlight || fetchTimer !== undefined) return;
    const wait = Math.max(0, Math.min(delay, lastFetch + FETCH_DELAY_MS - performance.now()));
    if (wait === 0) return void fetchWindow();
    fetchTimer = setTimeout(() => {
      fetchTimer = undefined;
      void fetchWindow();
    }, wait);
  }

  async function fetchWindow(): Promise<void> {
    if (inFlight || !model.needsFetch(plotWidth())) return updateReady();
    const want = model.wanted(plotWidth());
    inFlight = true;
    lastFetch = performance.now();
    updateReady();
    try {
      const empty: ColumnWindow = { start_ps: want.range.start, end_ps: want.range.end, resolution_ps: 1, names: [], tracks: [], total_in_window: 0, total_returned: 0, total_hidden: 0 };
      const w = want.tracksKey === 'none' ? empty : await loadWindow(client.windowUrl(want.range.start, want.range.end, want.width, want.tracksKey || undefined));
      model.setWindow(w, want);
      workspace.dataset.windowLoader = windowLoaderKind();
      relayout();
      showCounts();
      draw();
    } catch (e) {
      setError(e);
      inFlight = false;
      return;
    }
    inFlight = false;
    if (model.needsFetch(plotWidth())) scheduleFetch(0);
    updateReady();
  }

  function saveSpanSoon(): void {
    if (urlTimer !== undefined) return;
    urlTimer = setTimeout(() => {
      urlTimer = undefined;
      for (const [k, v] of Object.entries(spanToView(model.span, model.bounds))) ctx.view.set(k, v);
      updateReady();
    }, URL_DELAY_MS);
  }

  function setSpan(next: Span): void {
    if (next.start === model.span.start && next.end === model.span.end) return;
    model.span = next;
    saveSpanSoon();
    showCounts();
    requestDraw();
    if (model.needsFetch(plotWidth())) scheduleFetch();
    updateReady();
  }

  /** A change of folded / hidden / pinned tracks: URL, layout, drawing, maybe a fetch. */
  function change(f: () => void): void {
    f();
    saveView();
    relayout();
    draw();
    if (model.needsFetch(plotWidth())) scheduleFetch(0);
    updateReady();
  }

  /** Selects an event anywhere: unfolds its track, moves the view there (also vertically). */
  async function jump(e: EventRef): Promise<void> {
    if (model.bringIntoLayout(e.track)) change(() => undefined);
    reveal = { id: e.id, track: e.track };
    setSpan(spanForMatch(e, model.span, model.bounds));
    relayout();
    requestDraw();
    await selection.select(e.id);
  }

  // ---- mouse and keys ------------------------------------------------------------------------
  const input = new Input(model, view, {
    plotWidth,
    setSpan,
    setTiming,
    setTool,
    select: (id) => void selection.select(id),
    selectRange: (r) => void selection.selectRange(r),
    redraw: requestDraw,
    hover: (hit, x, y, ps) => {
      renderer.hover = hit?.id ?? null;
      renderer.hoverPs = ps;
      tooltipFor(tooltip, hit ? { id: hit.id, row: hit.row, i: hit.i, names: model.data?.names ?? [], x, y } : null, selection.cache, client, () => renderer.hover);
      requestDraw();
    },
    fit: () => {
      const s = model.selectionSpan();
      if (!s) return;
      const pad = Math.max((s.end - s.start) * 0.05, 500);
      setSpan(zoomSpan({ start: s.start - pad, end: s.end + pad }, (s.start + s.end) / 2, 1, model.bounds));
    },
    mark: () => {
      const s = model.selectionSpan();
      if (!s || (view.timing && view.timing.start === s.start && view.timing.end === s.end)) return setTiming(null);
      setTiming({ start: Math.round(s.start), end: Math.round(s.end) });
    },
    neighbour: (step) => void neighbour(step),
    help: () => help.open(),
    focusSearch: () => {
      bar.searchInput.focus();
      bar.searchInput.select();
    },
    focus: () => workspace.focus({ preventScroll: true }),
    busy: () => {
      if (!workspace.isConnected) detach();
      return help.isOpen || !workspace.isConnected;
    },
  }, areas);

  async function neighbour(step: 1 | -1): Promise<void> {
    const e = model.event;
    if (!e || view.selected !== e.id) return;
    const next = await loading(model.neighbour(e, step, (start, end) => client.window(start, end, 2000, String(e.track), 50_000)));
    if (!next || view.selected !== e.id) return;
    reveal = { id: next.id, track: next.track };
    if (next.ts_ps < model.span.start || next.ts_ps + next.dur_ps > model.span.end) setSpan(spanForMatch(next, model.span, model.bounds));
    revealEvent();
    await selection.select(next.id);
  }

  const onResize = () => {
    if (!workspace.isConnected) return detach();
    if (!model.tracks) return;
    relayout();
    draw();
    if (model.needsFetch(plotWidth())) scheduleFetch();
  };
  const resizeObserver = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => onResize());
  resizeObserver?.observe(workspace);
  window.addEventListener('resize', onResize);
  for (const a of areas) a.scroll.addEventListener('scroll', () => requestDraw(), { passive: true });
  function detach(): void {
    input.detach();
    search.stop();
    window.removeEventListener('resize', onResize);
    resizeObserver?.disconnect();
    renderer.stop();
    clearTimeout(fetchTimer);
    clearTimeout(urlTimer);
  }

  // ---- hosts, steps -------------------------------------------------------------------------
  mountHostPicker(ctx, view, bar.hostsHolder, () => {
    detach();
    page.replaceWith(traceViewerPage(ctx));
  });

  /** Opens a step (the overview's and pod viewer's links): the view and a timing mark on it. */
  async function openStep(step: { number?: string; name?: string }): Promise<void> {
    const s = await stepSpan(ctx, client, model, step);
    if (s instanceof Error) return replaceChildren(details, h('p', { class: 'error', 'data-role': 'step-error' }, s.message));
    view.timing = { start: s.start_ps, end: s.end_ps };
    saveView();
    workspace.dataset.step = String(s.step);
  }

  // ---- load ----------------------------------------------------------------------------------
  setTool(view.tool);
  void (async () => {
    try {
      model.setTracks(await client.tracks());
      model.span = spanFromView(ctx.view.get, model.bounds);
      const step = { number: ctx.view.get(STEP_KEYS.step) || undefined, name: ctx.view.get(STEP_KEYS.stepName) || undefined };
      if (step.number || step.name) await openStep(step);
      // Wait until the page is in the document so the canvas has its width.
      await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
      relayout();
      showCounts();
      showTiming();
      const restore: Promise<void>[] = [fetchWindow()];
      if (view.range) restore.push(selection.selectRange(view.range));
      else if (view.selected !== null) {
        reveal = { id: view.selected, track: Math.floor(view.selected / 2 ** 32) };
        restore.push(selection.select(view.selected));
      }
      if (view.search) restore.push(search.run(view.search, view.searchArgs));
      await Promise.all(restore);
    } catch (e) {
      setError(e);
    }
  })();
  return page;
}
