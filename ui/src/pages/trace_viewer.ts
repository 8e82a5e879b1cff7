// The trace viewer: a workspace over oxprof's level-of-detail trace API
// (/oxprof/api/trace/*) that fills the window: a toolbar (tools, search, hosts, help), a
// time ruler that stays put, pinned tracks, the tracks scrolling inside the workspace, and
// a docked, resizable panel (details of the selection, search results). One collapsible
// section per process (and per host when several hosts are shown), one track per thread
// (slices by depth) or counter. Keys: `?` lists them. The view is in the URL.
//
// The pieces: trace/model.ts (state, layouts, which window to fetch), trace/draw.ts (canvas),
// trace/track_area.ts (a scrolling track list with its sticky canvas), trace/details.ts (the
// panel's contents), trace/help.ts, trace/client.ts (requests).
//
// Performance: windows are fetched with half a view of margin on each side (parsed into
// columns in a worker), so panning redraws from memory (one draw per animation frame) and
// fetches only when the view leaves the loaded range or the zoom changes; only rows on
// screen are drawn.

import { formatCount as count, formatTime, ruler as rulerOf } from '../format';
import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import {
  type ColumnWindow,
  type EventRef,
  ROW,
  type Span,
  TimeScale,
  type TraceEvent,
  panSpan,
  rowAt,
  sliceAt,
  spanFromView,
  spanForMatch,
  spanToView,
  stepMatch,
  tracksInBand,
  zoomSpan,
} from '../trace';
import { TraceClient } from '../trace/client';
import { aggregatePanel, eventPanel, searchList } from '../trace/details';
import { Painter, drawRuler, readTheme, sizeCanvas } from '../trace/draw';
import { HelpSheet } from '../trace/help';
import { TraceModel } from '../trace/model';
import { TrackArea } from '../trace/track_area';
import { STEP_KEYS, type TraceTool, TOOLS, viewFromUrl, viewToUrl } from '../trace/view';
import { loadWindow, prepareWindowLoader, windowLoaderKind } from '../trace/window_loader';
import { hostPicker, keyOf, linksOf, resizer, tooltipFor } from '../trace/widgets';

const FETCH_DELAY_MS = 40;
const SEARCH_DELAY_MS = 250;
const URL_DELAY_MS = 150;
const SEARCH_LIMIT = 1000;
const TOOL_LABELS: Record<TraceTool, string> = { select: 'Select', pan: 'Pan', zoom: 'Zoom', timing: 'Timing' };
const TOOL_HELP: Record<TraceTool, string> = {
  select: 'Select (1): click a slice for its details; drag to select many (totals with self time)',
  pan: 'Pan (2): drag to pan; click a slice for its details',
  zoom: 'Zoom (3): drag an interval to zoom to it; click to zoom in (shift: out)',
  timing: 'Timing (4): drag to mark an interval and measure it',
};

type Drag = { area: TrackArea; x0: number; y0: number; x: number; y: number; span: Span; moved: boolean };

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
  const rulerCanvas = h('canvas', { class: 'trace-ruler', 'data-role': 'trace-ruler', 'aria-hidden': 'true' });
  const rulerBase = h('div', { class: 'trace-ruler-base', 'data-role': 'trace-ruler-base' });
  const rulerRow = h('div', { class: 'trace-ruler-row' }, rulerBase, rulerCanvas);
  const status = h('div', { class: 'trace-status', 'data-role': 'trace-status' });
  const hiddenBox = h('div', { class: 'trace-hidden', 'data-role': 'trace-hidden' });
  const toolButtons = TOOLS.map((t, i) =>
    h('button', { type: 'button', class: 'trace-tool', 'data-tool': t, title: TOOL_HELP[t], onclick: () => setTool(t) }, h('kbd', null, String(i + 1)), ` ${TOOL_LABELS[t]}`),
  );
  const activeTool = h('span', { class: 'trace-active-tool muted', 'data-role': 'trace-help', 'aria-live': 'polite' });
  const timingBox = h('span', { class: 'trace-timing', 'data-role': 'trace-timing' });
  const searchInput = h('input', {
    type: 'search',
    placeholder: 'Search events (any part of the name)',
    'data-role': 'trace-search',
    'aria-label': 'Search events by name (substring, any case)',
    class: 'trace-search',
  });
  const argsBox = h('input', { type: 'checkbox', 'data-role': 'search-args' });
  const searchStatus = h('span', { class: 'muted trace-search-status', 'data-role': 'search-status', 'aria-live': 'polite' });
  const prevButton = h('button', { type: 'button', class: 'button', 'data-role': 'search-prev', title: 'Previous match (shift+Enter)', 'aria-label': 'Previous match', onclick: () => void stepSearch(-1) }, '◀');
  const nextButton = h('button', { type: 'button', class: 'button', 'data-role': 'search-next', title: 'Next match (Enter)', 'aria-label': 'Next match', onclick: () => void stepSearch(1) }, '▶');
  const help = new HelpSheet();
  const helpButton = h('button', { type: 'button', class: 'button', 'data-role': 'trace-help-button', title: 'Keys (?)', onclick: () => help.toggle() }, '? Keys');
  const hostsHolder = h('span', { class: 'trace-hosts' });
  const toolbar = h(
    'div',
    { class: 'trace-toolbar', 'data-role': 'trace-toolbar', role: 'toolbar', 'aria-label': 'Trace tools' },
    h('span', { class: 'trace-tools', role: 'group', 'aria-label': 'Mouse tool' }, toolButtons),
    activeTool,
    h('span', { class: 'trace-omnibox' }, searchInput, h('label', { class: 'trace-args', title: 'Search argument values too (long names, HLO ops, shapes…)' }, argsBox, ' args'), prevButton, nextButton, searchStatus),
    hostsHolder,
    h('span', { class: 'spacer' }),
    timingBox,
    helpButton,
  );
  const detailsTab = h('button', { type: 'button', role: 'tab', class: 'trace-tab', 'data-tab': 'details', 'aria-selected': 'true', onclick: () => showTab('details') }, 'Details');
  const resultsTab = h('button', { type: 'button', role: 'tab', class: 'trace-tab', 'data-tab': 'results', 'aria-selected': 'false', onclick: () => showTab('results') }, 'Search results');
  const details = h('div', { class: 'trace-details', 'data-role': 'trace-details', role: 'tabpanel' }, h('p', { class: 'muted' }, 'Click a slice to see its details; drag to select many.'));
  const results = h('div', { class: 'trace-details hidden', 'data-role': 'trace-results', role: 'tabpanel' }, h('p', { class: 'muted' }, 'Search to list matching events.'));
  const panel = h('section', { class: 'trace-panel', 'data-role': 'trace-panel', 'aria-label': 'Selection details' }, h('div', { class: 'trace-tabs', role: 'tablist' }, detailsTab, resultsTab), details, results);
  const labelHandle = h('div', { class: 'trace-label-handle', 'data-role': 'label-resizer', role: 'separator', 'aria-orientation': 'vertical', 'aria-label': 'Resize the track names', tabindex: 0 });
  const timeline = h('div', { class: 'trace-timeline' }, rulerRow, pinnedArea.scroll, area.scroll, labelHandle);
  const panelHandle = h('div', { class: 'trace-panel-handle', 'data-role': 'panel-resizer', role: 'separator', 'aria-orientation': 'horizontal', 'aria-label': 'Resize the details panel', tabindex: 0 });
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
  const page = h(
    'div',
    { class: 'page trace', 'data-page': 'trace_viewer', 'data-fill': 'viewport' },
    h('div', { class: 'trace-bar' }, toolbar, h('div', { class: 'trace-statusbar' }, status, hiddenBox)),
    workspace,
    help.element,
  );
  resizer(labelHandle, 'x', 'oxprof.trace.labels', 240, 120, 720, (px) => workspace.style.setProperty('--trace-label-w', `${px}px`), () => onResize());
  resizer(panelHandle, 'y', 'oxprof.trace.panel', Math.round(Math.min(260, (window.innerHeight || 800) * 0.28)), 80, 2000, (px) => workspace.style.setProperty('--trace-panel-h', `${px}px`), () => onResize(), true);

  const painter = new Painter(readTheme(document.documentElement));
  let drag: Drag | null = null;
  let hover: { id: number; x: number; y: number } | null = null;
  let hoverPs: number | null = null;
  let inFlight = false;
  let fetchTimer: ReturnType<typeof setTimeout> | undefined;
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  let urlTimer: ReturnType<typeof setTimeout> | undefined;
  let drawPending = false;
  let pending = 0;
  let reveal: { id: number; track: number } | null = null;
  const hoverCache = new Map<number, TraceEvent>();

  searchInput.value = view.search;
  argsBox.checked = view.searchArgs;

  const plotWidth = () => Math.max(100, Math.floor(area.plot.clientWidth || 900));
  const saveView = () => {
    for (const [k, v] of Object.entries(viewToUrl(view))) ctx.view.set(k, v);
  };
  const setError = (e: unknown) => {
    workspace.dataset.ready = 'true';
    replaceChildren(status, h('span', { class: 'error', 'data-role': 'trace-error', role: 'alert' }, `Could not load the trace: ${e instanceof Error ? e.message : String(e)}`));
  };
  function updateReady(): void {
    workspace.dataset.ready = String(!!model.tracks && !inFlight && !model.needsFetch(plotWidth()) && pending === 0 && urlTimer === undefined);
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

  function revealEvent(): void {
    const r = reveal;
    if (!r) return;
    const at = model.eventY(r);
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
    if (!model.tracks) return;
    const width = plotWidth();
    const scale = new TimeScale(model.span, width);
    const r = rulerOf(model.span, model.bounds.start, width);
    sizeCanvas(rulerCanvas, width, 28);
    drawRuler(rulerCanvas, r, scale, painterTheme(), { timing: view.timing, hoverPs });
    rulerBase.textContent = r.base !== null ? `${r.baseLabel} +` : '';
    rulerBase.title = r.base !== null ? `Tick labels count from ${r.baseLabel} after the trace start` : '';
    rulerCanvas.dataset.labels = r.ticks.map((t) => t.label).join('|');
    rulerCanvas.dataset.base = r.baseLabel;
    const names = model.data?.names ?? [];
    painter.setNames(names);
    const matchIds = new Set((model.search.result?.matches ?? []).map((m) => m.id));
    const matchNames = model.search.args ? new Set<number>() : model.matchingNames();
    const currentMatch = model.search.result?.matches[model.search.index]?.id;
    for (const a of areas) {
      if (!a.layout.rows.length && a.kind === 'pinned') continue;
      a.canvas.dataset.offset = String(a.offset);
      const flows = model.flowArrowsIn(a.kind);
      if (a.kind === 'main') {
        area.canvas.dataset.flowArrows = String(flows.length + model.flowArrowsIn('pinned').length);
        if (model.flow) area.canvas.dataset.flowId = model.flow.id;
        else delete area.canvas.dataset.flowId;
      }
      painter.draw(a.canvas, {
        layout: a.layout,
        scale,
        offset: a.offset,
        height: a.canvasHeight,
        names,
        grid: r.ticks.map((t) => t.ps),
        selectedId: view.selected,
        matchIds,
        matchNames,
        currentMatch,
        hoverId: hover?.id ?? null,
        flows,
        range: view.range,
        timing: view.timing,
        drag: drag && drag.moved && drag.area === a ? { x0: drag.x0, x1: drag.x, y0: drag.y0, y1: drag.y, kind: view.tool === 'select' ? 'band' : 'span' } : null,
        dataEnd: model.data?.end_ps ?? model.span.end,
      });
    }
  }
  let theme = readTheme(document.documentElement);
  const painterTheme = () => theme;
  const themeWatch = window.matchMedia?.('(prefers-color-scheme: dark)');
  const onTheme = () => {
    theme = readTheme(document.documentElement);
    painter.setTheme(theme);
    requestDraw();
  };
  themeWatch?.addEventListener?.('change', onTheme);
  const themeObserver = new MutationObserver(onTheme);
  themeObserver.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });

  // ---- status --------------------------------------------------------------------------------
  function showCounts(): void {
    const { span, bounds, data, loaded } = model;
    const r = rulerOf(span, bounds.start, plotWidth());
    const from = r.base !== null ? r.baseLabel : rulerOf({ start: span.start, end: span.start + 1 }, bounds.start, 1).ticks[0]?.label;
    const shown = `Showing ${fmt(span.end - span.start)} of ${fmt(bounds.end - bounds.start)}, from ${from ?? fmt(span.start - bounds.start)}`;
    replaceChildren(status, h('span', { 'data-role': 'trace-window', 'data-start-ps': span.start, 'data-end-ps': span.end }, shown));
    if (!data || !loaded) return replaceChildren(hiddenBox);
    Object.assign(hiddenBox.dataset, {
      hidden: String(data.total_hidden),
      inWindow: String(data.total_in_window),
      fetchStart: String(data.start_ps),
      fetchEnd: String(data.end_ps),
      fetchWidth: String(loaded.width),
      fetchTracks: loaded.tracksKey,
    });
    replaceChildren(
      hiddenBox,
      data.total_hidden
        ? `${count(data.total_in_window)} events loaded (view ± half); ${count(data.total_hidden)} merged or hidden at this zoom (zoom in to see them).`
        : `${count(data.total_in_window)} events loaded (view ± half), all shown.`,
    );
    hiddenBox.classList.toggle('has-hidden', data.total_hidden > 0);
  }

  function showTiming(): void {
    if (!view.timing) {
      delete timingBox.dataset.ps;
      return replaceChildren(timingBox);
    }
    const len = view.timing.end - view.timing.start;
    Object.assign(timingBox.dataset, { ps: String(len), startPs: String(view.timing.start), endPs: String(view.timing.end) });
    replaceChildren(
      timingBox,
      `Interval ${fmt(len)} at ${fmt(view.timing.start - model.bounds.start, 7)} `,
      h('button', { type: 'button', class: 'button', 'data-role': 'timing-clear', onclick: () => setTiming(null) }, 'Clear'),
    );
  }

  function setTool(t: TraceTool): void {
    view.tool = t;
    for (const b of toolButtons) b.setAttribute('aria-pressed', String(b.dataset.tool === t));
    for (const a of areas) a.canvas.style.cursor = t === 'pan' ? 'grab' : t === 'select' ? 'default' : 'crosshair';
    workspace.dataset.tool = t;
    replaceChildren(activeTool, `${TOOL_HELP[t]}.`);
    saveView();
  }

  function setTiming(t: Span | null): void {
    view.timing = t;
    saveView();
    showTiming();
    requestDraw();
  }

  function showTab(tab: 'details' | 'results'): void {
    detailsTab.setAttribute('aria-selected', String(tab === 'details'));
    resultsTab.setAttribute('aria-selected', String(tab === 'results'));
    details.classList.toggle('hidden', tab !== 'details');
    results.classList.toggle('hidden', tab !== 'results');
  }

  // ---- windows -------------------------------------------------------------------------------
  function scheduleFetch(delay = FETCH_DELAY_MS): void {
    if (inFlight || fetchTimer !== undefined) return;
    fetchTimer = setTimeout(() => {
      fetchTimer = undefined;
      void fetchWindow();
    }, delay);
  }

  async function fetchWindow(): Promise<void> {
    if (inFlight || !model.needsFetch(plotWidth())) return updateReady();
    const want = model.wanted(plotWidth());
    inFlight = true;
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

  // ---- selection and details -----------------------------------------------------------------
  async function select(id: number | null): Promise<void> {
    view.selected = id;
    if (id !== null) {
      view.range = null;
      model.aggregate = null;
    }
    model.event = null;
    model.flow = null;
    saveView();
    requestDraw();
    showTab('details');
    if (id === null) {
      delete details.dataset.eventId;
      return replaceChildren(details, h('p', { class: 'muted' }, 'Click a slice to see its details; drag to select many.'));
    }
    try {
      const ev = await loading(client.event(id));
      if (view.selected !== id) return;
      model.event = ev;
      hoverCache.set(id, ev);
      showEvent(ev, ev.flow ? null : []);
      if (ev.flow) {
        const f = await loading(client.flow(ev.flow[0]));
        if (view.selected !== id) return;
        model.flow = { id: String(f.flow), events: f.events };
        showEvent(ev, f.events);
        requestDraw();
      }
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not load the event: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  function showEvent(ev: TraceEvent, flowEvents: EventRef[] | null): void {
    details.dataset.eventId = String(ev.id);
    const links = h('p', { 'data-role': 'trace-links', class: 'trace-links' });
    replaceChildren(details, eventPanel(ev, { origin: model.bounds.start, trackLabel: (t) => model.trackLabel(t), flowEvents, jump: (e) => void jump(e), links }));
    void linksOf(ev, model, client, ctx, links, () => view.selected === ev.id).catch(() => undefined);
  }

  /** Selects an event anywhere: unfolds its track, moves the view there (also vertically). */
  async function jump(e: EventRef): Promise<void> {
    if (model.bringIntoLayout(e.track)) change(() => undefined);
    reveal = { id: e.id, track: e.track };
    setSpan(spanForMatch(e, model.span, model.bounds));
    relayout();
    requestDraw();
    await select(e.id);
  }

  async function selectRange(range: { span: Span; tracks: number[] } | null): Promise<void> {
    view.range = range && range.tracks.length && range.span.end > range.span.start ? range : null;
    view.selected = null;
    model.flow = null;
    model.event = null;
    model.aggregate = null;
    saveView();
    requestDraw();
    const r = view.range;
    if (!r) return void select(null);
    showTab('details');
    delete details.dataset.eventId;
    replaceChildren(details, h('p', { class: 'muted' }, 'Aggregating the selection…'));
    try {
      const a = await loading(client.aggregate(r.span.start, r.span.end, r.tracks));
      if (view.range !== r) return;
      model.aggregate = a;
      showAggregate();
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not aggregate the selection: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  function showAggregate(): void {
    const a = model.aggregate;
    if (!a) return;
    replaceChildren(
      details,
      aggregatePanel(a, {
        sort: model.aggSort,
        onSort: (key) => {
          model.aggSort = { key, desc: model.aggSort.key === key ? !model.aggSort.desc : key !== 'name' };
          showAggregate();
        },
        onClear: () => void selectRange(null),
        csvName: `trace_selection_${ctx.state.run.replace(/[^A-Za-z0-9_.-]+/g, '_')}`,
      }),
    );
  }

  // ---- search --------------------------------------------------------------------------------
  async function runSearch(text: string, args: boolean): Promise<void> {
    model.search = { text, args, result: null, index: -1 };
    view.search = text;
    view.searchArgs = args;
    saveView();
    requestDraw();
    if (!text.trim()) {
      delete searchStatus.dataset.total;
      replaceChildren(results, h('p', { class: 'muted' }, 'Search to list matching events.'));
      resultsTab.textContent = 'Search results';
      return replaceChildren(searchStatus);
    }
    replaceChildren(searchStatus, 'searching…');
    try {
      const r = await loading(client.search(text.trim(), args, SEARCH_LIMIT));
      if (model.search.text !== text || model.search.args !== args) return;
      model.search.result = r;
      showSearch();
      requestDraw();
    } catch (e) {
      replaceChildren(searchStatus, h('span', { class: 'error' }, e instanceof Error ? e.message : String(e)));
    }
  }

  function showSearch(): void {
    const { result: r, index } = model.search;
    if (!r) return;
    searchStatus.dataset.total = String(r.total);
    searchStatus.dataset.index = String(index);
    const current = r.matches[index];
    if (current) searchStatus.dataset.matchId = String(current.id);
    else delete searchStatus.dataset.matchId;
    const pos = index >= 0 ? `${count(index + 1)} of ` : '';
    replaceChildren(searchStatus, r.total === 0 ? 'no match' : `${pos}${count(r.total)} match${r.total === 1 ? '' : 'es'}`);
    resultsTab.textContent = `Search results (${count(r.total)})`;
    replaceChildren(results, searchList(r, { origin: model.bounds.start, current: index, trackLabel: (t) => model.trackLabel(t), jump: (i) => void goToMatch(i) }));
  }

  async function goToMatch(i: number): Promise<void> {
    const m = model.search.result?.matches[i];
    if (!m) return;
    model.search.index = i;
    showSearch();
    await jump(m);
  }

  async function stepSearch(step: 1 | -1): Promise<void> {
    if (searchInput.value !== model.search.text || argsBox.checked !== model.search.args || !model.search.result) await runSearch(searchInput.value, argsBox.checked);
    const r = model.search.result;
    if (!r || !r.matches.length) return;
    await goToMatch(stepMatch(model.search.index, r.matches.length, step));
  }

  searchInput.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => void runSearch(searchInput.value, argsBox.checked), SEARCH_DELAY_MS);
  });
  argsBox.addEventListener('change', () => void runSearch(searchInput.value, argsBox.checked));
  searchInput.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      clearTimeout(searchTimer);
      void stepSearch(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Escape') {
      workspace.focus({ preventScroll: true });
    }
  });

  // ---- mouse ---------------------------------------------------------------------------------
  const sliceUnder = (a: TrackArea, p: { x: number; y: number }) => {
    const row = rowAt(a.layout.rows, p.y);
    if (!row || row.info.kind !== 'thread') return null;
    const scale = new TimeScale(model.span, plotWidth());
    const i = sliceAt(row.slices, Math.floor((p.y - row.top) / ROW), scale.toPs(p.x), scale.psPerPx * 2);
    return i < 0 ? null : { row, i };
  };

  for (const a of areas) {
    a.canvas.addEventListener(
      'wheel',
      (e) => {
        e.preventDefault();
        const scale = new TimeScale(model.span, plotWidth());
        if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
          setSpan(panSpan(model.span, ((e.deltaX || e.deltaY) / plotWidth()) * (model.span.end - model.span.start), model.bounds));
        } else {
          setSpan(zoomSpan(model.span, scale.toPs(a.point(e).x), Math.pow(1.0015, Math.max(-400, Math.min(400, e.deltaY))), model.bounds));
        }
      },
      { passive: false },
    );
    a.canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      workspace.focus({ preventScroll: true });
      const p = a.point(e);
      drag = { area: a, x0: p.x, y0: p.y, x: p.x, y: p.y, span: model.span, moved: false };
      if (view.tool === 'pan') a.canvas.style.cursor = 'grabbing';
    });
    a.canvas.addEventListener('mousemove', (e) => {
      if (drag) return;
      const p = a.point(e);
      const scale = new TimeScale(model.span, plotWidth());
      hoverPs = scale.toPs(p.x);
      const hit = sliceUnder(a, p);
      const id = hit ? (hit.row.slices.id[hit.i] ?? null) : null;
      if ((hover?.id ?? null) !== id) requestDraw();
      hover = id === null ? null : { id, x: e.clientX, y: e.clientY };
      tooltipFor(tooltip, hit && id !== null ? { id, row: hit.row, i: hit.i, names: model.data?.names ?? [], x: e.clientX, y: e.clientY } : null, hoverCache, client, () => hover?.id ?? null);
      requestDraw();
    });
    a.canvas.addEventListener('mouseleave', () => {
      hover = null;
      hoverPs = null;
      tooltipFor(tooltip, null, hoverCache, client, () => null);
      requestDraw();
    });
  }

  const onMove = (e: MouseEvent) => {
    if (!drag) return;
    const p = drag.area.point(e);
    drag.x = p.x;
    drag.y = p.y;
    if (Math.abs(p.x - drag.x0) > 3 || Math.abs(p.y - drag.y0) > 3) drag.moved = true;
    if (!drag.moved) return;
    if (view.tool === 'pan') setSpan(panSpan(drag.span, (-(p.x - drag.x0) / plotWidth()) * (drag.span.end - drag.span.start), model.bounds));
    else requestDraw();
  };
  const onUp = (e: MouseEvent) => {
    const d = drag;
    if (!d) return;
    drag = null;
    const p = d.area.point(e);
    const width = plotWidth();
    const scale = new TimeScale(model.span, width);
    if (view.tool === 'pan') d.area.canvas.style.cursor = 'grab';
    if (!d.moved) {
      if (view.tool === 'zoom') return setSpan(zoomSpan(model.span, scale.toPs(p.x), e.shiftKey ? 2 : 0.5, model.bounds));
      if (view.tool === 'timing') return setTiming(null);
      const hit = sliceUnder(d.area, p);
      return void select(hit ? (hit.row.slices.id[hit.i] ?? null) : null);
    }
    const a = scale.toPs(Math.max(0, Math.min(d.x0, p.x)));
    const b = scale.toPs(Math.min(width, Math.max(d.x0, p.x)));
    const picked = { start: Math.round(a), end: Math.round(b) };
    if (view.tool === 'zoom') setSpan(zoomSpan(picked, (a + b) / 2, 1, model.bounds));
    else if (view.tool === 'timing') setTiming(picked);
    else if (view.tool === 'select') void selectRange({ span: picked, tracks: tracksInBand(d.area.layout.rows, d.y0, p.y) });
    requestDraw();
  };

  // ---- keys ----------------------------------------------------------------------------------
  const fit = () => {
    const s = model.selectionSpan();
    if (!s) return;
    const pad = Math.max((s.end - s.start) * 0.05, 500);
    setSpan(zoomSpan({ start: s.start - pad, end: s.end + pad }, (s.start + s.end) / 2, 1, model.bounds));
  };
  const mark = () => {
    const s = model.selectionSpan();
    if (!s || (view.timing && view.timing.start === s.start && view.timing.end === s.end)) return setTiming(null);
    setTiming({ start: Math.round(s.start), end: Math.round(s.end) });
  };
  const neighbour = async (step: 1 | -1) => {
    const e = model.event;
    if (!e || view.selected !== e.id) return;
    const next = await loading(model.neighbour(e, step, (start, end) => client.window(start, end, 2000, String(e.track), 50_000)));
    if (!next || view.selected !== e.id) return;
    const inView = next.ts_ps >= model.span.start && next.ts_ps + next.dur_ps <= model.span.end;
    reveal = { id: next.id, track: next.track };
    if (!inView) setSpan(spanForMatch(next, model.span, model.bounds));
    revealEvent();
    await select(next.id);
  };
  const onKey = (e: KeyboardEvent) => {
    if (!workspace.isConnected) return detach();
    if (help.isOpen) return;
    const t = e.target as HTMLElement | null;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey || !model.tracks) return;
    const { span, bounds } = model;
    const len = span.end - span.start;
    const mid = (span.start + span.end) / 2;
    const key = keyOf(e);
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
      case 'f':
        fit();
        break;
      case '0':
        setSpan({ ...bounds });
        break;
      case 'm':
        mark();
        break;
      case '[':
        void neighbour(-1);
        break;
      case ']':
        void neighbour(1);
        break;
      case '?':
        help.open();
        break;
      case '/':
        searchInput.focus();
        searchInput.select();
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
    if (!workspace.isConnected) return detach();
    if (!model.tracks) return;
    relayout();
    draw();
    if (model.needsFetch(plotWidth())) scheduleFetch();
  };
  const resizeObserver = typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => onResize());
  resizeObserver?.observe(workspace);
  for (const a of areas) a.scroll.addEventListener('scroll', () => requestDraw(), { passive: true });
  function detach(): void {
    window.removeEventListener('mousemove', onMove);
    window.removeEventListener('mouseup', onUp);
    document.removeEventListener('keydown', onKey);
    window.removeEventListener('resize', onResize);
    resizeObserver?.disconnect();
    themeObserver.disconnect();
    themeWatch?.removeEventListener?.('change', onTheme);
    clearTimeout(fetchTimer);
    clearTimeout(searchTimer);
    clearTimeout(urlTimer);
  }
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  document.addEventListener('keydown', onKey);
  window.addEventListener('resize', onResize);

  // ---- hosts ---------------------------------------------------------------------------------
  void ctx.api
    .hosts(ctx.state.run, ctx.state.tool)
    .then((hosts) => {
      const real = hosts.filter((x) => x !== 'ALL_HOSTS');
      if (real.length < 2) return;
      const shown = view.hosts.length ? view.hosts : [ctx.state.host || real[0] || ''];
      replaceChildren(
        hostsHolder,
        hostPicker(real, shown, (chosen) => {
          // Track and event ids change with the hosts: start from a clean view.
          for (const key of ['sel', 'range', 'range_tracks', 'collapsed', 'collapsed_hosts', 'hidden_tracks', 'pinned']) ctx.view.set(key, null);
          ctx.view.set('hosts', chosen.length > 1 ? chosen.join(',') : null);
          detach();
          page.replaceWith(traceViewerPage(ctx));
        }),
      );
    })
    .catch(() => undefined);

  // ---- load ----------------------------------------------------------------------------------
  setTool(view.tool);
  void (async () => {
    try {
      const tracks = await client.tracks();
      model.setTracks(tracks);
      model.span = spanFromView(ctx.view.get, model.bounds);
      const step = { number: ctx.view.get(STEP_KEYS.step) || undefined, name: ctx.view.get(STEP_KEYS.stepName) || undefined };
      if (step.number || step.name) await openStep(step);
      // Wait until the page is in the document so the canvas has its width.
      await new Promise<void>((resolve) => requestAnimationFrame(() => resolve()));
      relayout();
      showCounts();
      showTiming();
      const restore: Promise<void>[] = [fetchWindow()];
      if (view.range) restore.push(selectRange(view.range));
      else if (view.selected !== null) {
        reveal = { id: view.selected, track: Math.floor(view.selected / 2 ** 32) };
        restore.push(select(view.selected));
      }
      if (view.search) restore.push(runSearch(view.search, view.searchArgs));
      await Promise.all(restore);
    } catch (e) {
      setError(e);
    }
  })();

  /** Opens a step (the overview's and pod viewer's links): the view and a timing mark on it. */
  async function openStep(step: { number?: string; name?: string }): Promise<void> {
    ctx.view.set(STEP_KEYS.step, null);
    ctx.view.set(STEP_KEYS.stepName, null);
    try {
      const s = await client.step(step);
      const pad = Math.max((s.end_ps - s.start_ps) * 0.05, 1000);
      model.span = zoomSpan({ start: s.start_ps - pad, end: s.end_ps + pad }, (s.start_ps + s.end_ps) / 2, 1, model.bounds);
      view.timing = { start: s.start_ps, end: s.end_ps };
      saveView();
      for (const [k, v] of Object.entries(spanToView(model.span, model.bounds))) ctx.view.set(k, v);
      workspace.dataset.step = String(s.step);
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error', 'data-role': 'step-error' }, `Could not open step ${step.name ?? step.number}: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  return page;
}

const fmt = (ps: number, digits = 4) => formatTime(ps, digits);
