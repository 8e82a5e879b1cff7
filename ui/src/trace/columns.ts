// A trace window as columns: each track's events in typed arrays (id, name, start,
// duration, nesting depth) instead of one object per event. A window of a large trace
// holds tens of thousands of events; as columns it is built off the main thread (the
// window worker) and handed over without copying, so panning never stalls on parsing.

import type { TraceWindow, WindowTrack } from '../trace';

/** A track's events in the window, sorted by start, with their nesting depths. */
export interface TrackSlices {
  readonly count: number;
  readonly id: Float64Array;
  /** Index into the window's `names`. */
  readonly name: Uint32Array;
  readonly ts: Float64Array;
  readonly dur: Float64Array;
  readonly depth: Uint16Array;
}

export interface ColumnTrack {
  id: number;
  exact: boolean;
  in_window: number;
  hidden: number;
  slices: TrackSlices;
  /** Deepest slice + 1 (0 without slices). */
  depths: number;
  /** Longest slice (ps). */
  maxDur: number;
  samples?: [number, number][];
}

/** `/oxprof/api/trace/window` with its tracks as columns. */
export interface ColumnWindow {
  start_ps: number;
  end_ps: number;
  resolution_ps: number;
  names: string[];
  tracks: ColumnTrack[];
  total_in_window: number;
  total_returned: number;
  total_hidden: number;
}

export const EMPTY_SLICES: TrackSlices = {
  count: 0,
  id: new Float64Array(0),
  name: new Uint32Array(0),
  ts: new Float64Array(0),
  dur: new Float64Array(0),
  depth: new Uint16Array(0),
};

/**
 * Nesting depth of each event, in XProf's order (start ascending, longer first): the
 * number of earlier events still open when it starts, so an event is a child of the last
 * open one containing its start. A zero-length event never contains anything.
 */
function depthsOf(ts: Float64Array, dur: Float64Array, out: Uint16Array): number {
  const ends: number[] = [];
  let deepest = 0;
  for (let i = 0; i < ts.length; i++) {
    const start = ts[i] ?? 0;
    const d = dur[i] ?? 0;
    while (ends.length && start >= (ends[ends.length - 1] ?? Infinity)) ends.pop();
    const depth = Math.min(ends.length, 0xffff);
    out[i] = depth;
    if (depth + 1 > deepest) deepest = depth + 1;
    if (d > 0) ends.push(start + d);
  }
  return deepest;
}

/** One window track as columns, with depths and its longest slice. */
export function trackColumns(t: WindowTrack): ColumnTrack {
  const events = t.events ?? [];
  const n = events.length;
  const slices = {
    count: n,
    id: new Float64Array(n),
    name: new Uint32Array(n),
    ts: new Float64Array(n),
    dur: new Float64Array(n),
    depth: new Uint16Array(n),
  };
  let maxDur = 0;
  for (let i = 0; i < n; i++) {
    const e = events[i];
    if (!e) continue;
    slices.id[i] = e.id;
    slices.name[i] = e.name;
    slices.ts[i] = e.ts_ps;
    slices.dur[i] = e.dur_ps;
    if (e.dur_ps > maxDur) maxDur = e.dur_ps;
  }
  const depths = depthsOf(slices.ts, slices.dur, slices.depth);
  return { id: t.id, exact: t.exact, in_window: t.in_window, hidden: t.hidden, slices, depths, maxDur, samples: t.samples };
}

/** The window's tracks as columns. */
export function windowColumns(w: TraceWindow): ColumnWindow {
  return {
    start_ps: w.start_ps,
    end_ps: w.end_ps,
    resolution_ps: w.resolution_ps,
    names: w.names,
    tracks: w.tracks.map(trackColumns),
    total_in_window: w.total_in_window,
    total_returned: w.total_returned,
    total_hidden: w.total_hidden,
  };
}

/** The buffers of a window's columns (moved, not copied, to another thread). */
export function columnBuffers(w: ColumnWindow): ArrayBuffer[] {
  const out: ArrayBuffer[] = [];
  for (const t of w.tracks) {
    const s = t.slices;
    for (const a of [s.id, s.name, s.ts, s.dur, s.depth]) if (a.byteLength) out.push(a.buffer as ArrayBuffer);
  }
  return out;
}

/** Index of the first slice that can overlap a view starting at `start`: the first one starting at or after `start - maxDur`. */
export function firstVisible(slices: TrackSlices, start: number, maxDur: number): number {
  const from = start - maxDur;
  let lo = 0;
  let hi = slices.count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((slices.ts[mid] ?? Infinity) < from) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The slice drawn at time `ps` and `depth` (the shortest when several match), given a minimum width in ps; -1 when none. */
export function sliceAt(slices: TrackSlices, depth: number, ps: number, minPs: number): number {
  let best = -1;
  for (let i = 0; i < slices.count; i++) {
    if (slices.depth[i] !== depth) continue;
    const ts = slices.ts[i] ?? 0;
    const dur = slices.dur[i] ?? 0;
    if (ps >= ts && ps <= ts + Math.max(dur, minPs) && (best < 0 || dur < (slices.dur[best] ?? Infinity))) best = i;
  }
  return best;
}

/** Index of the slice with event id `id`; -1 when it is not in the window. */
export function sliceIndex(slices: TrackSlices, id: number): number {
  for (let i = 0; i < slices.count; i++) if (slices.id[i] === id) return i;
  return -1;
}

/**
 * The slice before (`step` −1) or after (+1) slice `index` at the same depth (keys `[` and
 * `]`); -1 when there is none in the window.
 */
export function neighbourSlice(slices: TrackSlices, index: number, step: 1 | -1): number {
  const depth = slices.depth[index];
  if (depth === undefined) return -1;
  for (let i = index + step; i >= 0 && i < slices.count; i += step) if (slices.depth[i] === depth) return i;
  return -1;
}
