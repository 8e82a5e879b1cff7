// The trace viewer's view model: what is loaded (tracks, the current window as columns),
// what is shown (the time span, folded / hidden / pinned tracks, the layouts of the main
// and pinned areas), what is selected and searched, and which window to fetch next. No DOM
// and no requests: the page (pages/trace_viewer.ts) does the IO and wires the widgets.

import {
  type ColumnWindow,
  type EventRef,
  type FlowArrow,
  type Layout,
  type LayoutOptions,
  ROW,
  TRACK_GAP,
  type SearchResult,
  type Span,
  type TraceAggregate,
  type TraceEvent,
  type TraceTracks,
  type TrackRow,
  type TrackInfo,
  flowArrows,
  layoutPinned,
  layoutSections,
  neighbourSlice,
  sectionHost,
  sectionOf,
  sliceIndex,
  trackColumns,
  visibleTrackIds,
} from '../trace';
import type { TraceWindow } from '../trace';
import type { AggregateKey } from '../trace';
import type { TraceView } from './view';
import { DEBUG_TRACK_ID, type DebugTrack, shiftedSlices } from './debug_track';

/** A fetched window: its range, bins and tracks. */
export interface Loaded {
  range: Span;
  width: number;
  tracksKey: string;
}

export interface SearchState {
  text: string;
  args: boolean;
  result: SearchResult | null;
  index: number;
}

const EMPTY_LAYOUT: Layout = { hosts: [], sections: [], rows: [], height: 0 };

/** Thread tracks above which tracks start folded (see TraceModel.foldByDefault). */
export const FOLD_ABOVE = 30;

export class TraceModel {
  tracks: TraceTracks | null = null;
  bounds: Span = { start: 0, end: 1 };
  span: Span = { start: 0, end: 1 };
  data: ColumnWindow | null = null;
  loaded: Loaded | null = null;
  main: Layout = EMPTY_LAYOUT;
  pinned: Layout = EMPTY_LAYOUT;
  /** Depths each track reached (heights never shrink while panning). */
  readonly minDepths = new Map<number, number>();
  /** The selected event's details, once loaded. */
  event: TraceEvent | null = null;
  flow: { id: string; events: EventRef[] } | null = null;
  aggregate: TraceAggregate | null = null;
  aggSort: { key: AggregateKey; desc: boolean } = { key: 'total_ps', desc: true };
  search: SearchState;
  /** Collapsed sections' activity (their headers draw it), by pid. */
  readonly sectionDensity = new Map<number, { range: Span; bins: Float32Array }>();
  /** Tracks picked in the name column (click, ctrl/⌘+click, shift+click) for pinning or hiding together. */
  readonly pickedTracks = new Set<number>();
  /** The last track picked (shift+click picks from it). */
  pickAnchor: number | null = null;
  /** An SQL query's rows as a track pinned at the top (`debug_sql=`). */
  debug: DebugTrack | null = null;
  /** The window's names, then the debug track's (one list for drawing). */
  names: readonly string[] = [];
  private trackIndex = new Map<number, { info: TrackInfo; section: string; label: string; pid: number; host: string }>();

  constructor(readonly view: TraceView) {
    this.search = { text: view.search, args: view.searchArgs, result: null, index: -1 };
  }

  /**
   * Whether tracks start folded to their outermost slices: in traces of many tracks (more
   * than FOLD_ABOVE threads), so that a screen shows dozens of them; a click unfolds one.
   */
  foldByDefault = false;

  /** Whether a track is folded (its deeper slices drawn as a strip under the outermost). */
  isFolded(id: number): boolean {
    return this.foldByDefault !== this.view.trackFold.has(id);
  }

  toggleFold(id: number): void {
    if (this.view.trackFold.has(id)) this.view.trackFold.delete(id);
    else this.view.trackFold.add(id);
  }

  /** Folds (true) or unfolds every track. */
  foldAll(fold: boolean): void {
    this.view.trackFold.clear();
    if (fold !== this.foldByDefault) for (const s of this.tracks?.sections ?? []) for (const t of s.tracks) this.view.trackFold.add(t.id);
  }

  setTracks(tracks: TraceTracks): void {
    this.tracks = tracks;
    this.foldByDefault = tracks.sections.reduce((n, s) => n + s.tracks.filter((t) => t.kind === 'thread').length, 0) > FOLD_ABOVE;
    this.bounds = { start: tracks.start_ps, end: Math.max(tracks.end_ps, tracks.start_ps + 1) };
    this.trackIndex.clear();
    for (const s of tracks.sections) {
      for (const t of s.tracks) this.trackIndex.set(t.id, { info: t, section: s.name, label: s.label ?? s.name, pid: s.pid, host: sectionHost(tracks, s) });
    }
    // Forget hidden or pinned ids this trace does not have.
    for (const id of [...this.view.hidden]) if (!this.trackIndex.has(id)) this.view.hidden.delete(id);
    for (const id of [...this.view.trackFold]) if (!this.trackIndex.has(id)) this.view.trackFold.delete(id);
    this.view.pinned = this.view.pinned.filter((id) => this.trackIndex.has(id));
  }

  get multiHost(): boolean {
    return (this.tracks?.hosts?.length ?? 1) > 1;
  }

  layoutOptions(): LayoutOptions {
    const v = this.view;
    return { collapsed: v.collapsed, collapsedHosts: v.collapsedHosts, hidden: v.hidden, pinned: v.pinned, minDepths: this.minDepths, filter: v.trackFilter, folded: (id) => this.isFolded(id) };
  }

  /** Recomputes both layouts from the tracks and the window. */
  relayout(): void {
    if (!this.tracks) return;
    this.main = layoutSections(this.tracks, this.data, this.layoutOptions());
    for (const s of this.main.sections) if (s.collapsed) s.density = this.sectionDensity.get(s.pid);
    this.pinned = layoutPinned(this.tracks, this.data, this.view.pinned, this.minDepths, (id) => this.isFolded(id));
    for (const r of [...this.main.rows, ...this.pinned.rows]) this.minDepths.set(r.info.id, r.fullDepths);
    const windowNames = this.data?.names ?? [];
    const d = this.debug;
    this.names = d ? [...windowNames, ...d.names] : windowNames;
    if (d) {
      // The debug track first in the pinned area, its names after the window's.
      const height = d.depths * ROW + TRACK_GAP;
      for (const r of this.pinned.rows) r.top += height;
      this.pinned.rows.unshift({
        info: { id: DEBUG_TRACK_ID, kind: 'thread', name: d.label, num_events: d.slices.count },
        pid: DEBUG_TRACK_ID,
        top: 0,
        depths: d.depths,
        fullDepths: d.depths,
        folded: false,
        slices: shiftedSlices(d, windowNames.length),
        hidden: 0,
        inWindow: d.slices.count,
        maxDur: d.maxDur,
        pinned: true,
      });
      this.pinned.height = (this.pinned.height || 2) + height;
    }
  }

  /** The `tracks` parameter: '' for all, 'none' when nothing is shown. */
  tracksKey(): string {
    const ids = this.tracks ? visibleTrackIds(this.tracks, this.layoutOptions()) : null;
    return ids === null ? '' : ids.length ? ids.join(',') : 'none';
  }

  /** The window to fetch for a plot `px` wide: the view with half a view of margin each side. */
  wanted(px: number): Loaded {
    const { span, bounds } = this;
    const len = span.end - span.start;
    const range = { start: Math.max(bounds.start, Math.floor(span.start - len / 2)), end: Math.min(bounds.end, Math.ceil(span.end + len / 2)) };
    const w = Math.max(1, Math.min(16_384, Math.round((px * (range.end - range.start)) / Math.max(1, len))));
    return { range, width: w, tracksKey: this.tracksKey() };
  }

  /** Whether the view needs another window (left the loaded range, zoomed, other tracks). */
  needsFetch(px: number): boolean {
    if (!this.tracks) return false;
    const loaded = this.loaded;
    if (!loaded) return true;
    if (loaded.tracksKey !== this.tracksKey()) return true;
    const { span } = this;
    if (span.start < loaded.range.start || span.end > loaded.range.end) return true;
    const loadedRes = (loaded.range.end - loaded.range.start) / loaded.width;
    const viewRes = (span.end - span.start) / Math.max(1, px);
    // A capped width (very long ranges) cannot get finer: do not ask again.
    if (loaded.width >= 16_384 && loadedRes > viewRes) return false;
    return loadedRes > viewRes * 1.5 || loadedRes < viewRes / 1.5;
  }

  setWindow(w: ColumnWindow, loaded: Loaded): void {
    this.data = w;
    this.loaded = loaded;
    this.relayout();
  }

  // ---- tracks: folding, hiding, pinning -----------------------------------------------------

  toggleSection(pid: number): void {
    if (this.view.collapsed.has(pid)) this.view.collapsed.delete(pid);
    else this.view.collapsed.add(pid);
  }

  toggleHost(host: string): void {
    if (this.view.collapsedHosts.has(host)) this.view.collapsedHosts.delete(host);
    else this.view.collapsedHosts.add(host);
  }

  /** Pins a track to the top, or unpins it. */
  togglePin(id: number): void {
    const v = this.view;
    v.pinned = v.pinned.includes(id) ? v.pinned.filter((x) => x !== id) : [...v.pinned, id];
    v.hidden.delete(id);
  }

  hide(id: number): void {
    this.view.hidden.add(id);
    this.view.pinned = this.view.pinned.filter((x) => x !== id);
    this.pickedTracks.delete(id);
  }

  /** Pins tracks (in order; those pinned stay where they are). */
  pinAll(ids: Iterable<number>): void {
    const v = this.view;
    for (const id of ids) {
      v.hidden.delete(id);
      if (!v.pinned.includes(id)) v.pinned = [...v.pinned, id];
    }
  }

  unpinAll(ids: Iterable<number>): void {
    const drop = new Set(ids);
    this.view.pinned = this.view.pinned.filter((x) => !drop.has(x));
  }

  hideAll(ids: Iterable<number>): void {
    for (const id of [...ids]) this.hide(id);
  }

  /**
   * Picks a track in the name column: alone (a click), added or removed (`toggle`:
   * ctrl/⌘+click), or every track of `order` from the last one picked to it (`range`:
   * shift+click).
   */
  pick(id: number, how: 'only' | 'toggle' | 'range', order: readonly number[]): void {
    const picked = this.pickedTracks;
    if (how === 'range' && this.pickAnchor !== null) {
      const a = order.indexOf(this.pickAnchor);
      const b = order.indexOf(id);
      if (a >= 0 && b >= 0) {
        for (let i = Math.min(a, b); i <= Math.max(a, b); i++) picked.add(order[i] ?? -1);
        picked.delete(-1);
        return;
      }
    }
    if (how === 'toggle') {
      if (picked.has(id)) picked.delete(id);
      else picked.add(id);
    } else {
      const only = picked.size === 1 && picked.has(id);
      picked.clear();
      if (!only) picked.add(id);
    }
    this.pickAnchor = id;
  }

  unhideSection(pid: number): void {
    const section = this.tracks?.sections.find((s) => s.pid === pid);
    for (const t of section?.tracks ?? []) this.view.hidden.delete(t.id);
  }

  /** Unfolds and unhides whatever keeps a track off screen (search and flow jumps). */
  bringIntoLayout(track: number): boolean {
    const t = this.trackIndex.get(track);
    if (!t) return false;
    let changed = false;
    if (this.view.collapsed.delete(t.pid)) changed = true;
    if (this.view.collapsedHosts.delete(t.host)) changed = true;
    if (this.view.hidden.delete(track)) changed = true;
    return changed;
  }

  // ---- lookups ------------------------------------------------------------------------------

  info(track: number): TrackInfo | undefined {
    return this.trackIndex.get(track)?.info;
  }

  /** The process (section) label of a track: PyTorch's name when it has one. */
  processLabel(track: number): string {
    if (track === DEBUG_TRACK_ID) return 'SQL';
    return this.trackIndex.get(track)?.label ?? '';
  }

  /** "process › track" of a track id. */
  trackLabel(track: number): string {
    const t = this.trackIndex.get(track);
    if (!t) return `track ${track}`;
    return `${t.label} › ${t.info.name || t.info.kind}`;
  }

  sectionName(track: number): string {
    return this.trackIndex.get(track)?.section ?? '';
  }

  /** The row of a track in either area. */
  rowOf(track: number): { row: TrackRow; area: 'main' | 'pinned' } | null {
    const p = this.pinned.rows.find((r) => r.info.id === track);
    if (p) return { row: p, area: 'pinned' };
    const m = this.main.rows.find((r) => r.info.id === track);
    return m ? { row: m, area: 'main' } : null;
  }

  /** The content y of an event (its depth when in the window, else the track's top). */
  eventY(e: { id: number; track: number }): { y: number; area: 'main' | 'pinned' } | null {
    const found = this.rowOf(e.track);
    if (!found) return null;
    const i = sliceIndex(found.row.slices, e.id);
    return { y: found.row.top + (i < 0 ? 0 : (found.row.slices.depth[i] ?? 0)) * ROW, area: found.area };
  }

  /** Whether an event is a nested slice of a folded track (not drawn as itself). */
  nestedInFold(e: { id: number; track: number }): boolean {
    const found = this.rowOf(e.track);
    if (!found?.row.folded) return false;
    const i = sliceIndex(found.row.slices, e.id);
    return i >= 0 && (found.row.slices.depth[i] ?? 0) > 0;
  }

  /** Flow arrows of an area. */
  flowArrowsIn(area: 'main' | 'pinned'): FlowArrow[] {
    if (!this.flow) return [];
    return flowArrows(this.flow.events, (e) => {
      const at = this.eventY(e);
      return at && at.area === area ? { y: at.y + ROW / 2 } : null;
    });
  }

  /**
   * The slice before or after an event on its track and depth (keys `[` `]`), from an exact
   * window of that track around it (the drawn window may have merged slices away): the
   * window widens tenfold until a neighbour is found, the track's start or end is reached,
   * or the window is no longer exact.
   */
  async neighbour(e: { id: number; track: number; ts_ps: number; dur_ps: number }, step: 1 | -1, load: (start: number, end: number) => Promise<TraceWindow>): Promise<EventRef | null> {
    let reach = Math.max(e.dur_ps * 20, 1_000_000);
    for (let tries = 0; tries < 6; tries++) {
      const start = Math.max(this.bounds.start, e.ts_ps - reach);
      const end = Math.min(this.bounds.end, e.ts_ps + e.dur_ps + reach);
      const w = await load(start, end);
      const t = w.tracks[0];
      if (!t) return null;
      const s = trackColumns(t).slices;
      const i = sliceIndex(s, e.id);
      if (i < 0) return null;
      const j = neighbourSlice(s, i, step);
      if (j >= 0) return { id: s.id[j] ?? 0, track: e.track, name: w.names[s.name[j] ?? 0] ?? '', ts_ps: s.ts[j] ?? 0, dur_ps: s.dur[j] ?? 0 };
      if (!t.exact || (start <= this.bounds.start && end >= this.bounds.end)) return null;
      reach *= 10;
    }
    return null;
  }

  /** Name indexes of the window matching the search text (substring, any case). */
  matchingNames(): Set<number> {
    const text = this.search.text.trim().toLowerCase();
    const out = new Set<number>();
    if (!text || !this.data) return out;
    this.data.names.forEach((n, i) => {
      if (n.toLowerCase().includes(text)) out.add(i);
    });
    return out;
  }

  /** The span the selection covers: the event, else the drag range, else the timing mark. */
  selectionSpan(): Span | null {
    const e = this.event;
    if (e && this.view.selected === e.id) return { start: e.ts_ps, end: e.ts_ps + Math.max(e.dur_ps, 1) };
    if (this.view.range) return this.view.range.span;
    return this.view.timing;
  }

  /** The section names of a host (several hosts). */
  sectionOf(track: number) {
    return this.tracks ? sectionOf(this.tracks, track) : undefined;
  }
}
