// The trace viewer: a workspace over oxprof's level-of-detail trace API
// (/oxprof/api/trace/*) that fills the window: a toolbar (tools, search, track filter,
// hosts, keys), an overview strip of the whole trace, a time ruler with named flags that
// stays put, pinned tracks, the tracks scrolling inside the workspace, and a docked panel
// (details of the selection, search results, flags) that opens when there is something to
// show. One collapsible section per process (and per host when several hosts are shown;
// a collapsed one draws its activity), one track per thread (slices by depth) or counter.
// Keys: `?` lists them. The view is in the URL.
//
// This file wires the pieces: trace/model.ts (the view model: state, layouts, which window
// to fetch), trace/draw.ts (canvas), trace/track_area.ts (a scrolling track list with its
// sticky canvas), trace/toolbar.ts, trace/overview.ts, trace/panel.ts, trace/flags.ts,
// trace/search.ts, trace/selection.ts (the panel's Details), trace/input.ts and
// trace/navigation.ts (mouse and keys), trace/help.ts, trace/widgets.ts (tooltip,
// resizers, hosts picker), trace/client.ts (requests).
//
// Performance: windows are fetched with half a view of margin on each side (parsed into
// columns in a worker), so panning redraws from memory (one draw per animation frame) and
// fetches only when the view leaves the loaded range or the zoom changes; only rows on
// screen are drawn.

import { h, replaceChildren } from '../dom';
import { progressLine } from '../progress';
import type { PageContext } from '../page';
import { type ColumnWindow, type EventRef, type Span, collapsedTrackIds, spanForMatch, spanFromView, spanToView, zoomSpan } from '../trace';
import { TraceClient } from '../trace/client';
import { FlagsController } from '../trace/flags';
import { HelpSheet } from '../trace/help';
import { DEBUG_TRACK_ID, debugDetails, debugTrack } from '../trace/debug_track';
import { runQuery } from '../sql';
import { Input } from '../trace/input';
import { type Loaded, TraceModel } from '../trace/model';
import { Overview, activityDensity } from '../trace/overview';
import { DockedPanel } from '../trace/panel';
import { Renderer } from '../trace/render';
import { resolveReveal, revealSpan } from '../trace/reveal';
import { SearchController } from '../trace/search';
import { SqlBridge } from '../trace/sql_bridge';
import { Selection } from '../trace/selection';
import { Toolbar } from '../trace/toolbar';
import { TrackArea } from '../trace/track_area';
import { STEP_KEYS, type TraceTool, viewFromUrl, viewToUrl } from '../trace/view';
import { loadWindow, prepareWindowLoader, windowLoaderKind } from '../trace/window_loader';
import { mountHostPicker, resizer, stepSpan, tooltipFor } from '../trace/widgets';
import { REVEAL_KEYS, type RevealTarget, revealFromView } from '../timeline';

const FETCH_DELAY_MS = 40;
const URL_DELAY_MS = 150;
/** Columns of the overview strip's density. */
const OVERVIEW_BINS = 600;

export function traceViewerPage(ctx: PageContext): HTMLElement {
  const view = viewFromUrl(ctx.view.get);
  // The page's host `ALL_HOSTS` (a link from an ALL_HOSTS page, or typed) means every host
  // merged, as `hosts=ALL_HOSTS` does: not the first host alone.
  if (!view.hosts.length && ctx.state.host === 'ALL_HOSTS') view.hosts = ['ALL_HOSTS'];
  const client = new TraceClient(ctx.state.run, ctx.state.host, view.hosts);
  const model = new TraceModel(view);
  prepareWindowLoader();

  // ---- widgets ------------------------------------------------------------------------------
  /** Track ids in the order the name column lists them (shift+click picks a run of them). */
  const labelOrder = () => [...model.pinned.rows, ...model.main.rows].map((r) => r.info.id);
  const picking = {
    pick: (id: number, how: 'only' | 'toggle' | 'range') => {
      if (id === DEBUG_TRACK_ID) return;
      model.pick(id, how, labelOrder().filter((x) => x !== DEBUG_TRACK_ID));
      relayout();
      showPicks();
    },
    picked: (id: number) => model.pickedTracks.has(id),
    processOf: (id: number) => model.processLabel(id),
    fold: (id: number) => change(() => model.toggleFold(id)),
  };
  const area = new TrackArea('main', {
    toggleSection: (pid) => change(() => model.toggleSection(pid)),
    toggleHost: (host) => change(() => model.toggleHost(host)),
    pin: (id) => change(() => model.togglePin(id)),
    hide: (id) => change(() => model.hide(id)),
    unhideSection: (pid) => change(() => model.unhideSection(pid)),
    ...picking,
  });
  const pinnedArea = new TrackArea('pinned', {
    toggleSection: () => undefined,
    toggleHost: () => undefined,
    // The debug track's "Unpin" removes it.
    pin: (id) =>
      change(() => {
        if (id !== DEBUG_TRACK_ID) return model.togglePin(id);
        model.debug = null;
        view.debugSql = '';
      }),
    hide: (id) => change(() => model.hide(id)),
    unhideSection: () => undefined,
    ...picking,
  });
  const areas = [pinnedArea, area];
  const rulerCanvas = h('canvas', { class: 'trace-ruler', 'data-role': 'trace-ruler', 'aria-hidden': 'true', title: 'Click to drop a named flag here' });
  const rulerBase = h('div', { class: 'trace-ruler-base', 'data-role': 'trace-ruler-base' });
  const rulerRow = h('div', { class: 'trace-ruler-row' }, rulerBase, rulerCanvas);
  const overview = new Overview({ span: () => model.span, bounds: () => model.bounds, setSpan: (s) => setSpan(s) }, () => requestDraw());
  const foldAll = h('button', { type: 'button', class: 'link-button trace-fold-all', 'data-role': 'fold-all', onclick: () => change(() => model.foldAll(!allFolded())) });
  const allFolded = () => [...model.main.rows, ...model.pinned.rows].every((r) => r.folded || r.fullDepths <= 1 || r.info.kind !== 'thread');
  const showFoldAll = () => {
    const folded = allFolded();
    foldAll.textContent = folded ? 'Unfold all' : 'Fold all';
    foldAll.title = folded ? 'Show every level of nested slices on every track' : 'Fold every track to its outermost slices: more tracks on the screen';
  };
  overview.label.prepend(foldAll);
  const labelHandle = h('div', { class: 'trace-label-handle', 'data-role': 'label-resizer', role: 'separator', 'aria-orientation': 'vertical', 'aria-label': 'Resize the track names', tabindex: 0 });
  const timeline = h('div', { class: 'trace-timeline' }, overview.element, rulerRow, pinnedArea.scroll, area.scroll, labelHandle);
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
      'aria-label': 'Trace: wheel scrolls the tracks, ctrl+wheel zooms, shift+wheel pans; W/S zoom and A/D pan while held; 1-4 tools, f fit, 0 reset, m mark, [ ] previous/next slice, ? all keys',
    },
    timeline,
  );
  const panel = new DockedPanel(workspace, () => onResize());
  workspace.append(panel.handle, panel.element, tooltip);
  const bar = new Toolbar((t) => setTool(t), [panel.toggleButton]);
  const details = panel.details;
  const help = new HelpSheet();
  bar.helpButton.addEventListener('click', () => help.toggle());
  const page = h('div', { class: 'page trace', 'data-page': 'trace_viewer', 'data-fill': 'viewport' }, bar.element, workspace, help.element);
  resizer(labelHandle, 'x', 'oxprof.trace.labels', 240, 120, 720, (px) => workspace.style.setProperty('--trace-label-w', `${px}px`), () => onResize());

  const renderer = new Renderer(model, view, areas, { canvas: rulerCanvas, base: rulerBase });
  renderer.changed = () => requestDraw();
  let inFlight = false;
  let fetchTimer: ReturnType<typeof setTimeout> | undefined;
  let urlTimer: ReturnType<typeof setTimeout> | undefined;
  let drawPending = false;
  let pending = 0;
  let reveal: { id: number; track: number } | null = null;

  /**
   * The plot's width (px), measured once per layout change (a resize observed, the panel or
   * the name column resized): reading clientWidth forces a layout, which costs tens of ms
   * with a 2,000-row area table in the panel, and the readiness check asks at every request.
   */
  let plotPx = 0;
  const plotWidth = () => {
    if (!plotPx) plotPx = Math.floor(area.plot.clientWidth);
    return plotPx ? Math.max(100, plotPx) : 900;
  };
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
  const sqlBridge = new SqlBridge(ctx.state.run, () => model.tracks);
  const selection = new Selection(model, view, client, ctx, details, {
    ...host,
    showDetails: () => panel.open('details'),
    // Nothing selected: the panel closes (unless it shows something else).
    cleared: () => {
      if (panel.tab === 'details') panel.close();
    },
    // A debug track's row: its columns (and the way to its slice).
    debugRow: (id) => (model.debug ? debugDetails(model.debug, id, (slice, host) => void openSliceFromSql(slice, host)) : null),
  }, sqlBridge);
  const search = new SearchController(model, view, client, bar, panel.results, (text) => panel.label('results', text), host);
  bar.searchStatus.addEventListener('click', () => panel.open('results'));
  bar.searchStatus.title = 'Show the results in the panel';

  // ---- layout and drawing -------------------------------------------------------------------
  function relayout(): void {
    if (!model.tracks) return;
    model.relayout();
    const width = plotWidth();
    pinnedArea.scroll.classList.toggle('hidden', model.pinned.rows.length === 0);
    pinnedArea.setLayout(model.pinned, width, model.pinned.height);
    area.setLayout(model.main, width, area.scroll.clientHeight);
    const gutter = `${Math.max(0, area.scroll.offsetWidth - area.scroll.clientWidth)}px`;
    rulerRow.style.paddingRight = gutter;
    overview.element.style.paddingRight = gutter;
    workspace.dataset.tracksShown = String(model.main.rows.length + model.pinned.rows.length);
    showFoldAll();
    if (reveal) revealEvent();
  }

  /** Scrolls to the event to reveal (a jump), once its row is laid out (unfolding its track when it is nested). */
  function revealEvent(): void {
    const r = reveal;
    if (r && model.nestedInFold(r)) {
      model.toggleFold(r.track);
      saveView();
      return relayout();
    }
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

  // ---- flags (trace/flags.ts) ----------------------------------------------------------------
  const flags = new FlagsController(view, panel, rulerCanvas, {
    span: () => model.span,
    bounds: () => model.bounds,
    active: () => !!model.tracks,
    plotWidth,
    setSpan: (sp) => setSpan(sp),
    save: saveView,
    redraw: () => requestDraw(),
  });
  const showFlags = () => flags.show();

  // ---- picked tracks ------------------------------------------------------------------------
  function showPicks(): void {
    const ids = () => [...model.pickedTracks];
    bar.showPicks(model.pickedTracks.size, {
      pin: () => change(() => model.pinAll(labelOrder().filter((id) => model.pickedTracks.has(id)))),
      unpin: () => change(() => model.unpinAll(ids())),
      hide: () => change(() => model.hideAll(ids())),
      clear: () => {
        model.pickedTracks.clear();
        relayout();
        showPicks();
      },
    });
  }

  // ---- track filter -------------------------------------------------------------------------
  bar.trackFilter.value = view.trackFilter;
  let filterTimer: ReturnType<typeof setTimeout> | undefined;
  bar.trackFilter.addEventListener('input', () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => change(() => (view.trackFilter = bar.trackFilter.value)), 120);
  });

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
      void loading(fetchSummaries(want)).catch(() => undefined);
    } catch (e) {
      setError(e);
      inFlight = false;
      return;
    }
    inFlight = false;
    if (model.needsFetch(plotWidth())) scheduleFetch(0);
    updateReady();
  }

  /**
   * The activity of the collapsed sections over a fetched range (their headers draw it):
   * one coarse window of their threads (a quarter of the columns), when the range or the
   * sections changed.
   */
  let summaryKey = '';
  async function fetchSummaries(want: Loaded): Promise<void> {
    if (!model.tracks) return;
    const groups = collapsedTrackIds(model.tracks, model.layoutOptions());
    const ids = [...groups.values()].flat();
    const key = `${want.range.start}_${want.range.end}_${want.width}_${ids.join(',')}`;
    if (key === summaryKey) return;
    summaryKey = key;
    if (!ids.length) {
      model.sectionDensity.clear();
      return;
    }
    const bins = Math.max(16, Math.round(want.width / 4));
    const w = await loadWindow(`${client.windowUrl(want.range.start, want.range.end, bins, ids.join(','))}&exact_limit=100`);
    if (summaryKey !== key) return;
    model.sectionDensity.clear();
    for (const [pid, tracks] of groups) model.sectionDensity.set(pid, { range: want.range, bins: activityDensity(w, want.range, bins, tracks.length, new Set(tracks)) });
    relayout();
    requestDraw();
  }

  /** The overview strip's density: one coarse window of the whole trace. */
  async function fetchOverview(): Promise<void> {
    const b = model.bounds;
    const w = await loadWindow(`${client.windowUrl(b.start, b.end, OVERVIEW_BINS)}&exact_limit=100`);
    overview.density = activityDensity(w, b, OVERVIEW_BINS);
    requestDraw();
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
    // The panel first: opening it shrinks the tracks, and the jump scrolls within what is left.
    panel.open('details');
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
      tooltipFor(tooltip, hit ? { id: hit.id, row: hit.row, i: hit.i, names: model.names, x, y } : null, selection.cache, client, () => renderer.hover);
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
    scrollTracks: (dy) => {
      const el = area.scroll;
      el.scrollTop = dy === Infinity ? el.scrollHeight : dy === -Infinity ? 0 : el.scrollTop + dy;
    },
    pageHeight: () => area.scroll.clientHeight || 400,
    clearPicks: () => {
      if (!model.pickedTracks.size) return false;
      model.pickedTracks.clear();
      relayout();
      showPicks();
      return true;
    },
  }, areas);
  input.follow(rulerCanvas);
  input.follow(overview.canvas);
  renderer.overview = overview;

  async function neighbour(step: 1 | -1): Promise<void> {
    const e = model.event;
    if (!e || view.selected !== e.id) return;
    const next = await loading(model.neighbour(e, step, (start, end) => client.window(start, end, 2000, String(e.track), 50_000)));
    if (!next || view.selected !== e.id) return;
    panel.open('details');
    reveal = { id: next.id, track: next.track };
    if (next.ts_ps < model.span.start || next.ts_ps + next.dur_ps > model.span.end) setSpan(spanForMatch(next, model.span, model.bounds));
    revealEvent();
    await selection.select(next.id);
  }

  const onResize = () => {
    plotPx = 0;
    if (!workspace.isConnected) return detach();
    if (!model.tracks) return;
    relayout();
    draw();
    if (model.needsFetch(plotWidth())) scheduleFetch();
  };
  const resizeObserver = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => onResize());
  resizeObserver?.observe(workspace);
  // The plot alone changes width when its vertical scrollbar comes or goes.
  resizeObserver?.observe(area.plot);
  window.addEventListener('resize', onResize);
  for (const a of areas) a.scroll.addEventListener('scroll', () => requestDraw(), { passive: true });
  function detach(): void {
    input.detach();
    search.stop();
    window.removeEventListener('resize', onResize);
    resizeObserver?.disconnect();
    renderer.stop();
    overview.detach();
    clearTimeout(fetchTimer);
    clearTimeout(urlTimer);
    clearTimeout(filterTimer);
  }

  // ---- hosts, steps -------------------------------------------------------------------------
  mountHostPicker(ctx, view, bar.hostsHolder, () => {
    detach();
    page.replaceWith(traceViewerPage(ctx));
  });

  /** Opens a step (the overview's and pod viewer's links): the view and a timing mark on it. */
  async function openStep(step: { number?: string; name?: string }): Promise<void> {
    const s = await stepSpan(ctx, client, model, step);
    if (s instanceof Error) {
      panel.open('details');
      return replaceChildren(details, h('p', { class: 'error', 'data-role': 'step-error' }, s.message));
    }
    view.timing = { start: s.start_ps, end: s.end_ps };
    saveView();
    workspace.dataset.step = String(s.step);
  }

  /**
   * Opens the slice a "Show in timeline" link names: zoomed to it, selected, every slice
   * of its name highlighted by the search; the link's keys give way to the view's.
   */
  async function openReveal(target: RevealTarget): Promise<void> {
    for (const k of Object.values(REVEAL_KEYS)) ctx.view.set(k, null);
    const found = await loading(resolveReveal(target, model, client)).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))));
    if (found instanceof Error) {
      panel.open('details');
      workspace.dataset.reveal = 'missing';
      return replaceChildren(details, h('p', { class: 'error', 'data-role': 'reveal-error' }, found.message));
    }
    workspace.dataset.reveal = String(found.id);
    panel.open('details');
    if (model.bringIntoLayout(found.track)) change(() => undefined);
    reveal = { id: found.id, track: found.track };
    setSpan(revealSpan(found, model.bounds));
    bar.searchInput.value = found.name;
    await Promise.all([search.run(found.name, false), selection.select(found.id)]);
  }

  /** An SQL slice (a debug row's `slice_id`) on this timeline. */
  async function openSliceFromSql(slice: number, sliceHost: string): Promise<void> {
    if (sliceHost && !client.multiHost && sliceHost !== client.host) {
      panel.open('details');
      return replaceChildren(details, h('p', { class: 'error' }, `That slice is on host ${sliceHost}: open its timeline from the SQL page.`));
    }
    await openReveal({ slice });
  }

  /** The debug track of `debug_sql`: the query's rows pinned at the top. */
  async function loadDebugTrack(): Promise<void> {
    if (!view.debugSql) return;
    try {
      const answer = await runQuery(ctx.state.run, view.debugSql, 10_000);
      const d = debugTrack(view.debugSql, answer);
      if (d instanceof Error) throw d;
      model.debug = d;
      workspace.dataset.debugRows = String(d.slices.count);
      relayout();
      requestDraw();
    } catch (e) {
      panel.open('details');
      replaceChildren(details, h('p', { class: 'error', 'data-role': 'debug-error' }, `The debug track's query failed: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  // ---- load ----------------------------------------------------------------------------------
  setTool(view.tool);
  void (async () => {
    try {
      // The first load of a large trace takes seconds: say what the server is reading.
      if (ctx.api.progress) replaceChildren(bar.status, h('span', { class: 'spinner' }), ' Loading the trace… ', progressLine(ctx.api.progress));
      model.setTracks(await client.tracks());
      model.span = spanFromView(ctx.view.get, model.bounds);
      const step = { number: ctx.view.get(STEP_KEYS.step) || undefined, name: ctx.view.get(STEP_KEYS.stepName) || undefined };
      if (step.number || step.name) await openStep(step);
      // Wait until the page is in the document so the canvas has its width.
      await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
      relayout();
      showCounts();
      showTiming();
      showFlags();
      const restore: Promise<void>[] = [fetchWindow(), loading(fetchOverview()).catch(() => undefined), loading(loadDebugTrack())];
      if (view.range) restore.push(selection.selectRange(view.range));
      else if (view.selected !== null) {
        reveal = { id: view.selected, track: Math.floor(view.selected / 2 ** 32) };
        restore.push(selection.select(view.selected));
      }
      const target = revealFromView(ctx.view.get);
      if (target) restore.push(openReveal(target));
      else if (view.search) restore.push(search.run(view.search, view.searchArgs));
      await Promise.all(restore);
    } catch (e) {
      setError(e);
    }
  })();
  return page;
}
