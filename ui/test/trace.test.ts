import { describe, expect, it } from 'vitest';
import {
  MIN_SPAN_PS,
  TimeScale,
  clampSpan,
  colorFor,
  formatDuration,
  panSpan,
  sliceAt,
  sliceIndex,
  spanFromView,
  spanToView,
  trackColumns,
  windowColumns,
  zoomSpan,
} from '../src/trace';
import { exactMicros } from '../src/format';
import { pageFor, toolNeedsNoData } from '../src/pages';
import { traceViewerPage } from '../src/pages/trace_viewer';

const ev = (ts_ps: number, dur_ps: number) => ({ ts_ps, dur_ps });
/** Nesting depths of events (in XProf's order) as the viewer lays them out. */
const layoutDepths = (events: { ts_ps: number; dur_ps: number }[]) =>
  [...trackColumns({ id: 0, exact: true, in_window: events.length, hidden: 0, events: events.map((e, i) => ({ id: i, name: 0, ...e })) }).slices.depth];

describe('trace layout by depth', () => {
  it('nests children in their parents and reuses depths after an event ends', () => {
    // XProf order: start ascending, longer first.
    const events = [ev(0, 100), ev(0, 50), ev(10, 20), ev(50, 30), ev(100, 10), ev(105, 0), ev(200, 5)];
    expect(layoutDepths(events)).toEqual([0, 1, 2, 1, 0, 1, 0]);
  });
  it('puts zero-length events at the depth of their parent + 1 and never nests under them', () => {
    expect(layoutDepths([ev(0, 10), ev(5, 0), ev(5, 2)])).toEqual([0, 1, 1]);
  });
  it('an event starting exactly where another ends is a sibling', () => {
    expect(layoutDepths([ev(0, 10), ev(10, 10), ev(20, 0)])).toEqual([0, 0, 0]);
  });
  it('track columns and sliceAt find the innermost slice under the pointer', () => {
    const track = trackColumns({
      id: 3,
      exact: true,
      in_window: 3,
      hidden: 0,
      events: [
        { id: 1, name: 0, ts_ps: 0, dur_ps: 100 },
        { id: 2, name: 1, ts_ps: 20, dur_ps: 10 },
        { id: 3, name: 2, ts_ps: 60, dur_ps: 0 },
      ],
    });
    const slices = track.slices;
    expect([...slices.id]).toEqual([1, 2, 3]);
    expect([...slices.depth]).toEqual([0, 1, 1]);
    expect([...slices.name]).toEqual([0, 1, 2]);
    expect([track.depths, track.maxDur]).toEqual([2, 100]);
    const hit = (depth: number, ps: number, minPs: number) => {
      const i = sliceAt(slices, depth, ps, minPs);
      return i < 0 ? null : slices.id[i];
    };
    expect(hit(0, 50, 1)).toBe(1);
    expect(hit(1, 25, 1)).toBe(2);
    expect(hit(1, 61, 2)).toBe(3); // a zero-length slice is hit within its minimum width
    expect(hit(1, 45, 1)).toBeNull();
    expect(hit(2, 25, 1)).toBeNull();
    expect(sliceIndex(slices, 3)).toBe(2);
    expect(sliceIndex(slices, 99)).toBe(-1);
    const empty = trackColumns({ id: 0, exact: true, in_window: 0, hidden: 0 }); // `events` absent when empty
    expect([empty.slices.count, empty.depths, empty.maxDur]).toEqual([0, 0, 0]);
  });
  it('a window as columns keeps its header fields and every event', () => {
    const w = windowColumns({
      start_ps: 5,
      end_ps: 50,
      resolution_ps: 1,
      names: ['a', 'b'],
      tracks: [{ id: 7, exact: false, in_window: 4, hidden: 2, events: [{ id: 9, name: 1, ts_ps: 10, dur_ps: 3 }, { id: 8, name: 0, ts_ps: 11, dur_ps: 1 }] }],
      total_in_window: 4,
      total_returned: 2,
      total_hidden: 2,
    });
    expect([w.start_ps, w.end_ps, w.names, w.total_in_window, w.total_returned, w.total_hidden]).toEqual([5, 50, ['a', 'b'], 4, 2, 2]);
    const t = w.tracks[0];
    expect([t?.id, t?.exact, t?.in_window, t?.hidden, t?.slices.count]).toEqual([7, false, 4, 2, 2]);
    expect([...(t?.slices.ts ?? [])]).toEqual([10, 11]);
    expect([...(t?.slices.depth ?? [])]).toEqual([0, 1]);
  });
});

describe('time <-> pixel mapping', () => {
  it('maps the window onto the width and back', () => {
    const s = new TimeScale({ start: 1000, end: 3000 }, 200);
    expect(s.toX(1000)).toBe(0);
    expect(s.toX(3000)).toBe(200);
    expect(s.toX(2000)).toBe(100);
    expect(s.toPs(50)).toBe(1500);
    expect(s.psPerPx).toBe(10);
    for (const x of [0, 13, 199]) expect(s.toX(s.toPs(x))).toBeCloseTo(x, 9);
  });
});

describe('pan and zoom', () => {
  const bounds = { start: 1_000_000, end: 2_000_000 };
  it('zooms around an anchor and stays in bounds', () => {
    expect(zoomSpan(bounds, 1_500_000, 0.5, bounds)).toEqual({ start: 1_250_000, end: 1_750_000 });
    expect(zoomSpan(bounds, 1_000_000, 0.5, bounds)).toEqual({ start: 1_000_000, end: 1_500_000 });
    expect(zoomSpan({ start: 1_250_000, end: 1_750_000 }, 1_500_000, 4, bounds)).toEqual(bounds);
    const tiny = zoomSpan(bounds, 1_500_000, 1e-9, bounds);
    expect(tiny.end - tiny.start).toBe(MIN_SPAN_PS);
  });
  it('pans by a delta and stops at the edges keeping the length', () => {
    const w = { start: 1_200_000, end: 1_400_000 };
    expect(panSpan(w, 100_000, bounds)).toEqual({ start: 1_300_000, end: 1_500_000 });
    expect(panSpan(w, -900_000, bounds)).toEqual({ start: 1_000_000, end: 1_200_000 });
    expect(panSpan(w, 5_000_000, bounds)).toEqual({ start: 1_800_000, end: 2_000_000 });
    expect(clampSpan({ start: 0, end: 1e12 }, bounds)).toEqual(bounds);
  });
});

describe('the window in the URL', () => {
  const bounds = { start: 8_643_000, end: 61_330_691_000 };
  const view = (v: Record<string, string>) => (k: string) => v[k] ?? '';
  it('reads start_ps/end_ps, defaults to the whole trace, rejects junk', () => {
    expect(spanFromView(view({}), bounds)).toEqual(bounds);
    expect(spanFromView(view({ start_ps: '10000000', end_ps: '20000000' }), bounds)).toEqual({ start: 10_000_000, end: 20_000_000 });
    expect(spanFromView(view({ start_ps: 'x', end_ps: '2' }), bounds)).toEqual(bounds);
    expect(spanFromView(view({ start_ps: '30', end_ps: '20' }), bounds)).toEqual(bounds);
    expect(spanFromView(view({ start_ps: '0', end_ps: '20000000' }), bounds)).toEqual({ start: 8_643_000, end: 20_000_000 });
  });
  it('writes the window, and nothing for the whole trace (round trip)', () => {
    expect(spanToView(bounds, bounds)).toEqual({ start_ps: null, end_ps: null });
    const w = { start: 10_000_000, end: 20_000_000 };
    const v = spanToView(w, bounds) as Record<string, string>;
    expect(v).toEqual({ start_ps: '10000000', end_ps: '20000000' });
    expect(spanFromView(view(v), bounds)).toEqual(w);
  });
});

describe('colors and durations', () => {
  it('colors are stable by name and differ between names', () => {
    expect(colorFor('dot.1')).toBe(colorFor('dot.1'));
    expect(colorFor('dot.1')).not.toBe(colorFor('dot.2'));
    expect(colorFor('x')).toMatch(/^hsl\(\d+, 55%, \d+%\)$/);
  });
  it('formats picoseconds', () => {
    expect(formatDuration(0)).toBe('0');
    expect(formatDuration(1500)).toBe('1.5 ns');
    expect(formatDuration(68_452_000)).toBe('68.45 µs');
    expect(formatDuration(61_322_048_000)).toBe('61.32 ms');
    expect(formatDuration(2e12)).toBe('2 s');
    expect(exactMicros(68_452_000)).toBe('68.452 µs');
    expect(exactMicros(1_234_567_891)).toBe('1,234.567891 µs');
  });
});

describe('trace viewer registration', () => {
  it('trace_viewer and trace_viewer@ get the trace page, without a /data request', () => {
    expect(pageFor('trace_viewer')).toBe(traceViewerPage);
    expect(pageFor('trace_viewer@')).toBe(traceViewerPage);
    expect(toolNeedsNoData('trace_viewer')).toBe(true);
  });
});
