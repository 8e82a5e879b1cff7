import { describe, expect, it } from 'vitest';
import {
  HEADER,
  ROW,
  TRACK_GAP,
  type AggregateRow,
  type TraceTracks,
  type TraceWindow,
  aggregateTotals,
  colorFor,
  counterSteps,
  firstVisible,
  flowArrows,
  layoutSections,
  rowAt,
  sortAggregate,
  spanForMatch,
  stepMatch,
  trackColumns,
  windowColumns,
  tracksInBand,
  visibleTrackIds,
} from '../src/trace';
import { viewFromUrl, viewToUrl } from '../src/trace/view';

// Two processes: a device (pid 1: a counter and two threads) and the host (pid 701: one thread).
const tracks: TraceTracks = {
  host: 'h',
  start_ps: 0,
  end_ps: 1000,
  num_events: 7,
  sections: [
    {
      pid: 1,
      name: 'h /device:GPU:0',
      tracks: [
        { id: 0, kind: 'counter', name: 'mem', num_events: 2 },
        { id: 1, kind: 'thread', tid: 1, name: 'XLA Ops', num_events: 3 },
        { id: 2, kind: 'thread', tid: 2, name: 'Steps', num_events: 0 },
      ],
    },
    { pid: 701, name: 'h Host Threads', tracks: [{ id: 3, kind: 'thread', tid: 7, name: 'python', num_events: 2 }] },
  ],
};

const win: TraceWindow = {
  start_ps: 0,
  end_ps: 1000,
  resolution_ps: 1,
  names: ['a', 'b'],
  tracks: [
    { id: 0, exact: true, in_window: 2, hidden: 0, samples: [[0, 1], [500, 3]] },
    {
      id: 1,
      exact: true,
      in_window: 3,
      hidden: 0,
      events: [
        { id: 10, name: 0, ts_ps: 0, dur_ps: 100 },
        { id: 11, name: 1, ts_ps: 10, dur_ps: 10 },
        { id: 12, name: 1, ts_ps: 12, dur_ps: 2 },
      ],
    },
    { id: 3, exact: false, in_window: 5, hidden: 3, events: [{ id: 30, name: 0, ts_ps: 0, dur_ps: 5 }] },
  ],
  total_in_window: 10,
  total_returned: 7,
  total_hidden: 3,
};

describe('sections and tracks layout', () => {
  it('stacks a header per section and each track as deep as its slices', () => {
    const lay = layoutSections(tracks, windowColumns(win));
    expect(lay.sections.map((s) => [s.pid, s.top, s.collapsed])).toEqual([
      [1, 0, false],
      [701, HEADER + (2 * ROW + TRACK_GAP) + (3 * ROW + TRACK_GAP) + (ROW + TRACK_GAP), false],
    ]);
    expect(lay.rows.map((r) => [r.info.id, r.depths, r.hidden])).toEqual([
      [0, 2, 0], // counters: a fixed height
      [1, 3, 0], // three nested slices
      [2, 1, 0], // no events: one row
      [3, 1, 3],
    ]);
    expect(lay.rows[1]?.top).toBe(HEADER + 2 * ROW + TRACK_GAP);
    expect(lay.height).toBe((lay.rows[3]?.top ?? 0) + ROW + TRACK_GAP + 4);
  });
  it('collapsed sections keep their header and drop their tracks', () => {
    const lay = layoutSections(tracks, windowColumns(win), { collapsed: new Set([1]) });
    expect(lay.sections.map((s) => [s.pid, s.collapsed, s.tracks])).toEqual([
      [1, true, 3],
      [701, false, 1],
    ]);
    expect(lay.rows.map((r) => r.info.id)).toEqual([3]);
    expect(lay.sections[1]?.top).toBe(HEADER);
    expect(visibleTrackIds(tracks, new Set([1]))).toEqual([3]);
    expect(visibleTrackIds(tracks, new Set())).toBeNull(); // nothing collapsed: all tracks
  });
  it('keeps a track at least as deep as before (no jumps while panning)', () => {
    const lay = layoutSections(tracks, windowColumns(win), { minDepths: new Map([[3, 4]]) });
    expect(lay.rows.find((r) => r.info.id === 3)?.depths).toBe(4);
  });
  it('finds the row under a point and the thread tracks of a vertical band', () => {
    const lay = layoutSections(tracks, windowColumns(win));
    const [counter, ops, steps, python] = lay.rows;
    expect(rowAt(lay.rows, (ops?.top ?? 0) + 1)?.info.id).toBe(1);
    expect(rowAt(lay.rows, 0)).toBeNull();
    expect(rowAt(lay.rows, (steps?.top ?? 0) + ROW + 1)).toBeNull(); // in the gap
    // The band reaches from the counter into python (counters too: the Counters tab).
    expect(tracksInBand(lay.rows, (counter?.top ?? 0) + 1, (python?.top ?? 0) + 1)).toEqual([0, 1, 2, 3]);
    expect(tracksInBand(lay.rows, (python?.top ?? 0) + 5, (ops?.top ?? 0) + 5)).toEqual([1, 2, 3]); // upward drag
  });
});

describe('drawing only what the view shows', () => {
  it('finds the first slice that can reach into the view (binary search on starts)', () => {
    const { slices } = trackColumns({
      id: 1,
      exact: true,
      in_window: 4,
      hidden: 0,
      events: [
        { id: 1, name: 0, ts_ps: 0, dur_ps: 50 },
        { id: 2, name: 0, ts_ps: 10, dur_ps: 5 },
        { id: 3, name: 0, ts_ps: 60, dur_ps: 5 },
        { id: 4, name: 0, ts_ps: 100, dur_ps: 5 },
      ],
    });
    expect(firstVisible(slices, 40, 50)).toBe(0); // the first slice (0..50) reaches 40
    expect(firstVisible(slices, 70, 5)).toBe(3);
    expect(firstVisible(slices, 61, 5)).toBe(2);
    expect(firstVisible(slices, 1000, 5)).toBe(4);
    expect(firstVisible(trackColumns({ id: 0, exact: true, in_window: 0, hidden: 0 }).slices, 0, 0)).toBe(0);
    expect(layoutSections(tracks, windowColumns(win)).rows.map((r) => r.maxDur)).toEqual([0, 100, 0, 5]);
  });
});

describe('counters as area charts', () => {
  it('holds each value until the next sample, the last one until the end', () => {
    expect(counterSteps([[0, 1], [500, 3]], 1000)).toEqual({ points: [[0, 1], [500, 1], [500, 3], [1000, 3]], max: 3 });
    expect(counterSteps([], 10)).toEqual({ points: [], max: 0 });
    expect(counterSteps([[5, -2]], 10).max).toBe(0);
  });
});

describe('flow arrows', () => {
  const e = (id: number, track: number, ts_ps: number, dur_ps: number) => ({ id, track, name: 'f', ts_ps, dur_ps });
  it('link consecutive events by time, from the end of one to the start of the next', () => {
    const y = (ev: { track: number }) => ({ y: ev.track * 10 });
    expect(flowArrows([e(2, 3, 50, 5), e(1, 1, 0, 20)], y)).toEqual([{ from: { ps: 20, y: 10 }, to: { ps: 50, y: 30 } }]);
    // A target starting inside the source: the arrow starts at the target's start.
    expect(flowArrows([e(1, 1, 0, 100), e(2, 2, 40, 5)], y)).toEqual([{ from: { ps: 40, y: 10 }, to: { ps: 40, y: 20 } }]);
  });
  it('skip events of hidden tracks', () => {
    const shownOnly = (ev: { track: number }) => (ev.track === 2 ? null : { y: ev.track });
    expect(flowArrows([e(1, 1, 0, 0), e(2, 2, 5, 0), e(3, 3, 9, 0)], shownOnly)).toEqual([{ from: { ps: 0, y: 1 }, to: { ps: 9, y: 3 } }]);
    expect(flowArrows([e(1, 1, 0, 0)], shownOnly)).toEqual([]);
  });
});

describe('aggregate tables', () => {
  const rows: AggregateRow[] = [
    { name: 'b', count: 2, total_ps: 30, avg_ps: 15, min_ps: 10, max_ps: 20 },
    { name: 'a', count: 1, total_ps: 30, avg_ps: 30, min_ps: 30, max_ps: 30 },
    { name: 'c', count: 5, total_ps: 5, avg_ps: 1, min_ps: 1, max_ps: 1 },
  ];
  it('sorts by any column, ties by name', () => {
    expect(sortAggregate(rows, 'total_ps', true).map((r) => r.name)).toEqual(['a', 'b', 'c']);
    expect(sortAggregate(rows, 'count', true).map((r) => r.name)).toEqual(['c', 'b', 'a']);
    expect(sortAggregate(rows, 'avg_ps', false).map((r) => r.name)).toEqual(['c', 'b', 'a']);
    expect(sortAggregate(rows, 'name', false).map((r) => r.name)).toEqual(['a', 'b', 'c']);
    expect(rows.map((r) => r.name)).toEqual(['b', 'a', 'c']); // input untouched
  });
  it('totals count and duration', () => {
    expect(aggregateTotals(rows)).toEqual({ count: 8, total_ps: 65, self_ps: 0 });
    expect(aggregateTotals([{ name: 'x', count: 1, total_ps: 10, self_ps: 4, avg_ps: 10, min_ps: 10, max_ps: 10 }])).toEqual({ count: 1, total_ps: 10, self_ps: 4 });
    expect(aggregateTotals([])).toEqual({ count: 0, total_ps: 0, self_ps: 0 });
  });
});

describe('search navigation', () => {
  const bounds = { start: 0, end: 1_000_000 };
  it('centers the window on a match, widening it for long matches', () => {
    expect(spanForMatch({ ts_ps: 500_000, dur_ps: 10 }, { start: 0, end: 1000 }, bounds)).toEqual({ start: 499_505, end: 500_505 });
    expect(spanForMatch({ ts_ps: 100_000, dur_ps: 10_000 }, { start: 0, end: 1000 }, bounds)).toEqual({ start: 90_000, end: 120_000 });
    expect(spanForMatch({ ts_ps: 999_990, dur_ps: 10 }, { start: 0, end: 1000 }, bounds)).toEqual({ start: 999_000, end: 1_000_000 });
  });
  it('steps through matches and wraps around', () => {
    expect(stepMatch(-1, 3, 1)).toBe(0);
    expect(stepMatch(-1, 3, -1)).toBe(2);
    expect(stepMatch(2, 3, 1)).toBe(0);
    expect(stepMatch(0, 3, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
  });
});

describe('view state in the URL', () => {
  const from = (v: Record<string, string>) => viewFromUrl((k) => v[k] ?? '');
  it('defaults to nothing selected and the select tool', () => {
    expect(from({})).toEqual({ selected: null, range: null, timing: null, flags: [], trackFilter: '', areaTab: '', pivot: '', debugSql: '', search: '', searchArgs: false, collapsed: new Set(), collapsedHosts: new Set(), hidden: new Set(), pinned: [], trackFold: new Set(), hosts: [], tool: 'select' });
    expect(viewToUrl(from({}))).toEqual({ sel: null, range: null, range_tracks: null, timing: null, flags: null, track_q: null, area_tab: null, pivot: null, debug_sql: null, q: null, q_args: null, collapsed: null, collapsed_hosts: null, hidden_tracks: null, pinned: null, track_fold: null, hosts: null, tool_mode: null });
  });
  it('round-trips selection, range, timing, search, folded, hidden and pinned tracks, hosts and tool', () => {
    const url = { sel: '17179869184', range: '100_200', range_tracks: '1,3', timing: '5_50', q: 'dot', q_args: '1', collapsed: '701,1', collapsed_hosts: 'a,b', hidden_tracks: '2,4', pinned: '9,3', hosts: 'b,a', tool_mode: 'timing' };
    const v = from(url);
    expect(v.selected).toBe(17179869184);
    expect(v.range).toEqual({ span: { start: 100, end: 200 }, tracks: [1, 3] });
    expect(v.timing).toEqual({ start: 5, end: 50 });
    expect(v.search).toBe('dot');
    expect([...v.collapsed]).toEqual([701, 1]);
    expect(v.tool).toBe('timing');
    expect(v.searchArgs).toBe(true);
    expect(v.pinned).toEqual([9, 3]); // pin order kept
    expect(v.hosts).toEqual(['b', 'a']);
    expect(viewToUrl(v)).toEqual({ ...url, collapsed: '1,701', flags: null, track_q: null, area_tab: null, pivot: null, debug_sql: null, track_fold: null });
  });
  it('ignores junk', () => {
    const v = from({ sel: 'x', range: '200_100', range_tracks: '1', timing: 'a_b', collapsed: 'x,2', tool_mode: 'lasso' });
    expect(v).toEqual({ ...{ selected: null, range: null, timing: null, flags: [], trackFilter: '', areaTab: '', pivot: '', debugSql: '', search: '', searchArgs: false, collapsed: new Set(), collapsedHosts: new Set(), hidden: new Set(), pinned: [], trackFold: new Set(), hosts: [], tool: 'select' }, collapsed: new Set([2]) });
    expect(from({ range: '1_2' }).range).toBeNull(); // a range needs its tracks
  });
});

describe('stable colors', () => {
  it('the same name always gets the same color (cached or not)', () => {
    const first = colorFor('fusion.42');
    for (let i = 0; i < 3; i++) expect(colorFor('fusion.42')).toBe(first);
    expect(colorFor('fusion.43')).not.toBe(first);
  });
});

describe('slice labels are readable (contrast ≥ 4.5:1)', () => {
  it('black or white by the slice color, for every color the viewer uses and any other', async () => {
    const { contrast, labelColorFor, luminance } = await import('../src/trace');
    for (let i = 0; i < 2000; i++) {
      const c = colorFor(`name-${i}`);
      expect(contrast(labelColorFor(c), c), c).toBeGreaterThanOrEqual(4.5);
    }
    for (const c of ['#000000', '#ffffff', '#777777', 'hsl(240, 100%, 50%)', 'hsl(60, 100%, 50%)', '#1a66c9']) {
      expect(contrast(labelColorFor(c), c), c).toBeGreaterThanOrEqual(4.5);
    }
    expect(labelColorFor('hsl(240, 55%, 55%)')).toBe('#fff'); // a dark blue: white text
    expect(labelColorFor('hsl(60, 55%, 69%)')).toBe('#000'); // a light yellow: black text
    expect(luminance('#ffffff')).toBeCloseTo(1);
    expect(contrast('#000', '#fff')).toBeCloseTo(21);
  });
});
