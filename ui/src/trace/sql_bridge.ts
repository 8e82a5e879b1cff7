// The trace viewer joined to SQL (`/oxprof/api/query`): which SQL `thread_track` each
// trace track is (same host, process and name, the same number of events; the trace's
// derived lines — XLA Ops of a GPU stream and the like — have none), the queries of an
// area selection (slices clipped to the range with self times, the pivot by any mix of
// name, track, process, category and argument), and an SQL slice found on the timeline.
// Times are the same picoseconds on both sides (the profile's clock).

import { type QueryAnswer, runQuery, sqlInt, sqlString } from '../sql';
import type { SectionInfo, Span, TraceTracks } from '../trace';
import { sectionHost } from '../trace';
import { type Dimension, type SliceStats, byWall } from './area';

/** An SQL thread track. */
export interface SqlTrack {
  host: string;
  id: number;
  name: string;
  process: string;
  displayId: number;
  events: number;
}

/** A trace track's SQL twin. */
export interface SqlRef {
  host: string;
  id: number;
}

/** A section's plane name: its name without the host in front. */
export function planeName(tracks: TraceTracks, s: SectionInfo): string {
  const host = sectionHost(tracks, s);
  return host && s.name.startsWith(`${host} `) ? s.name.slice(host.length + 1) : s.name;
}

/**
 * Trace track id → SQL track, for the tracks both have: the same host, process (plane)
 * name and track name; among several of one name, the one with as many events, else the
 * same display id (the trace's tid), else in order. (The trace may count a few more events
 * on a thread than SQL does: the area selection checks its counts before it trusts SQL.)
 */
export function matchTracks(tracks: TraceTracks, sql: readonly SqlTrack[]): Map<number, SqlRef> {
  const byKey = new Map<string, SqlTrack[]>();
  for (const t of sql) {
    const k = `${t.host}\u0000${t.process}\u0000${t.name}`;
    const list = byKey.get(k);
    if (list) list.push(t);
    else byKey.set(k, [t]);
  }
  const out = new Map<number, SqlRef>();
  for (const s of tracks.sections) {
    const host = sectionHost(tracks, s);
    const plane = planeName(tracks, s);
    for (const t of s.tracks) {
      if (t.kind !== 'thread') continue;
      const list = byKey.get(`${host}\u0000${plane}\u0000${t.name}`);
      if (!list?.length) continue;
      let i = list.findIndex((x) => x.events === t.num_events);
      if (i < 0) i = list.findIndex((x) => x.displayId === t.tid);
      const [hit] = list.splice(Math.max(0, i), 1);
      if (hit) out.set(t.id, { host: hit.host, id: hit.id });
    }
  }
  return out;
}

/** Reads the SQL tracks of a run. */
export async function sqlTracks(run: string): Promise<SqlTrack[]> {
  const a = await runQuery(
    run,
    'SELECT t.host, t.id, t.name, t.display_id, t.event_count, p.name AS process FROM thread_track t JOIN process_track p ON p.id = t.parent_id AND p.host = t.host',
    10_000,
  );
  return a.rows.map((r) => ({ host: String(r[0]), id: Number(r[1]), name: String(r[2] ?? ''), displayId: Number(r[3]), events: Number(r[4]), process: String(r[5] ?? '') }));
}

/** The `WHERE` of slices of some tracks (several hosts) overlapping a range, as the trace counts them. */
function rangeWhere(refs: readonly SqlRef[], range: Span): string {
  const byHost = new Map<string, number[]>();
  for (const r of refs) byHost.set(r.host, [...(byHost.get(r.host) ?? []), r.id]);
  const tracks = [...byHost].map(([host, ids]) => `(host = ${sqlString(host)} AND track_id IN (${ids.map(sqlInt).join(', ')}))`).join(' OR ');
  return `(${tracks}) AND ts_ps <= ${sqlInt(Math.round(range.end))} AND ts_ps + dur_ps >= ${sqlInt(Math.round(range.start))}`;
}

/** The SQL column of a dimension (track and process group by the track, named afterwards). */
function dimensionColumn(d: Dimension, i: number): { select: string; join: string } {
  if (d === 'name') return { select: 's.name', join: '' };
  if (d === 'category') return { select: "coalesce(s.category, '')", join: '' };
  if (d === 'track' || d === 'process') return { select: "s.host || '/' || CAST(s.track_id AS VARCHAR)", join: '' };
  const key = d.slice(4);
  return {
    select: `coalesce(a${i}.string_value, CAST(a${i}.int_value AS VARCHAR), CAST(a${i}.real_value AS VARCHAR), '')`,
    join: `LEFT JOIN args a${i} ON a${i}.arg_set_id = s.arg_set_id AND a${i}.host = s.host AND a${i}.key = ${sqlString(key)}`,
  };
}

/**
 * The pivot of an area selection in SQL: slices of the tracks overlapping the range,
 * grouped by the dimensions; wall times clipped to the range, self times too (a slice's
 * clipped time minus its children's: children are on the same track, so in the
 * selection whenever they overlap it).
 */
export function pivotSql(refs: readonly SqlRef[], range: Span, dims: readonly Dimension[]): string {
  const S = sqlInt(Math.round(range.start));
  const E = sqlInt(Math.round(range.end));
  const cols = dims.map((d, i) => dimensionColumn(d, i));
  const keys = cols.map((c, i) => `${c.select} AS k${i}`);
  return [
    'WITH s AS (',
    `  SELECT id, parent_id, name, category, host, track_id, arg_set_id, dur_ps, least(ts_ps + dur_ps, ${E}) - greatest(ts_ps, ${S}) AS wall`,
    `  FROM slice WHERE ${rangeWhere(refs, range)}`,
    '), k AS (SELECT host, parent_id, sum(wall) AS kids FROM s WHERE parent_id IS NOT NULL GROUP BY host, parent_id)',
    `SELECT ${[...keys, 'count(*) AS n', 'sum(s.wall) AS wall_ps', 'sum(s.wall - coalesce(k.kids, 0)) AS self_ps', 'min(s.dur_ps) AS min_ps', 'max(s.dur_ps) AS max_ps'].join(', ')}`,
    'FROM s LEFT JOIN k ON k.parent_id = s.id AND k.host = s.host',
    ...cols.map((c) => c.join).filter(Boolean),
    `GROUP BY ${cols.map((c) => c.select).join(', ')}`,
    'ORDER BY wall_ps DESC',
  ].join('\n');
}

/** Rows of the pivot query, the track and process keys named (groups of one process merged). */
export function pivotRows(a: QueryAnswer, dims: readonly Dimension[], names: { track(key: string): string; process(key: string): string }): SliceStats[] {
  const groups = new Map<string, SliceStats>();
  const n = dims.length;
  for (const r of a.rows) {
    const keys = dims.map((d, i) => {
      const v = String(r[i] ?? '');
      return d === 'track' ? names.track(v) : d === 'process' ? names.process(v) : v;
    });
    const k = keys.join('\u0000');
    const [count, wall, self, min, max] = [n, n + 1, n + 2, n + 3, n + 4].map((i) => Number(r[i] ?? 0)) as [number, number, number, number, number];
    const g = groups.get(k);
    if (!g) groups.set(k, { keys, count, wall_ps: wall, self_ps: self, min_ps: min, max_ps: max });
    else {
      g.count += count;
      g.wall_ps += wall;
      g.self_ps = (g.self_ps ?? 0) + self;
      g.min_ps = Math.min(g.min_ps, min);
      g.max_ps = Math.max(g.max_ps, max);
    }
  }
  return [...groups.values()].sort(byWall);
}

/** Joins trace tracks to SQL once per page (null when the run's SQL has none of them). */
export class SqlBridge {
  private matched: Promise<Map<number, SqlRef> | null> | null = null;
  private reverse = new Map<string, number>();

  constructor(
    private readonly run: string,
    private readonly tracks: () => TraceTracks | null,
  ) {}

  /** Trace track → SQL track (resolves to null when SQL is not available). */
  map(): Promise<Map<number, SqlRef> | null> {
    this.matched ??= (async () => {
      const t = this.tracks();
      if (!t) return null;
      try {
        const m = matchTracks(t, await sqlTracks(this.run));
        for (const [trace, ref] of m) this.reverse.set(`${ref.host}/${ref.id}`, trace);
        return m.size ? m : null;
      } catch {
        return null;
      }
    })();
    return this.matched;
  }

  /** The trace track of an SQL `host/track_id` key (after map()). */
  traceTrack(key: string): number | undefined {
    return this.reverse.get(key);
  }

  /** The SQL tracks of trace tracks, or null when one of them has no SQL twin. */
  async refs(trackIds: readonly number[]): Promise<SqlRef[] | null> {
    const m = await this.map();
    if (!m) return null;
    const out: SqlRef[] = [];
    for (const id of trackIds) {
      const r = m.get(id);
      if (!r) return null;
      out.push(r);
    }
    return out;
  }

  /** An SQL slice (`host`, `id` of the `slice` table) as its time, duration, name and trace track. */
  async slice(host: string, id: number): Promise<{ ts: number; dur: number; name: string; track: number | undefined } | null> {
    await this.map();
    const a = await runQuery(this.run, `SELECT ts_ps, dur_ps, name, track_id FROM slice WHERE host = ${sqlString(host)} AND id = ${sqlInt(id)}`, 1);
    const r = a.rows[0];
    if (!r) return null;
    return { ts: Number(r[0]), dur: Number(r[1]), name: String(r[2] ?? ''), track: this.traceTrack(`${host}/${Number(r[3])}`) };
  }
}
