import { afterEach, describe, expect, it, vi } from 'vitest';
import { type TraceTracks, type TraceWindow, layoutSections, layoutPinned, visibleTrackIds, collapsedTrackIds, windowColumns } from '../src/trace';
import { addFlag, flagAt } from '../src/trace/flags';
import { KeyNavigator, MIN_HOLD_MS, panRate, scrollStep, stepView, zoomRate } from '../src/trace/navigation';
import { activityDensity } from '../src/trace/overview';
import { TraceModel } from '../src/trace/model';
import { flagsText, parseFlags, viewFromUrl, viewToUrl } from '../src/trace/view';

const bounds = { start: 0, end: 1_000_000_000 };

describe('keys held: smooth, accelerating, at the pointer', () => {
  it('rates start gently and grow with the time held, then level off', () => {
    expect(zoomRate(0)).toBeCloseTo(1.5);
    expect(zoomRate(500)).toBeGreaterThan(zoomRate(100));
    expect(zoomRate(1000)).toBeCloseTo(6);
    expect(zoomRate(5000)).toBeCloseTo(6);
    expect(panRate(0)).toBeCloseTo(0.6);
    expect(panRate(2000)).toBeCloseTo(2.5);
  });

  it('zooms by the frame’s share of the rate, keeping the anchor in place', () => {
    const span = { start: 100_000_000, end: 900_000_000 };
    const anchor = 300_000_000;
    const next = stepView(span, bounds, { zoom: { dir: 1, since: 0 }, pan: null }, anchor, 0, 16);
    const factor = (span.end - span.start) / (next.end - next.start);
    expect(factor).toBeCloseTo(Math.pow(2, 1.5 * 0.016), 3);
    // The anchor stays at the same fraction of the view.
    const before = (anchor - span.start) / (span.end - span.start);
    const after = (anchor - next.start) / (next.end - next.start);
    expect(after).toBeCloseTo(before, 3);
  });

  it('holding half a second zooms a few times, not 2^15 (the per-repeat doubling of old)', () => {
    let span = { start: 0, end: 729_000_000 };
    const held = { zoom: { dir: 1 as const, since: 0 }, pan: null };
    for (let t = 16; t <= 500; t += 16) span = stepView(span, { start: 0, end: 729_000_000 }, held, null, t, 16);
    const factor = 729_000_000 / (span.end - span.start);
    expect(factor).toBeGreaterThan(1.8);
    expect(factor).toBeLessThan(5);
  });

  it('pans by views per second, and a stalled frame counts as 50 ms at most', () => {
    const span = { start: 0, end: 100_000_000 };
    const next = stepView(span, bounds, { zoom: null, pan: { dir: 1, since: 0 } }, null, 0, 1000);
    expect(next.start).toBeCloseTo(0.6 * 0.05 * 100_000_000, -1);
  });

  describe('KeyNavigator', () => {
    let frames: (() => void)[] = [];
    afterEach(() => {
      vi.unstubAllGlobals();
      frames = [];
    });

    it('ignores key repeats and keeps moving after a tap for the minimum run', () => {
      vi.stubGlobal('requestAnimationFrame', (f: () => void) => frames.push(f));
      vi.stubGlobal('cancelAnimationFrame', () => undefined);
      let now = 0;
      let span = { start: 0, end: 1_000_000 };
      const nav = new KeyNavigator({ span: () => span, bounds: () => ({ start: 0, end: 1_000_000 }), setSpan: (s) => (span = s), anchor: () => null }, () => now);
      nav.press('w');
      for (let i = 0; i < 20; i++) nav.press('w'); // repeats
      nav.release('w');
      let steps = 0;
      while (frames.length && steps < 100) {
        now += 16;
        frames.shift()?.();
        steps++;
      }
      // Frames ran for the minimum run only: MIN_HOLD_MS / 16 frames or so.
      expect(steps).toBeGreaterThanOrEqual(Math.floor(MIN_HOLD_MS / 16));
      expect(steps).toBeLessThanOrEqual(Math.ceil(MIN_HOLD_MS / 16) + 2);
      const factor = 1_000_000 / (span.end - span.start);
      expect(factor).toBeGreaterThan(1.1);
      expect(factor).toBeLessThan(1.6);
    });
  });

  it('PageDown/PageUp move a page, arrows three rows, Home/End to the ends', () => {
    expect(scrollStep('pagedown', 500, 18)).toBe(450);
    expect(scrollStep('pageup', 500, 18)).toBe(-450);
    expect(scrollStep('arrowdown', 500, 18)).toBe(54);
    expect(scrollStep('arrowup', 500, 18)).toBe(-54);
    expect(scrollStep('end', 500, 18)).toBe(Infinity);
    expect(scrollStep('x', 500, 18)).toBe(0);
  });
});

describe('overview density', () => {
  const w: TraceWindow = {
    start_ps: 0,
    end_ps: 100,
    resolution_ps: 1,
    names: ['a'],
    tracks: [
      { id: 1, exact: true, in_window: 2, hidden: 0, events: [{ id: 1, name: 0, ts_ps: 0, dur_ps: 50 }, { id: 2, name: 0, ts_ps: 10, dur_ps: 10 }] },
      { id: 2, exact: true, in_window: 1, hidden: 0, events: [{ id: 3, name: 0, ts_ps: 25, dur_ps: 50 }] },
      { id: 3, exact: true, in_window: 1, hidden: 0, samples: [[0, 5]] },
    ],
    total_in_window: 4,
    total_returned: 4,
    total_hidden: 0,
  };
  it('sums the outermost slices per column (nested ones add nothing), scaled to the busiest', () => {
    const d = activityDensity(windowColumns(w), { start: 0, end: 100 }, 4);
    // Columns of 25 ps: [0,25) track 1; [25,50) both; [50,75) track 2; [75,100) none.
    expect([...d]).toEqual([0.5, 1, 0.5, 0]);
  });
  it('as a share of threads busy, for some tracks only', () => {
    const d = activityDensity(windowColumns(w), { start: 0, end: 100 }, 4, 2, new Set([2]));
    expect([...d]).toEqual([0, 0.5, 0.5, 0]);
  });
});

describe('named flags', () => {
  it('round-trip through the URL, sorted by time, names with commas and tildes kept', () => {
    const flags = addFlag(addFlag([], 500, 'a, b ~ c'), 100);
    expect(flags.map((f) => f.name)).toEqual(['Flag 2', 'a, b ~ c']);
    expect(parseFlags(flagsText(flags))).toEqual(flags);
    expect(parseFlags('x~y,12~ok,%~bad')).toEqual([{ ps: 12, name: 'ok' }]);
  });
  it('are found near the pointer on the ruler', () => {
    const flags = [{ ps: 100, name: 'a' }, { ps: 200, name: 'b' }];
    expect(flagAt(flags, 203, (ps) => ps)).toBe(1);
    expect(flagAt(flags, 150, (ps) => ps)).toBe(-1);
  });
  it('and the track filter are view keys', () => {
    const v = viewFromUrl((k) => ({ flags: '5~x', track_q: 'stream' })[k] ?? '');
    expect(v.flags).toEqual([{ ps: 5, name: 'x' }]);
    expect(v.trackFilter).toBe('stream');
    expect(viewToUrl(v)).toMatchObject({ flags: '5~x', track_q: 'stream' });
  });
});

const tracks: TraceTracks = {
  host: 'h',
  start_ps: 0,
  end_ps: 100,
  num_events: 0,
  sections: [
    { pid: 1, name: 'h /device:GPU:0', label: 'GPU 0 · A100', tracks: [{ id: 0, kind: 'thread', name: 'stream 7', num_events: 1 }, { id: 1, kind: 'thread', name: 'stream 8', num_events: 1 }] },
    { pid: 701, name: 'h /host:CPU', tracks: [{ id: 2, kind: 'thread', name: 'python', num_events: 1 }, { id: 3, kind: 'thread', name: 'dataloader', num_events: 1 }] },
  ],
};

describe('track management', () => {
  it('the filter keeps matching tracks (by track or process name) and drops processes with none', () => {
    const lay = layoutSections(tracks, null, { filter: 'STREAM 8' });
    expect(lay.rows.map((r) => r.info.id)).toEqual([1]);
    expect(lay.sections.map((s) => [s.pid, s.filteredTracks])).toEqual([[1, 1]]);
    expect(layoutSections(tracks, null, { filter: 'a100' }).rows.map((r) => r.info.id)).toEqual([0, 1]);
    expect(visibleTrackIds(tracks, { filter: 'python' })).toEqual([2]);
  });
  it('pinned tracks are counted as pinned, not hidden', () => {
    const lay = layoutSections(tracks, null, { pinned: [0], hidden: new Set([3]) });
    expect(lay.sections.map((s) => [s.pid, s.hiddenTracks, s.pinnedTracks])).toEqual([
      [1, 0, 1],
      [701, 1, 0],
    ]);
    expect(layoutPinned(tracks, null, [0]).rows.map((r) => r.info.id)).toEqual([0]);
  });
  it('collapsed sections list their threads for the activity summary', () => {
    expect([...collapsedTrackIds(tracks, { collapsed: new Set([701]) })]).toEqual([[701, [2, 3]]]);
  });
  it('picks one, several (ctrl) and a run (shift); pins and hides them together', () => {
    const m = new TraceModel(viewFromUrl(() => ''));
    m.setTracks(tracks);
    const order = [0, 1, 2, 3];
    m.pick(1, 'only', order);
    m.pick(3, 'range', order);
    expect([...m.pickedTracks].sort()).toEqual([1, 2, 3]);
    m.pick(2, 'toggle', order);
    expect([...m.pickedTracks].sort()).toEqual([1, 3]);
    m.pinAll([3, 1]);
    expect(m.view.pinned).toEqual([3, 1]);
    m.hideAll([1]);
    expect(m.view.pinned).toEqual([3]);
    expect([...m.view.hidden]).toEqual([1]);
    expect(m.processLabel(0)).toBe('GPU 0 · A100');
  });
});
