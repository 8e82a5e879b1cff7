// Keyboard navigation of the trace viewer, Perfetto's model: W / S zoom and A / D pan
// smoothly while held (one animation frame at a time, anchored at the pointer, faster the
// longer the key is held, key repeats ignored), PageUp / PageDown and the arrows scroll the
// tracks. The rates are pure functions of the time held, so they are unit tested without a
// clock; the page supplies the view and the frame loop.

import { type Span, panSpan, zoomSpan } from '../trace';

/** Doublings per second of a zoom key held `ms`: 1.5 at once, rising to 6 after a second. */
export function zoomRate(ms: number): number {
  const t = Math.min(1, Math.max(0, ms) / 1000);
  return 1.5 + 4.5 * t;
}

/** Views per second of a pan key held `ms`: 0.6 at once, rising to 2.5 after a second. */
export function panRate(ms: number): number {
  const t = Math.min(1, Math.max(0, ms) / 1000);
  return 0.6 + 1.9 * t;
}

/** A tap moves at least this long (a key pressed and released at once still moves the view). */
export const MIN_HOLD_MS = 200;
/** Longest frame counted (a stalled frame does not jump the view). */
export const MAX_FRAME_MS = 50;

/** What is held: zoom in (+1) or out (-1), pan right (+1) or left (-1), with when each started. */
export interface Held {
  zoom: { dir: 1 | -1; since: number } | null;
  pan: { dir: 1 | -1; since: number } | null;
}

/**
 * The view after `dt` ms of held keys at time `now` (ms): zoomed by the zoom rate at the
 * time held so far around `anchor` (ps; the pointer, else the centre), then panned.
 */
export function stepView(span: Span, bounds: Span, held: Held, anchor: number | null, now: number, dt: number): Span {
  const frame = Math.min(MAX_FRAME_MS, Math.max(0, dt)) / 1000;
  let next = span;
  if (held.zoom) {
    const doublings = zoomRate(now - held.zoom.since) * frame;
    const factor = Math.pow(2, -held.zoom.dir * doublings);
    const at = anchor ?? (next.start + next.end) / 2;
    next = zoomSpan(next, at, factor, bounds);
  }
  if (held.pan) {
    const len = next.end - next.start;
    next = panSpan(next, held.pan.dir * panRate(now - held.pan.since) * frame * len, bounds);
  }
  return next;
}

export interface NavigatorHost {
  span(): Span;
  bounds(): Span;
  setSpan(s: Span): void;
  /** The time under the pointer (ps) when it is over the timeline, else null. */
  anchor(): number | null;
}

/**
 * Runs W / A / S / D: `press` and `release` take the key; while any is held (or a tap's
 * minimum run lasts) one step per animation frame moves the view.
 */
export class KeyNavigator {
  private readonly held: Held = { zoom: null, pan: null };
  /** Until when a released key keeps moving (a tap), per axis. */
  private readonly tail: { zoom: number; pan: number } = { zoom: 0, pan: 0 };
  private readonly down = new Set<string>();
  private frame: number | null = null;
  private last = 0;

  constructor(
    private readonly host: NavigatorHost,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether `key` is one of W A S D. */
  static handles(key: string): boolean {
    return key === 'w' || key === 'a' || key === 's' || key === 'd';
  }

  get active(): boolean {
    return this.frame !== null;
  }

  press(key: string): void {
    if (this.down.has(key)) return; // a key repeat: the held key already moves the view
    this.down.add(key);
    const t = this.now();
    if (key === 'w' || key === 's') {
      this.held.zoom = { dir: key === 'w' ? 1 : -1, since: t };
      this.tail.zoom = t + MIN_HOLD_MS;
    } else {
      this.held.pan = { dir: key === 'd' ? 1 : -1, since: t };
      this.tail.pan = t + MIN_HOLD_MS;
    }
    this.start();
  }

  release(key: string): void {
    this.down.delete(key);
    // The other key of the pair still held takes over (S released while W is down: W again).
    const t = this.now();
    if ((key === 'w' || key === 's') && this.held.zoom) {
      const other = key === 'w' ? 's' : 'w';
      if (this.down.has(other)) this.held.zoom = { dir: other === 'w' ? 1 : -1, since: t };
    } else if ((key === 'a' || key === 'd') && this.held.pan) {
      const other = key === 'a' ? 'd' : 'a';
      if (this.down.has(other)) this.held.pan = { dir: other === 'd' ? 1 : -1, since: t };
    }
  }

  /** Stops at once (focus lost, page left). */
  stop(): void {
    this.down.clear();
    this.held.zoom = null;
    this.held.pan = null;
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.frame = null;
  }

  private start(): void {
    if (this.frame !== null) return;
    this.last = this.now();
    this.frame = requestAnimationFrame(() => this.tick());
  }

  private tick(): void {
    this.frame = null;
    const t = this.now();
    const dt = t - this.last;
    this.last = t;
    // A released key stops once its tap's minimum run is over.
    if (this.held.zoom && !this.down.has('w') && !this.down.has('s') && t >= this.tail.zoom) this.held.zoom = null;
    if (this.held.pan && !this.down.has('a') && !this.down.has('d') && t >= this.tail.pan) this.held.pan = null;
    if (!this.held.zoom && !this.held.pan) return;
    const h = this.host;
    h.setSpan(stepView(h.span(), h.bounds(), this.held, h.anchor(), t, dt));
    this.frame = requestAnimationFrame(() => this.tick());
  }
}

/** How far a scrolling key moves a track list of `page` px: PageUp / PageDown a page, the arrows three rows. */
export function scrollStep(key: string, page: number, row: number): number {
  switch (key) {
    case 'pagedown':
      return Math.max(row, page * 0.9);
    case 'pageup':
      return -Math.max(row, page * 0.9);
    case 'arrowdown':
      return row * 3;
    case 'arrowup':
      return -row * 3;
    case 'home':
      return -Infinity;
    case 'end':
      return Infinity;
    default:
      return 0;
  }
}
