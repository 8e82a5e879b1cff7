// The pure parts of the trace viewer: the LOD API's types, layout of slices by nesting
// depth and of tracks in sections, time <-> pixel mapping, pan/zoom of the window, the
// window in the URL, colors, flow arrows, aggregate tables. The page (pages/trace_viewer.ts)
// does the IO and the drawing; trace/view.ts holds the rest of the view state in the URL;
// trace/columns.ts holds a window's events as columns (built by the window worker).

import { type ColumnWindow, EMPTY_SLICES, type TrackSlices } from './trace/columns';

export { type ColumnWindow, type TrackSlices, firstVisible, sliceAt, sliceIndex, trackColumns, windowColumns } from './trace/columns';

/** `/oxprof/api/trace/tracks`. */
export interface TraceTracks {
  host: string;
  start_ps: number;
  end_ps: number;
  num_events: number;
  sections: { pid: number; name: string; tracks: TrackInfo[] }[];
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
}

/** `/oxprof/api/trace/search`. */
export interface SearchResult {
  prefix: string;
  total: number;
  truncated: boolean;
  matches: EventRef[];
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

/** A duration in picoseconds, human-readable (`1.23 ms`). */
export function formatDuration(ps: number): string {
  const abs = Math.abs(ps);
  const units: [number, string][] = [
    [1e12, 's'],
    [1e9, 'ms'],
    [1e6, 'µs'],
    [1e3, 'ns'],
  ];
  for (const [scale, unit] of units) {
    if (abs >= scale) return `${trim(ps / scale)} ${unit}`;
  }
  return `${ps} ps`;
}

/** Picoseconds as exact microseconds (`68.452 µs`), for the details pane. */
export function formatMicros(ps: number): string {
  return `${(ps / 1e6).toLocaleString('en-US', { maximumFractionDigits: 6 })} µs`;
}

function trim(v: number): string {
  const s = Math.abs(v) >= 100 ? v.toFixed(1) : Math.abs(v) >= 10 ? v.toFixed(2) : v.toFixed(3);
  return s.replace(/\.?0+$/, '');
}

// ---- tracks in sections ----------------------------------------------------------------

/** Row height of one nesting depth (px). */
export const ROW = 18;
/** Height of a section header (px). */
export const HEADER = 22;
/** Height of the time axis above the first section (px). */
export const AXIS = 24;
/** Gap below each track (px). */
export const TRACK_GAP = 2;
/** Depths drawn for a counter track (its area chart's height). */
export const COUNTER_DEPTHS = 2;

export interface SectionRow {
  pid: number;
  name: string;
  top: number;
  collapsed: boolean;
  /** Number of tracks (shown or not). */
  tracks: number;
}

export interface TrackRow {
  info: TrackInfo;
  pid: number;
  top: number;
  depths: number;
  slices: TrackSlices;
  hidden: number;
  inWindow: number;
  /** Longest slice (ps): slices overlapping a time start at most this much before it. */
  maxDur: number;
  samples?: [number, number][];
}

export interface Layout {
  sections: SectionRow[];
  rows: TrackRow[];
  height: number;
}

/**
 * Places sections and tracks top to bottom: a header per section, then (unless the
 * section is collapsed) each track as tall as its deepest slice (at least `minDepths`
 * of the track, so heights do not jump while panning).
 */
export function layoutSections(
  tracks: TraceTracks,
  window: ColumnWindow | null,
  collapsed: ReadonlySet<number>,
  minDepths: ReadonlyMap<number, number> = new Map(),
): Layout {
  const byId = new Map((window?.tracks ?? []).map((t) => [t.id, t]));
  const sections: SectionRow[] = [];
  const rows: TrackRow[] = [];
  let y = AXIS;
  for (const section of tracks.sections) {
    const isCollapsed = collapsed.has(section.pid);
    sections.push({ pid: section.pid, name: section.name, top: y, collapsed: isCollapsed, tracks: section.tracks.length });
    y += HEADER;
    if (isCollapsed) continue;
    for (const info of section.tracks) {
      const wt = byId.get(info.id);
      const base = info.kind === 'counter' ? COUNTER_DEPTHS : 1;
      const depths = Math.max(base, wt?.depths ?? 0, minDepths.get(info.id) ?? 0);
      rows.push({
        info,
        pid: section.pid,
        top: y,
        depths,
        slices: wt?.slices ?? EMPTY_SLICES,
        hidden: wt?.hidden ?? 0,
        inWindow: wt?.in_window ?? 0,
        maxDur: wt?.maxDur ?? 0,
        samples: wt?.samples,
      });
      y += depths * ROW + TRACK_GAP;
    }
  }
  return { sections, rows, height: y + 4 };
}

/** The track row at canvas height `y`, if any. */
export function rowAt(rows: readonly TrackRow[], y: number): TrackRow | null {
  for (const r of rows) if (y >= r.top && y < r.top + r.depths * ROW) return r;
  return null;
}

/** Thread tracks whose rows intersect the vertical band `[y0, y1]` (drag selection). */
export function tracksInBand(rows: readonly TrackRow[], y0: number, y1: number): number[] {
  const [a, b] = y0 <= y1 ? [y0, y1] : [y1, y0];
  return rows.filter((r) => r.info.kind === 'thread' && r.top <= b && r.top + r.depths * ROW >= a).map((r) => r.info.id);
}

/** Ids of the tracks to request: all when no section is collapsed, else the shown ones. */
export function visibleTrackIds(tracks: TraceTracks, collapsed: ReadonlySet<number>): number[] | null {
  if (!tracks.sections.some((s) => collapsed.has(s.pid))) return null;
  return tracks.sections.filter((s) => !collapsed.has(s.pid)).flatMap((s) => s.tracks.map((t) => t.id));
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

export type AggregateKey = 'name' | 'count' | 'total_ps' | 'avg_ps' | 'min_ps' | 'max_ps';

/** Aggregate rows sorted by a column (ties by name, so the order is stable). */
export function sortAggregate(rows: readonly AggregateRow[], key: AggregateKey, descending: boolean): AggregateRow[] {
  const dir = descending ? -1 : 1;
  return [...rows].sort((a, b) => {
    const c = key === 'name' ? a.name.localeCompare(b.name) : a[key] - b[key];
    return c !== 0 ? c * dir : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}

/** Totals of an aggregate: events and summed duration. */
export function aggregateTotals(rows: readonly AggregateRow[]): { count: number; total_ps: number } {
  return rows.reduce((t, r) => ({ count: t.count + r.count, total_ps: t.total_ps + r.total_ps }), { count: 0, total_ps: 0 });
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
