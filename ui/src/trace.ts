// The pure parts of the trace viewer: the LOD API's types, layout of slices by nesting
// depth and of tracks in sections, time <-> pixel mapping, pan/zoom of the window, the
// window in the URL, colors, flow arrows, aggregate tables. The page (pages/trace_viewer.ts)
// does the IO and the drawing; trace/view.ts holds the rest of the view state in the URL;
// trace/columns.ts holds a window's events as columns (built by the window worker).

import { formatTime } from './format';
import { type ColumnWindow, EMPTY_SLICES, type TrackSlices } from './trace/columns';

export { type ColumnWindow, type TrackSlices, firstVisible, neighbourSlice, sliceAt, sliceIndex, trackColumns, windowColumns } from './trace/columns';

/** One host of `/oxprof/api/trace/tracks` (several with `hosts=`). */
export interface HostInfo {
  name: string;
  start_ps: number;
  end_ps: number;
  num_events: number;
}

/** A process of `/oxprof/api/trace/tracks`. */
export interface SectionInfo {
  pid: number;
  /** The host (profile file) it belongs to (absent from older servers). */
  host?: string;
  name: string;
  /** What the profiler's users call it (PyTorch traces: `GPU 0 · NVIDIA A100`), if not `name`. */
  label?: string;
  tracks: TrackInfo[];
}

/** `/oxprof/api/trace/tracks`. */
export interface TraceTracks {
  host: string;
  start_ps: number;
  end_ps: number;
  num_events: number;
  hosts?: HostInfo[];
  sections: SectionInfo[];
}

export interface TrackInfo {
  id: number;
  kind: 'thread' | 'counter';
  tid?: number;
  name: string;
  num_events: number;
}

/** Position of an event in a flow. */
export type FlowEntry = 'start' | 'mid' | 'end';

export interface WindowEvent {
  id: number;
  /** Index into the window's `names`. */
  name: number;
  ts_ps: number;
  dur_ps: number;
  /** Flow binding: `[flow id (decimal string: ids exceed 2^53), entry]`. */
  flow?: [string, FlowEntry];
}

export interface WindowTrack {
  id: number;
  exact: boolean;
  in_window: number;
  hidden: number;
  /** Absent when the track has no event in the window. */
  events?: WindowEvent[];
  samples?: [number, number][];
}

/** `/oxprof/api/trace/window`. */
export interface TraceWindow {
  start_ps: number;
  end_ps: number;
  resolution_ps: number;
  names: string[];
  tracks: WindowTrack[];
  total_in_window: number;
  total_returned: number;
  total_hidden: number;
}

/** `/oxprof/api/trace/event`. */
export interface TraceEvent {
  id: number;
  track: number;
  pid: number;
  tid?: number;
  name: string;
  ts_ps: number;
  dur_ps: number;
  serial: number;
  group_id?: number;
  flow?: [string, FlowEntry];
  /** Duration minus the direct children's (absent for counter samples). */
  self_ps?: number;
  args: Record<string, unknown>;
}

/** One event of `/oxprof/api/trace/search` and `/oxprof/api/trace/flow`. */
export interface EventRef {
  id: number;
  track: number;
  name: string;
  ts_ps: number;
  dur_ps: number;
  /** Search: the argument whose value matched (when the name did not). */
  arg?: string;
}

/** `/oxprof/api/trace/search`. */
export interface SearchResult {
  prefix?: string;
  q?: string;
  args?: boolean;
  total: number;
  truncated: boolean;
  matches: EventRef[];
}

/** `/oxprof/api/trace/step`. */
export interface StepSpan {
  step: number;
  start_ps: number;
  end_ps: number;
  num_events: number;
}

/** `/oxprof/api/trace/flow`. */
export interface FlowResult {
  flow: string;
  events: EventRef[];
}

/** One row of `/oxprof/api/trace/aggregate`. */
export interface AggregateRow {
  name: string;
  count: number;
  total_ps: number;
  /** Sum of the events' self times (absent from older servers). */
  self_ps?: number;
  avg_ps: number;
  min_ps: number;
  max_ps: number;
}

/** `/oxprof/api/trace/aggregate`. */
export interface TraceAggregate {
  start_ps: number;
  end_ps: number;
  tracks: number[];
  num_events: number;
  rows: AggregateRow[];
}

/** A time window `[start, end]` in picoseconds on the profile's clock. */
export interface Span {
  start: number;
  end: number;
}

/** The smallest window the viewer zooms to (1 ns). */
export const MIN_SPAN_PS = 1000;

/** Maps times in `span` to pixels `[0, width]` and back. */
export class TimeScale {
  constructor(
    readonly span: Span,
    readonly width: number,
  ) {}

  get psPerPx(): number {
    return (this.span.end - this.span.start) / Math.max(1, this.width);
  }

  toX(ps: number): number {
    return ((ps - this.span.start) / (this.span.end - this.span.start)) * this.width;
  }

  toPs(x: number): number {
    return this.span.start + (x / this.width) * (this.span.end - this.span.start);
  }
}

/** `span` moved inside `bounds` (same length when it fits, else `bounds`), at least MIN_SPAN_PS long. */
export function clampSpan(span: Span, bounds: Span): Span {
  const full = bounds.end - bounds.start;
  let len = Math.max(Math.min(span.end - span.start, full), Math.min(MIN_SPAN_PS, full));
  if (!Number.isFinite(len) || len <= 0) len = full;
  let start = Math.round(span.start);
  if (start < bounds.start) start = bounds.start;
  if (start + len > bounds.end) start = bounds.end - len;
  return { start, end: Math.round(start + len) };
}

/** Zooms by `factor` (< 1 zooms in) keeping the time `anchor` at the same place. */
export function zoomSpan(span: Span, anchor: number, factor: number, bounds: Span): Span {
  const a = Math.min(Math.max(anchor, span.start), span.end);
  const start = a - (a - span.start) * factor;
  const end = a + (span.end - a) * factor;
  if (end - start < MIN_SPAN_PS) {
    const mid = (start + end) / 2;
    return clampSpan({ start: mid - MIN_SPAN_PS / 2, end: mid + MIN_SPAN_PS / 2 }, bounds);
  }
  return clampSpan({ start, end }, bounds);
}

/** Moves the window by `delta` picoseconds. */
export function panSpan(span: Span, delta: number, bounds: Span): Span {
  return clampSpan({ start: span.start + delta, end: span.end + delta }, bounds);
}

/** URL view keys of the window. */
export const START_KEY = 'start_ps';
export const END_KEY = 'end_ps';

/** The window in the URL (`start_ps`, `end_ps`, profile clock), or the whole trace when absent or invalid. */
export function spanFromView(get: (key: string) => string, bounds: Span): Span {
  const parse = (s: string) => (/^-?\d+$/.test(s.trim()) ? Number(s) : NaN);
  const start = parse(get(START_KEY));
  const end = parse(get(END_KEY));
  if (!Number.isFinite(start) || !Number.isFinite(end) || end <= start) return { ...bounds };
  const s = Math.max(start, bounds.start);
  const e = Math.min(end, bounds.end);
  if (e <= s) return { ...bounds };
  return clampSpan({ start: s, end: e }, bounds);
}

/** The URL values of a window: none when it is the whole trace. */
export function spanToView(span: Span, bounds: Span): Record<string, string | null> {
  if (span.start <= bounds.start && span.end >= bounds.end) return { [START_KEY]: null, [END_KEY]: null };
  return { [START_KEY]: String(Math.round(span.start)), [END_KEY]: String(Math.round(span.end)) };
}

const colorCache = new Map<string, string>();

/** A stable color for a name (FNV-1a hash to a hue), cached. */
export function colorFor(name: string): string {
  let c = colorCache.get(name);
  if (c === undefined) {
    c = hashColor(name);
    if (colorCache.size > 50_000) colorCache.clear();
    colorCache.set(name, c);
  }
  return c;
}

function hashColor(name: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  const hue = hash % 360;
  const light = 55 + ((hash >>> 9) % 3) * 7;
  return `hsl(${hue}, 55%, ${light}%)`;
}

/** sRGB channels (0..1) of `hsl(h, s%, l%)`, `#rrggbb` or `#rgb`; null for anything else. */
export function parseColor(color: string): [number, number, number] | null {
  const hsl = /^hsl\(\s*([\d.]+)\s*,\s*([\d.]+)%\s*,\s*([\d.]+)%\s*\)$/.exec(color);
  if (hsl) {
    const h = Number(hsl[1]) / 360;
    const sat = Number(hsl[2]) / 100;
    const l = Number(hsl[3]) / 100;
    const q = l < 0.5 ? l * (1 + sat) : l + sat - l * sat;
    const p = 2 * l - q;
    const channel = (t: number) => {
      const u = t < 0 ? t + 1 : t > 1 ? t - 1 : t;
      if (u < 1 / 6) return p + (q - p) * 6 * u;
      if (u < 1 / 2) return q;
      if (u < 2 / 3) return p + (q - p) * (2 / 3 - u) * 6;
      return p;
    };
    return [channel(h + 1 / 3), channel(h), channel(h - 1 / 3)];
  }
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color);
  if (hex) {
    const x = hex[1] ?? '';
    const full = x.length === 3 ? [...x].map((c) => c + c).join('') : x;
    return [0, 2, 4].map((i) => parseInt(full.slice(i, i + 2), 16) / 255) as [number, number, number];
  }
  return null;
}

/** WCAG relative luminance of a color (0 black .. 1 white). */
export function luminance(color: string): number {
  const rgb = parseColor(color) ?? [0.5, 0.5, 0.5];
  const lin = (c: number) => (c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
  return 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
}

/** WCAG contrast ratio of two colors (1..21). */
export function contrast(a: string, b: string): number {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/**
 * The label color on a slice of color `background`: black or white, whichever contrasts
 * more (at least 4.58:1 for any background).
 */
export function labelColorFor(background: string): string {
  const l = luminance(background);
  return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? '#000' : '#fff';
}

/** A duration in picoseconds, human-readable (`1.23 ms`): see format.ts. */
export function formatDuration(ps: number): string {
  return formatTime(ps);
}

// ---- tracks in sections ----------------------------------------------------------------

/** Row height of one nesting depth (px). */
export const ROW = 17;
/** Height of a section header (px). */
export const HEADER = 20;
/** Height of a host header (several hosts, px). */
export const HOST_HEADER = 22;
/** Height of the time ruler (px). */
export const AXIS = 28;
/** Gap below each track (px). */
export const TRACK_GAP = 2;
/** Depths drawn for a counter track (its area chart's height). */
export const COUNTER_DEPTHS = 2;

export interface HostRow {
  name: string;
  top: number;
  collapsed: boolean;
  /** Number of its sections. */
  sections: number;
}

export interface SectionRow {
  pid: number;
  host: string;
  name: string;
  label?: string;
  top: number;
  collapsed: boolean;
  /** Number of tracks (shown or not). */
  tracks: number;
  /** Tracks the user hid, not shown. */
  hiddenTracks: number;
  /** Tracks pinned to the top (shown there, not here). */
  pinnedTracks: number;
  /** Tracks the track filter leaves out. */
  filteredTracks: number;
  /** Activity of the section while collapsed: busy share of its threads per column of `range`. */
  density?: { range: Span; bins: Float32Array };
}

export interface TrackRow {
  info: TrackInfo;
  pid: number;
  top: number;
  /** Rows drawn: 1 when folded, else every nesting depth. */
  depths: number;
  /** Nesting depths of its slices (drawn or not). */
  fullDepths: number;
  /** Folded to its outermost slices (the deeper ones as a strip). */
  folded: boolean;
  slices: TrackSlices;
  hidden: number;
  inWindow: number;
  /** Longest slice (ps): slices overlapping a time start at most this much before it. */
  maxDur: number;
  samples?: [number, number][];
  /** Shown in the pinned area. */
  pinned?: boolean;
}

export interface Layout {
  hosts: HostRow[];
  sections: SectionRow[];
  rows: TrackRow[];
  height: number;
}

/** What the user folded, hid and pinned (all optional). */
export interface LayoutOptions {
  /** Pids of collapsed sections. */
  collapsed?: ReadonlySet<number>;
  /** Collapsed hosts (several hosts). */
  collapsedHosts?: ReadonlySet<string>;
  /** Track ids the user hid. */
  hidden?: ReadonlySet<number>;
  /** Track ids pinned to the top, in pin order (not in the main layout). */
  pinned?: readonly number[];
  /** Depths each track had before (so heights do not jump while panning). */
  minDepths?: ReadonlyMap<number, number>;
  /** Only tracks whose name, or whose process's name, contains this text (any case). */
  filter?: string;
  /** Whether a track is folded to its outermost slices. */
  folded?: (track: number) => boolean;
}

/** Whether a track passes the track filter: its name or its process's name or label holds `filter` (any case). */
export function trackMatches(filter: string, section: SectionInfo, track: TrackInfo): boolean {
  const f = filter.trim().toLowerCase();
  if (!f) return true;
  return track.name.toLowerCase().includes(f) || section.name.toLowerCase().includes(f) || (section.label ?? '').toLowerCase().includes(f);
}

/** The host of a section (the tracks' host for older servers). */
export function sectionHost(tracks: TraceTracks, section: SectionInfo): string {
  return section.host ?? tracks.host;
}

function trackRow(info: TrackInfo, pid: number, top: number, byId: Map<number, ColumnWindow['tracks'][number]>, minDepths: ReadonlyMap<number, number>, isFolded?: (track: number) => boolean): TrackRow {
  const wt = byId.get(info.id);
  const base = info.kind === 'counter' ? COUNTER_DEPTHS : 1;
  const fullDepths = Math.max(base, wt?.depths ?? 0, minDepths.get(info.id) ?? 0);
  const folded = info.kind === 'thread' && fullDepths > 1 && !!isFolded?.(info.id);
  return {
    info,
    pid,
    top,
    depths: folded ? 1 : fullDepths,
    fullDepths,
    folded,
    slices: wt?.slices ?? EMPTY_SLICES,
    hidden: wt?.hidden ?? 0,
    inWindow: wt?.in_window ?? 0,
    maxDur: wt?.maxDur ?? 0,
    samples: wt?.samples,
  };
}

/**
 * Places hosts (with several), sections and tracks top to bottom from y = 0: a header per
 * host and per section, then (unless folded) each track as tall as its deepest slice (at
 * least `minDepths` of the track). Hidden and pinned tracks are left out.
 */
export function layoutSections(tracks: TraceTracks, window: ColumnWindow | null, options: LayoutOptions = {}): Layout {
  const byId = new Map((window?.tracks ?? []).map((t) => [t.id, t]));
  const collapsed = options.collapsed ?? new Set<number>();
  const collapsedHosts = options.collapsedHosts ?? new Set<string>();
  const hidden = options.hidden ?? new Set<number>();
  const pinned = new Set(options.pinned ?? []);
  const minDepths = options.minDepths ?? new Map<number, number>();
  const filter = options.filter ?? '';
  const multiHost = (tracks.hosts?.length ?? 1) > 1;
  const hosts: HostRow[] = [];
  const sections: SectionRow[] = [];
  const rows: TrackRow[] = [];
  let y = 0;
  let currentHost: string | null = null;
  for (const section of tracks.sections) {
    const host = sectionHost(tracks, section);
    const matching = section.tracks.filter((t) => trackMatches(filter, section, t));
    // A filter hides the processes none of whose tracks match.
    if (filter.trim() && matching.length === 0) continue;
    if (multiHost && host !== currentHost) {
      currentHost = host;
      hosts.push({ name: host, top: y, collapsed: collapsedHosts.has(host), sections: tracks.sections.filter((s) => sectionHost(tracks, s) === host).length });
      y += HOST_HEADER;
    }
    if (multiHost && collapsedHosts.has(host)) continue;
    const isCollapsed = collapsed.has(section.pid);
    sections.push({
      pid: section.pid,
      host,
      name: section.name,
      label: section.label,
      top: y,
      collapsed: isCollapsed,
      tracks: section.tracks.length,
      hiddenTracks: section.tracks.filter((t) => hidden.has(t.id)).length,
      pinnedTracks: section.tracks.filter((t) => pinned.has(t.id) && !hidden.has(t.id)).length,
      filteredTracks: section.tracks.length - matching.length,
    });
    y += HEADER;
    if (isCollapsed) continue;
    for (const info of matching) {
      if (hidden.has(info.id) || pinned.has(info.id)) continue;
      const row = trackRow(info, section.pid, y, byId, minDepths, options.folded);
      rows.push(row);
      y += row.depths * ROW + TRACK_GAP;
    }
  }
  return { hosts, sections, rows, height: y + 4 };
}

/** The pinned tracks, in pin order, from y = 0 (no headers). */
export function layoutPinned(tracks: TraceTracks, window: ColumnWindow | null, pinned: readonly number[], minDepths: ReadonlyMap<number, number> = new Map(), folded?: (track: number) => boolean): Layout {
  const byId = new Map((window?.tracks ?? []).map((t) => [t.id, t]));
  const info = new Map(tracks.sections.flatMap((s) => s.tracks.map((t) => [t.id, { t, pid: s.pid }] as const)));
  const rows: TrackRow[] = [];
  let y = 0;
  for (const id of pinned) {
    const found = info.get(id);
    if (!found) continue;
    const row = { ...trackRow(found.t, found.pid, y, byId, minDepths, folded), pinned: true };
    rows.push(row);
    y += row.depths * ROW + TRACK_GAP;
  }
  return { hosts: [], sections: [], rows, height: rows.length ? y + 2 : 0 };
}

/** The track row at content height `y`, if any. */
export function rowAt(rows: readonly TrackRow[], y: number): TrackRow | null {
  for (const r of rows) if (y >= r.top && y < r.top + r.depths * ROW) return r;
  return null;
}

/** Tracks (threads and counters) whose rows intersect the vertical band `[y0, y1]` (area selection). */
export function tracksInBand(rows: readonly TrackRow[], y0: number, y1: number): number[] {
  const [a, b] = y0 <= y1 ? [y0, y1] : [y1, y0];
  return rows.filter((r) => r.top <= b && r.top + r.depths * ROW >= a).map((r) => r.info.id);
}

/**
 * Ids of the tracks to request: all when nothing is folded, hidden or pinned away, else
 * the shown ones (pinned tracks included).
 */
export function visibleTrackIds(tracks: TraceTracks, options: LayoutOptions | ReadonlySet<number> = {}): number[] | null {
  const o: LayoutOptions = options instanceof Set ? { collapsed: options } : (options as LayoutOptions);
  const collapsed = o.collapsed ?? new Set<number>();
  const collapsedHosts = o.collapsedHosts ?? new Set<string>();
  const hidden = o.hidden ?? new Set<number>();
  const pinned = new Set(o.pinned ?? []);
  const filter = o.filter ?? '';
  const shown = (s: SectionInfo) => !collapsed.has(s.pid) && !collapsedHosts.has(sectionHost(tracks, s));
  const anyFolded = tracks.sections.some((s) => !shown(s)) || hidden.size > 0 || filter.trim() !== '';
  if (!anyFolded) return null;
  return tracks.sections.flatMap((s) => s.tracks.filter((t) => pinned.has(t.id) || (shown(s) && !hidden.has(t.id) && trackMatches(filter, s, t))).map((t) => t.id));
}

/** Thread track ids of the collapsed sections shown (their headers draw their activity), by section. */
export function collapsedTrackIds(tracks: TraceTracks, options: LayoutOptions): Map<number, number[]> {
  const out = new Map<number, number[]>();
  const collapsedHosts = options.collapsedHosts ?? new Set<string>();
  for (const s of tracks.sections) {
    if (!options.collapsed?.has(s.pid) || collapsedHosts.has(sectionHost(tracks, s))) continue;
    const ids = s.tracks.filter((t) => t.kind === 'thread' && trackMatches(options.filter ?? '', s, t)).map((t) => t.id);
    if (ids.length) out.set(s.pid, ids);
  }
  return out;
}

/** The section of a track and its index in the track list. */
export function sectionOf(tracks: TraceTracks, trackId: number): SectionInfo | undefined {
  return tracks.sections.find((s) => s.tracks.some((t) => t.id === trackId));
}

// ---- counters --------------------------------------------------------------------------

/**
 * A counter's area as a step chart: each sample holds its value until the next one; the
 * last sample holds until `end`. Points are `[ps, value]`; `max` is the largest value (for
 * the vertical scale; 0 when all are ≤ 0).
 */
export function counterSteps(samples: readonly [number, number][], end: number): { points: [number, number][]; max: number } {
  const points: [number, number][] = [];
  let max = 0;
  samples.forEach(([ts, v], i) => {
    const next = samples[i + 1]?.[0] ?? Math.max(end, ts);
    points.push([ts, v], [next, v]);
    if (v > max) max = v;
  });
  return { points, max };
}

// ---- flows -----------------------------------------------------------------------------

/** Where an event is drawn: its track row and depth (null when its track is not shown). */
export type Locate = (e: EventRef) => { y: number } | null;

export interface FlowArrow {
  from: { ps: number; y: number };
  to: { ps: number; y: number };
}

/**
 * Arrows between consecutive events of a flow (sorted by time): from the end of one event
 * (its start for a zero-length one) to the start of the next. Events of hidden tracks are
 * skipped, and the arrow goes on to the next shown event.
 */
export function flowArrows(events: readonly EventRef[], locate: Locate): FlowArrow[] {
  const placed = [...events]
    .sort((a, b) => a.ts_ps - b.ts_ps || a.id - b.id)
    .map((e) => ({ e, at: locate(e) }))
    .filter((p): p is { e: EventRef; at: { y: number } } => p.at !== null);
  const arrows: FlowArrow[] = [];
  for (let i = 1; i < placed.length; i++) {
    const a = placed[i - 1];
    const b = placed[i];
    if (!a || !b) continue;
    arrows.push({ from: { ps: Math.min(a.e.ts_ps + a.e.dur_ps, Math.max(b.e.ts_ps, a.e.ts_ps)), y: a.at.y }, to: { ps: b.e.ts_ps, y: b.at.y } });
  }
  return arrows;
}

// ---- aggregates ------------------------------------------------------------------------

export type AggregateKey = 'name' | 'count' | 'total_ps' | 'self_ps' | 'avg_ps' | 'min_ps' | 'max_ps';

/** Aggregate rows sorted by a column (ties by name, so the order is stable). */
export function sortAggregate(rows: readonly AggregateRow[], key: AggregateKey, descending: boolean): AggregateRow[] {
  const dir = descending ? -1 : 1;
  return [...rows].sort((a, b) => {
    const c = key === 'name' ? a.name.localeCompare(b.name) : (a[key] ?? 0) - (b[key] ?? 0);
    return c !== 0 ? c * dir : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}

/** Totals of an aggregate: events, summed duration and summed self time. */
export function aggregateTotals(rows: readonly AggregateRow[]): { count: number; total_ps: number; self_ps: number } {
  return rows.reduce((t, r) => ({ count: t.count + r.count, total_ps: t.total_ps + r.total_ps, self_ps: t.self_ps + (r.self_ps ?? 0) }), { count: 0, total_ps: 0, self_ps: 0 });
}

// ---- search ----------------------------------------------------------------------------

/** The window to show a match in: the current length centered on it, or 3× the match when it is longer than the window. */
export function spanForMatch(match: { ts_ps: number; dur_ps: number }, span: Span, bounds: Span): Span {
  const len = Math.max(span.end - span.start, match.dur_ps * 3, MIN_SPAN_PS);
  const mid = match.ts_ps + match.dur_ps / 2;
  return clampSpan({ start: mid - len / 2, end: mid + len / 2 }, bounds);
}

/** The next match index after `current` in direction `step` (wraps around). */
export function stepMatch(current: number, count: number, step: 1 | -1): number {
  if (count <= 0) return -1;
  if (current < 0) return step > 0 ? 0 : count - 1;
  return (current + step + count) % count;
}
