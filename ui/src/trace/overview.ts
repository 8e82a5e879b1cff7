// The trace viewer's overview strip: the whole trace at once as activity density (how many
// threads are busy in each column), the current window as a box, and the mouse to jump:
// drag the box to move the window, drag elsewhere (or over a box as wide as most of the
// strip) to draw a new window, click to centre the window there. The density comes from one coarse window of the whole trace (the LOD
// route keeps about two events per column and depth, whatever the trace size).

import { h } from '../dom';
import { type ColumnWindow, type Span, TimeScale, clampSpan } from '../trace';
import { type Theme, sizeCanvas } from './draw';

/** Height of the strip (px). */
export const OVERVIEW_HEIGHT = 30;

/**
 * Busy fraction per column: for each thread track (of `only`, when given), the share of
 * each of `bins` columns of `bounds` its outermost slices cover, summed over tracks and
 * divided by `scale`: 'max' makes the busiest column 1, a number divides by it (the
 * number of tracks: the share of threads busy). Counter tracks are left out.
 */
export function activityDensity(w: ColumnWindow, bounds: Span, bins: number, scale: 'max' | number = 'max', only?: ReadonlySet<number>): Float32Array {
  const out = new Float32Array(Math.max(1, bins));
  const len = Math.max(1, bounds.end - bounds.start);
  const per = len / out.length;
  for (const t of w.tracks) {
    if (t.samples || (only && !only.has(t.id))) continue;
    const s = t.slices;
    let reach = -Infinity; // end of the outermost slice so far: nested slices add nothing
    for (let i = 0; i < s.count; i++) {
      const ts = s.ts[i] ?? 0;
      const end = ts + (s.dur[i] ?? 0);
      if (end <= reach) continue;
      const from = Math.max(ts, reach, bounds.start);
      reach = end;
      const to = Math.min(end, bounds.end);
      if (to <= from) continue;
      const b0 = Math.floor((from - bounds.start) / per);
      const b1 = Math.min(out.length - 1, Math.floor((to - bounds.start) / per));
      for (let b = Math.max(0, b0); b <= b1; b++) {
        const lo = Math.max(from, bounds.start + b * per);
        const hi = Math.min(to, bounds.start + (b + 1) * per);
        if (hi > lo) out[b] = (out[b] ?? 0) + (hi - lo) / per;
      }
    }
  }
  let div = 0;
  if (scale === 'max') for (const v of out) div = Math.max(div, v);
  else div = scale;
  if (div > 0) for (let b = 0; b < out.length; b++) out[b] = Math.min(1, (out[b] ?? 0) / div);
  return out;
}

export interface OverviewHost {
  span(): Span;
  bounds(): Span;
  setSpan(s: Span): void;
}

export class Overview {
  readonly canvas: HTMLCanvasElement;
  readonly element: HTMLElement;
  /** The cell left of the strip (above the track names): the page puts controls there. */
  readonly label: HTMLElement;
  density: Float32Array | null = null;
  private drag: { mode: 'move' | 'brush'; x0: number; offset: number; x: number; moved: boolean } | null = null;
  private width = 100;
  private readonly onMove = (e: MouseEvent) => this.move(e);
  private readonly onUp = (e: MouseEvent) => this.up(e);

  constructor(
    private readonly host: OverviewHost,
    private readonly redraw: () => void,
  ) {
    this.canvas = h('canvas', { class: 'trace-overview', 'data-role': 'trace-overview', title: 'The whole trace: drag the box to move the view, drag elsewhere to choose a new view, click to centre it there' });
    this.label = h('div', { class: 'trace-overview-label' }, h('span', { class: 'muted', 'aria-hidden': 'true' }, 'Overview'));
    this.element = h('div', { class: 'trace-overview-row' }, this.label, this.canvas);
    this.canvas.addEventListener('mousedown', (e) => this.down(e));
  }

  detach(): void {
    window.removeEventListener('mousemove', this.onMove);
    window.removeEventListener('mouseup', this.onUp);
  }

  private scale(): TimeScale {
    return new TimeScale(this.host.bounds(), this.width);
  }

  private x(e: MouseEvent): number {
    return Math.max(0, Math.min(this.width, e.clientX - this.canvas.getBoundingClientRect().left));
  }

  private down(e: MouseEvent): void {
    if (e.button !== 0) return;
    e.preventDefault();
    const x = this.x(e);
    const sc = this.scale();
    const span = this.host.span();
    const x0 = sc.toX(span.start);
    const x1 = sc.toX(span.end);
    // A box narrower than 6 px is grabbed from 3 px around it; one wider than 80 % of the
    // strip is not grabbed at all (a drag on it chooses a new view).
    const inside = x1 - x0 < this.width * 0.8 && x >= Math.min(x0, (x0 + x1) / 2 - 3) && x <= Math.max(x1, (x0 + x1) / 2 + 3);
    this.drag = { mode: inside ? 'move' : 'brush', x0: x, offset: x - x0, x, moved: false };
    window.addEventListener('mousemove', this.onMove);
    window.addEventListener('mouseup', this.onUp);
  }

  private move(e: MouseEvent): void {
    const d = this.drag;
    if (!d) return;
    d.x = this.x(e);
    if (Math.abs(d.x - d.x0) > 3) d.moved = true;
    if (!d.moved) return;
    if (d.mode === 'move') {
      const sc = this.scale();
      const span = this.host.span();
      const start = sc.toPs(d.x - d.offset);
      this.host.setSpan(clampSpan({ start, end: start + (span.end - span.start) }, this.host.bounds()));
    } else this.redraw();
  }

  private up(e: MouseEvent): void {
    const d = this.drag;
    this.detach();
    if (!d) return;
    this.drag = null;
    d.x = this.x(e);
    const sc = this.scale();
    const bounds = this.host.bounds();
    if (d.mode === 'brush' && d.moved) {
      this.host.setSpan(clampSpan({ start: sc.toPs(Math.min(d.x0, d.x)), end: sc.toPs(Math.max(d.x0, d.x)) }, bounds));
    } else if (!d.moved) {
      // A click: the window, same length, centred there.
      const span = this.host.span();
      const mid = sc.toPs(d.x);
      const len = span.end - span.start;
      this.host.setSpan(clampSpan({ start: mid - len / 2, end: mid + len / 2 }, bounds));
    }
    this.redraw();
  }

  /** Draws the density, the current window and a brush in progress. */
  draw(width: number, theme: Theme): void {
    this.width = width;
    sizeCanvas(this.canvas, width, OVERVIEW_HEIGHT);
    const g = this.canvas.getContext('2d');
    if (!g) return;
    const dpr = window.devicePixelRatio || 1;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = theme.bg;
    g.fillRect(0, 0, width, OVERVIEW_HEIGHT);
    const d = this.density;
    const base = OVERVIEW_HEIGHT - 2;
    if (d) {
      g.fillStyle = theme.timing;
      g.globalAlpha = 0.55;
      const per = width / d.length;
      for (let b = 0; b < d.length; b++) {
        const v = d[b] ?? 0;
        if (v <= 0) continue;
        const hgt = Math.max(1, v * (OVERVIEW_HEIGHT - 4));
        g.fillRect(b * per, base - hgt, Math.max(1, per), hgt);
      }
      g.globalAlpha = 1;
    }
    const sc = this.scale();
    const span = this.host.span();
    const x0 = Math.max(0, sc.toX(span.start));
    const x1 = Math.min(width, sc.toX(span.end));
    this.canvas.dataset.windowX0 = String(Math.round(x0));
    this.canvas.dataset.windowX1 = String(Math.round(x1));
    g.fillStyle = 'rgba(127,127,127,0.28)';
    g.fillRect(0, 0, x0, OVERVIEW_HEIGHT);
    g.fillRect(x1, 0, width - x1, OVERVIEW_HEIGHT);
    g.strokeStyle = theme.timing;
    g.lineWidth = 1.5;
    g.strokeRect(x0 + 0.75, 0.75, Math.max(2, x1 - x0 - 1.5), OVERVIEW_HEIGHT - 1.5);
    const b = this.drag;
    if (b && b.mode === 'brush' && b.moved) {
      g.fillStyle = theme.range;
      g.strokeStyle = theme.rangeStroke;
      g.fillRect(Math.min(b.x0, b.x), 0, Math.abs(b.x - b.x0), OVERVIEW_HEIGHT);
      g.strokeRect(Math.min(b.x0, b.x) + 0.5, 0.5, Math.abs(b.x - b.x0), OVERVIEW_HEIGHT - 1);
    }
    g.strokeStyle = theme.grid;
    g.lineWidth = 1;
    g.beginPath();
    g.moveTo(0, OVERVIEW_HEIGHT - 0.5);
    g.lineTo(width, OVERVIEW_HEIGHT - 0.5);
    g.stroke();
  }
}
