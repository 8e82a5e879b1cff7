import { describe, expect, it } from 'vitest';
import { type TraceAggregate, type TraceTracks, type TraceWindow, windowColumns } from '../src/trace';
import { clippedSlices, counterStats, durationStats, edgeSlices, outside, parseDimensions, pivotFromTracks, refineWithSql, totals } from '../src/trace/area';
import { nextUp } from '../src/trace/area_panel';
import { debugTrack } from '../src/trace/debug_track';
import { matchTracks, pivotRows, pivotSql } from '../src/trace/sql_bridge';
import { sqlInt, sqlString, timelineColumns } from '../src/sql';

// One track, range [100, 200]: "a" crosses the start (50..150), "b" inside (120..130),
// "c" crosses the end (180..260), "d" spans the whole range (0..300).
const range = { start: 100, end: 200 };
const agg: TraceAggregate = {
  start_ps: 100,
  end_ps: 200,
  tracks: [1],
  num_events: 4,
  rows: [
    { name: 'd', count: 1, total_ps: 300, self_ps: 100, avg_ps: 300, min_ps: 300, max_ps: 300 },
    { name: 'c', count: 1, total_ps: 80, self_ps: 80, avg_ps: 80, min_ps: 80, max_ps: 80 },
    { name: 'a', count: 1, total_ps: 100, self_ps: 90, avg_ps: 100, min_ps: 100, max_ps: 100 },
    { name: 'b', count: 1, total_ps: 10, self_ps: 10, avg_ps: 10, min_ps: 10, max_ps: 10 },
  ],
};
const edge = (at: number): TraceWindow => ({
  start_ps: at,
  end_ps: at + 1,
  resolution_ps: 1,
  names: ['d', 'a', 'c'],
  tracks: [
    {
      id: 1,
      exact: true,
      in_window: 2,
      hidden: 0,
      events: at === 100 ? [{ id: 4, name: 0, ts_ps: 0, dur_ps: 300 }, { id: 1, name: 1, ts_ps: 50, dur_ps: 100 }] : [{ id: 4, name: 0, ts_ps: 0, dur_ps: 300 }, { id: 3, name: 2, ts_ps: 180, dur_ps: 80 }],
    },
  ],
  total_in_window: 2,
  total_returned: 2,
  total_hidden: 0,
});

describe('area selection: slices clipped to the range', () => {
  it('finds the slices crossing the edges once each, and their time outside', () => {
    const edges = edgeSlices([windowColumns(edge(100)), windowColumns(edge(199))], range);
    expect(edges.map((e) => [e.id, e.name]).sort()).toEqual([
      [1, 'a'],
      [3, 'c'],
      [4, 'd'],
    ]);
    expect(outside({ ts: 0, dur: 300 }, range)).toBe(200);
    expect(outside({ ts: 120, dur: 10 }, range)).toBe(0);
  });
  it('subtracts that time from the whole slices: wall times inside the range', () => {
    const edges = edgeSlices([windowColumns(edge(100)), windowColumns(edge(199))], range);
    const rows = clippedSlices(agg, edges, range);
    expect(rows.map((r) => [r.keys[0], r.count, r.wall_ps])).toEqual([
      ['d', 1, 100],
      ['a', 1, 50],
      ['c', 1, 20],
      ['b', 1, 10],
    ]);
    expect(totals(rows)).toMatchObject({ count: 4, wall_ps: 180 });
  });
  it('pivots per-track aggregates by track and process, clipping per track', () => {
    const edges = edgeSlices([windowColumns(edge(100))], range);
    const rows = pivotFromTracks([{ track: 1, rows: agg.rows }, { track: 2, rows: [agg.rows[3]!] }], edges, range, ['process'], { track: (id) => `t${id}`, process: () => 'P' });
    expect(rows).toEqual([{ keys: ['P'], count: 5, wall_ps: 300 - 200 + 80 + 100 - 50 + 10 + 10, self_ps: 290, min_ps: 10, max_ps: 300 }]);
  });
  it('takes SQL’s exact numbers where SQL counts the same slices, and says how many', () => {
    const rows = clippedSlices(agg, [], range);
    const sql = [{ keys: ['a'], count: 1, wall_ps: 50, self_ps: 40, min_ps: 100, max_ps: 100 }, { keys: ['d'], count: 2, wall_ps: 1, self_ps: 1, min_ps: 0, max_ps: 0 }];
    const r = refineWithSql(rows, sql);
    expect(r.clipped).toBe('some');
    expect(r.rows.find((x) => x.keys[0] === 'a')).toMatchObject({ wall_ps: 50, self_ps: 40, exact: true });
    expect(r.rows.find((x) => x.keys[0] === 'd')?.exact).toBeUndefined();
  });
  it('reads pivot dimensions from the URL, dropping junk', () => {
    expect(parseDimensions('name,process,arg:hlo_op,bogus,name,arg:')).toEqual(['name', 'process', 'arg:hlo_op']);
  });
  it('steps past integers beyond 2^53 (PyTorch times in ps)', () => {
    expect(nextUp(100)).toBe(101);
    const t = 519322388068751000;
    expect(nextUp(t)).toBeGreaterThan(t);
  });
});

describe('slices of the same name and counters', () => {
  it('count, total, min / median / max and a histogram', () => {
    const s = durationStats([10, 30, 20, 40]);
    expect(s).toMatchObject({ count: 4, total_ps: 100, min_ps: 10, median_ps: 25, max_ps: 40 });
    expect(s?.bins.reduce((t, b) => t + b.count, 0)).toBe(4);
    expect(durationStats([])).toBeNull();
    expect(durationStats([5, 5])?.bins).toEqual([{ from: 5, to: 5, count: 2 }]);
  });
  it('a counter over a range: the value in force at its start counts from there', () => {
    const c = counterStats(7, [[0, 10], [150, 30]], { start: 100, end: 200 });
    expect(c).toEqual({ track: 7, samples: 1, first: 10, last: 30, min: 10, max: 30, mean: 20 });
  });
});

const tracks: TraceTracks = {
  host: 'h',
  start_ps: 0,
  end_ps: 1,
  num_events: 0,
  sections: [
    {
      pid: 1,
      host: 'h',
      name: 'h /device:GPU:0',
      tracks: [
        { id: 0, kind: 'thread', tid: 7, name: 'stream 7', num_events: 5 },
        { id: 1, kind: 'thread', tid: 8, name: 'XLA Ops', num_events: 5 },
        { id: 2, kind: 'thread', tid: 9, name: 'thread', num_events: 3 },
        { id: 3, kind: 'thread', tid: 10, name: 'thread', num_events: 4 },
      ],
    },
  ],
};

describe('the trace joined to SQL', () => {
  it('matches tracks by host, process and name; among equals by count, then display id', () => {
    const m = matchTracks(tracks, [
      { host: 'h', id: 10, name: 'stream 7', process: '/device:GPU:0', displayId: 7, events: 5 },
      { host: 'h', id: 11, name: 'thread', process: '/device:GPU:0', displayId: 0, events: 4 },
      { host: 'h', id: 12, name: 'thread', process: '/device:GPU:0', displayId: 0, events: 3 },
      { host: 'other', id: 13, name: 'XLA Ops', process: '/device:GPU:0', displayId: 8, events: 5 },
    ]);
    expect([...m]).toEqual([
      [0, { host: 'h', id: 10 }],
      [2, { host: 'h', id: 12 }],
      [3, { host: 'h', id: 11 }],
    ]);
  });
  it('writes the pivot as one statement: clipped wall and self, an argument joined', () => {
    const q = pivotSql([{ host: "h'", id: 10 }], { start: 519322388068751000, end: 519322388068752000 }, ['name', 'arg:hlo_op']);
    expect(q).toContain("host = 'h''' AND track_id IN (10)");
    expect(q).toContain('ts_ps <= 519322388068752000 AND ts_ps + dur_ps >= 519322388068751000');
    expect(q).toContain("a1.key = 'hlo_op'");
    expect(q).toContain('sum(s.wall - coalesce(k.kids, 0)) AS self_ps');
    const rows = pivotRows({ columns: [], rows: [['x', 'h/10', 2, 30, 20, 10, 20], ['x', 'h/11', 1, 5, 5, 5, 5]], row_count: 2, truncated: false, elapsed_ms: 1 }, ['name', 'process'], { track: (k) => k, process: () => 'P' });
    expect(rows).toEqual([{ keys: ['x', 'P'], count: 3, wall_ps: 35, self_ps: 25, min_ps: 5, max_ps: 20 }]);
  });
  it('SQL literals: quotes doubled, integers past 2^53 written out', () => {
    expect(sqlString("it's")).toBe("'it''s'");
    expect(sqlInt(519322388068751000)).toBe('519322388068751000');
    expect(() => sqlInt(1.5)).toThrow();
  });
});

describe('an SQL result as a debug track', () => {
  const answer = {
    columns: [{ name: 'name', type: 'text' }, { name: 'ts', type: 'number' }, { name: 'dur', type: 'number' }, { name: 'id', type: 'number' }],
    rows: [['a', 10, 5, 1], ['b', 11, 2, 2], ['c', 20, 1, 3]],
    row_count: 3,
    truncated: false,
    elapsed_ms: 1,
  };
  it('finds its time, duration, name and slice id columns (ns columns scaled to ps)', () => {
    expect(timelineColumns(answer)).toEqual({ ts: { index: 1, scale: 1000 }, dur: { index: 2, scale: 1000 }, name: 0, host: -1, slice: 3 });
  });
  it('nests the rows by time, with negative ids', () => {
    const d = debugTrack('SELECT …', answer);
    if (d instanceof Error) throw d;
    expect([...d.slices.ts]).toEqual([10_000, 11_000, 20_000]);
    expect([...d.slices.depth]).toEqual([0, 1, 0]);
    expect([...d.slices.id]).toEqual([-1, -2, -3]);
    expect(d.names).toEqual(['a', 'b', 'c']);
    expect(debugTrack('x', { ...answer, columns: answer.columns.map((c) => ({ ...c, name: c.name === 'ts' ? 'start' : c.name })) })).toBeInstanceOf(Error);
  });
});
