// The pure parts of the trace viewer: the LOD API's types, layout of slices by nesting
// depth, time <-> pixel mapping, pan/zoom of the window, the window in the URL, colors.

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

export interface WindowEvent {
  id: number;
  /** Index into the window's `names`. */
  name: number;
  ts_ps: number;
  dur_ps: number;
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
  args: Record<string, unknown>;
}

/** A time window `[start, end]` in picoseconds on the profile's clock. */
export interface Span {
  start: number;
  end: number;
}

/** The smallest window the viewer zooms to (1 ns). */
export const MIN_SPAN_PS = 1000;

/**
 * The nesting depth of each event, for events in XProf's order (start ascending, longer
 * first): an event is a child of the last still-open event that contains its start.
 */
export function layoutDepths(events: readonly { ts_ps: number; dur_ps: number }[]): number[] {
  const ends: number[] = [];
  return events.map((e) => {
    while (ends.length && e.ts_ps >= (ends[ends.length - 1] ?? Infinity)) ends.pop();
    const depth = ends.length;
    ends.push(e.ts_ps + Math.max(0, e.dur_ps));
    // A zero-length event never contains anything: close it at once.
    if (e.dur_ps <= 0) ends.pop();
    return depth;
  });
}

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

/** A stable color for a name (FNV-1a hash to a hue). */
export function colorFor(name: string): string {
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

/** A slice placed on the canvas. */
export interface Slice {
  event: WindowEvent;
  track: number;
  depth: number;
}

/** Events of a window track with their depths. */
export function layoutTrack(track: WindowTrack): Slice[] {
  const events = track.events ?? [];
  const depths = layoutDepths(events);
  return events.map((event, i) => ({ event, track: track.id, depth: depths[i] ?? 0 }));
}

/** The slice drawn at time `ps` and `depth` (the shortest when several match), given a minimum width in ps. */
export function sliceAt(slices: readonly Slice[], depth: number, ps: number, minPs: number): Slice | null {
  let best: Slice | null = null;
  for (const s of slices) {
    if (s.depth !== depth) continue;
    const end = s.event.ts_ps + Math.max(s.event.dur_ps, minPs);
    if (ps >= s.event.ts_ps && ps <= end && (!best || s.event.dur_ps < best.event.dur_ps)) best = s;
  }
  return best;
}
