// An area selection's numbers (a time range over some tracks), pure: slices clipped to the
// range (wall time inside it, exact), grouped for the pivot table by any mix of name,
// track, process, category and argument, flows and counters; and the statistics of the
// slices sharing one name (count, total, min / median / max, a histogram).
//
// Wall times are clipped exactly from two sources the trace routes answer fast: the
// per-name aggregate of every slice overlapping the range (whole durations) and the few
// slices that cross its two edges (a window one picosecond wide at each edge): a slice's
// time outside the range is the only difference. Self times clipped to the range need
// every child, which the SQL route gives (see sql_bridge.ts); without it self times are
// the whole slices'.

import type { AggregateRow, ColumnWindow, Span, TraceAggregate } from '../trace';

/** A slice crossing an edge of the range. */
export interface EdgeSlice {
  id: number;
  track: number;
  name: string;
  ts: number;
  dur: number;
}

/** The slices of edge windows (deduplicated by id): those that start before or end after `range`. */
export function edgeSlices(windows: readonly ColumnWindow[], range: Span): EdgeSlice[] {
  const seen = new Map<number, EdgeSlice>();
  for (const w of windows) {
    for (const t of w.tracks) {
      const s = t.slices;
      for (let i = 0; i < s.count; i++) {
        const id = s.id[i] ?? -1;
        const ts = s.ts[i] ?? 0;
        const dur = s.dur[i] ?? 0;
        if (seen.has(id) || (ts >= range.start && ts + dur <= range.end)) continue;
        // Only slices overlapping the range (the window is a picosecond wider).
        if (ts > range.end || ts + dur < range.start) continue;
        seen.set(id, { id, track: t.id, name: w.names[s.name[i] ?? 0] ?? '', ts, dur });
      }
    }
  }
  return [...seen.values()];
}

/** Time of a slice outside `range` (before its start plus after its end). */
export function outside(e: { ts: number; dur: number }, range: Span): number {
  return Math.max(0, range.start - e.ts) + Math.max(0, e.ts + e.dur - range.end);
}

/** One row of the Slices tab and the pivot table. */
export interface SliceStats {
  /** Group values, by dimension (the Slices tab: just the name). */
  keys: string[];
  count: number;
  /** Wall time inside the range (clipped). */
  wall_ps: number;
  /** Self time: inside the range when `selfClipped`, else of the whole slices. */
  self_ps: number | null;
  min_ps: number;
  max_ps: number;
  /** Wall and self from SQL (exact, self clipped to the range). */
  exact?: boolean;
}

/** How many rows' self times are clipped to the range: all, some, none. */
export type SelfClipped = 'all' | 'some' | 'none';

/**
 * Rows refined by SQL's (same keys): where SQL counts as many slices, its exact wall and
 * clipped self times. SQL's `slice` table may name or hold a few slices differently from
 * the trace (derived events, step names): those rows keep the trace's numbers.
 */
export function refineWithSql(rows: readonly SliceStats[], sql: readonly SliceStats[]): { rows: SliceStats[]; clipped: SelfClipped } {
  const byKey = new Map(sql.map((r) => [r.keys.join('\u0000'), r]));
  let n = 0;
  const out = rows.map((r) => {
    const x = byKey.get(r.keys.join('\u0000'));
    if (!x || x.count !== r.count) return r;
    n++;
    return { ...r, wall_ps: x.wall_ps, self_ps: x.self_ps, exact: true };
  });
  return { rows: out, clipped: n === 0 ? 'none' : n === rows.length ? 'all' : 'some' };
}

/**
 * The Slices tab's rows: each name's slices overlapping the range with their wall time
 * clipped to it (the aggregate's whole durations minus the edge slices' time outside).
 * Rows by clipped wall time, largest first, then name.
 */
export function clippedSlices(a: TraceAggregate, edges: readonly EdgeSlice[], range: Span): SliceStats[] {
  const cut = new Map<string, number>();
  for (const e of edges) cut.set(e.name, (cut.get(e.name) ?? 0) + outside(e, range));
  return a.rows
    .map((r: AggregateRow) => ({ keys: [r.name], count: r.count, wall_ps: Math.max(0, r.total_ps - (cut.get(r.name) ?? 0)), self_ps: r.self_ps ?? null, min_ps: r.min_ps, max_ps: r.max_ps }))
    .sort(byWall);
}

export function byWall(a: SliceStats, b: SliceStats): number {
  return b.wall_ps - a.wall_ps || (a.keys.join('\u0000') < b.keys.join('\u0000') ? -1 : 1);
}

/** Totals of rows. */
export function totals(rows: readonly SliceStats[]): { count: number; wall_ps: number; self_ps: number | null } {
  let count = 0;
  let wall = 0;
  let self: number | null = 0;
  for (const r of rows) {
    count += r.count;
    wall += r.wall_ps;
    self = self === null || r.self_ps === null ? null : self + r.self_ps;
  }
  return { count, wall_ps: wall, self_ps: self };
}

/** Pivot dimensions: the slice's name, track, process, category, or an argument's value (`arg:KEY`). */
export type Dimension = 'name' | 'track' | 'process' | 'category' | `arg:${string}`;

export const BASIC_DIMENSIONS: readonly Dimension[] = ['name', 'track', 'process'];

/** Whether dimensions need the SQL route (categories and arguments are not in the trace index). */
export function needsSql(dims: readonly Dimension[]): boolean {
  return dims.some((d) => d === 'category' || d.startsWith('arg:'));
}

/** Parses `name,process,arg:hlo_op` (the URL's pivot); unknown names are dropped, duplicates too. */
export function parseDimensions(text: string): Dimension[] {
  const out: Dimension[] = [];
  for (const part of text.split(',').map((t) => t.trim())) {
    const ok = part === 'name' || part === 'track' || part === 'process' || part === 'category' || (part.startsWith('arg:') && part.length > 4 && part.length <= 100);
    if (ok && !out.includes(part as Dimension)) out.push(part as Dimension);
  }
  return out;
}

export function dimensionLabel(d: Dimension): string {
  if (d.startsWith('arg:')) return `argument ${d.slice(4)}`;
  return { name: 'name', track: 'track', process: 'process', category: 'category' }[d as 'name' | 'track' | 'process' | 'category'];
}

/** One track's per-name aggregate, for pivoting by name, track and process. */
export interface TrackAggregate {
  track: number;
  rows: readonly AggregateRow[];
}

/**
 * Pivot rows from per-track aggregates (dimensions among name, track, process): groups
 * merged, wall times clipped with the edge slices (per track and name), self times whole.
 */
export function pivotFromTracks(per: readonly TrackAggregate[], edges: readonly EdgeSlice[], range: Span, dims: readonly Dimension[], labels: { track(id: number): string; process(id: number): string }): SliceStats[] {
  const cut = new Map<string, number>();
  for (const e of edges) {
    const k = `${e.track}\u0000${e.name}`;
    cut.set(k, (cut.get(k) ?? 0) + outside(e, range));
  }
  const groups = new Map<string, SliceStats>();
  for (const t of per) {
    for (const r of t.rows) {
      const keys = dims.map((d) => (d === 'name' ? r.name : d === 'track' ? labels.track(t.track) : labels.process(t.track)));
      const k = keys.join('\u0000');
      const wall = Math.max(0, r.total_ps - (cut.get(`${t.track}\u0000${r.name}`) ?? 0));
      const g = groups.get(k);
      if (!g) groups.set(k, { keys, count: r.count, wall_ps: wall, self_ps: r.self_ps ?? null, min_ps: r.min_ps, max_ps: r.max_ps });
      else {
        g.count += r.count;
        g.wall_ps += wall;
        g.self_ps = g.self_ps === null || r.self_ps === undefined ? null : g.self_ps + r.self_ps;
        g.min_ps = Math.min(g.min_ps, r.min_ps);
        g.max_ps = Math.max(g.max_ps, r.max_ps);
      }
    }
  }
  return [...groups.values()].sort(byWall);
}

// ---- slices of the same name ---------------------------------------------------------------

export interface NameStats {
  count: number;
  total_ps: number;
  min_ps: number;
  median_ps: number;
  max_ps: number;
  /** Histogram bins: `[from, to)` duration (ps) and how many fall in it. */
  bins: { from: number; to: number; count: number }[];
}

/** Statistics of durations: count, total, min / median / max and a histogram of `binCount` bins (log-spaced when they span over 20×). */
export function durationStats(durs: readonly number[], binCount = 20): NameStats | null {
  if (!durs.length) return null;
  const sorted = [...durs].sort((a, b) => a - b);
  const n = sorted.length;
  const min = sorted[0] ?? 0;
  const max = sorted[n - 1] ?? 0;
  const median = n % 2 ? (sorted[(n - 1) / 2] ?? 0) : ((sorted[n / 2 - 1] ?? 0) + (sorted[n / 2] ?? 0)) / 2;
  const total = sorted.reduce((s, d) => s + d, 0);
  const bins: NameStats['bins'] = [];
  if (max === min) bins.push({ from: min, to: max, count: n });
  else {
    const log = min > 0 && max / min > 20;
    const edge = (i: number) => (log ? min * Math.pow(max / min, i / binCount) : min + ((max - min) * i) / binCount);
    for (let i = 0; i < binCount; i++) bins.push({ from: edge(i), to: edge(i + 1), count: 0 });
    for (const d of sorted) {
      let i = log ? Math.floor((Math.log(d / min) / Math.log(max / min)) * binCount) : Math.floor(((d - min) / (max - min)) * binCount);
      i = Math.min(binCount - 1, Math.max(0, i));
      const b = bins[i];
      if (b) b.count++;
    }
  }
  return { count: n, total_ps: total, min_ps: min, median_ps: median, max_ps: max, bins };
}

// ---- counters ----------------------------------------------------------------------------

export interface CounterStats {
  track: number;
  samples: number;
  first: number;
  last: number;
  min: number;
  max: number;
  /** Time-weighted mean over the range (each value holds until the next sample). */
  mean: number;
}

/** A counter's samples in `range` (the value in force at its start counts from there). */
export function counterStats(track: number, samples: readonly [number, number][], range: Span): CounterStats | null {
  const sorted = [...samples].sort((a, b) => a[0] - b[0]);
  let prior: [number, number] | null = null;
  const inside: [number, number][] = [];
  for (const s of sorted) {
    if (s[0] < range.start) prior = s;
    else if (s[0] <= range.end) inside.push(s);
  }
  const points = prior ? [[range.start, prior[1]] as [number, number], ...inside] : inside;
  if (!points.length) return null;
  const values = points.map((p) => p[1]);
  let area = 0;
  points.forEach(([ts, v], i) => {
    const next = points[i + 1]?.[0] ?? range.end;
    area += v * Math.max(0, next - ts);
  });
  const len = range.end - (points[0]?.[0] ?? range.start);
  return {
    track,
    samples: inside.length,
    first: values[0] ?? 0,
    last: values[values.length - 1] ?? 0,
    min: Math.min(...values),
    max: Math.max(...values),
    mean: len > 0 ? area / len : (values[0] ?? 0),
  };
}
