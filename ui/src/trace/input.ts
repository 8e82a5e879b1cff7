// Mouse and keys of the trace viewer, Perfetto's navigation model: the wheel scrolls the
// tracks (the browser's own scrolling), ctrl/⌘+wheel zooms at the pointer, shift+wheel (or
// a sideways swipe) pans; W A S D zoom and pan smoothly while held, at the pointer
// (./navigation.ts); PageUp / PageDown and the arrows scroll the tracks. The tools drag
// (select: a range of tracks; pan; zoom: an interval; timing: a mark), clicks select, the
// pointer's slice gets a tooltip; 1-4, f, 0, m, [ ], /, ? and Escape act on the view. The
// page supplies the actions.

import { ROW, type Span, TimeScale, type TrackRow, panSpan, rowAt, sliceAt, tracksInBand, zoomSpan } from '../trace';
import { KeyNavigator, scrollStep } from './navigation';
import type { TraceModel } from './model';
import type { TrackArea } from './track_area';
import { type TraceTool, TOOLS, type TraceView } from './view';
import { keyOf } from './widgets';

export interface Drag {
  area: TrackArea;
  x0: number;
  y0: number;
  x: number;
  y: number;
  span: Span;
  moved: boolean;
}

/** A slice under the pointer. */
export interface Hit {
  row: TrackRow;
  i: number;
  id: number;
}

export interface InputActions {
  plotWidth(): number;
  setSpan(s: Span): void;
  setTiming(t: Span | null): void;
  setTool(t: TraceTool): void;
  select(id: number | null): void;
  selectRange(r: { span: Span; tracks: number[] } | null): void;
  redraw(): void;
  /** The pointer is over `hit` (null: over nothing) at client `x`, `y`; `ps` its time. */
  hover(hit: Hit | null, x: number, y: number, ps: number | null): void;
  fit(): void;
  mark(): void;
  neighbour(step: 1 | -1): void;
  help(): void;
  focusSearch(): void;
  focus(): void;
  /** Whether keys are for someone else (a dialog is open). */
  busy(): boolean;
  /** Scrolls the main track list by `dy` px (±Infinity: to the top or bottom). */
  scrollTracks(dy: number): void;
  /** The main track list's visible height (px). */
  pageHeight(): number;
  /** Clears the tracks picked in the name column; false when none was. */
  clearPicks(): boolean;
}

/** Pixels of a wheel delta (lines and pages count as 16 px and a page). */
function wheelPx(delta: number, mode: number, page: number): number {
  return mode === 1 ? delta * 16 : mode === 2 ? delta * page : delta;
}

export class Input {
  drag: Drag | null = null;
  /** The pointer's x over the plot (px), null when it is elsewhere: W and S zoom there. */
  pointerX: number | null = null;
  readonly keys: KeyNavigator;
  private readonly onMove = (e: MouseEvent) => this.move(e);
  private readonly onUp = (e: MouseEvent) => this.up(e);
  private readonly onKey = (e: KeyboardEvent) => this.key(e);
  private readonly onKeyUp = (e: KeyboardEvent) => this.keys.release(keyOf(e));
  private readonly onBlur = () => this.keys.stop();

  constructor(
    private readonly model: TraceModel,
    private readonly view: TraceView,
    private readonly act: InputActions,
    areas: readonly TrackArea[],
  ) {
    this.keys = new KeyNavigator({
      span: () => model.span,
      bounds: () => model.bounds,
      setSpan: (s) => act.setSpan(s),
      anchor: () => (this.pointerX === null ? null : this.scale().toPs(this.pointerX)),
    });
    for (const a of areas) this.attach(a);
    window.addEventListener('mousemove', this.onMove);
    window.addEventListener('mouseup', this.onUp);
    document.addEventListener('keydown', this.onKey);
    document.addEventListener('keyup', this.onKeyUp);
    window.addEventListener('blur', this.onBlur);
  }

  detach(): void {
    this.keys.stop();
    window.removeEventListener('mousemove', this.onMove);
    window.removeEventListener('mouseup', this.onUp);
    document.removeEventListener('keydown', this.onKey);
    document.removeEventListener('keyup', this.onKeyUp);
    window.removeEventListener('blur', this.onBlur);
  }

  /** Tracks the pointer over a plot-wide element (the ruler, the overview): W and S zoom there. */
  follow(el: HTMLElement): void {
    el.addEventListener('mousemove', (e) => (this.pointerX = e.clientX - el.getBoundingClientRect().left));
    el.addEventListener('mouseleave', () => (this.pointerX = null));
  }

  private scale(): TimeScale {
    return new TimeScale(this.model.span, this.act.plotWidth());
  }

  /** The slice under a point of an area (content coordinates). */
  sliceUnder(a: TrackArea, p: { x: number; y: number }): Hit | null {
    const row = rowAt(a.layout.rows, p.y);
    if (!row || row.info.kind !== 'thread') return null;
    const scale = this.scale();
    const i = sliceAt(row.slices, Math.floor((p.y - row.top) / ROW), scale.toPs(p.x), scale.psPerPx * 2);
    return i < 0 ? null : { row, i, id: row.slices.id[i] ?? -1 };
  }

  private attach(a: TrackArea): void {
    const { model, act } = this;
    a.canvas.addEventListener(
      'wheel',
      (e) => {
        const width = act.plotWidth();
        const dx = wheelPx(e.deltaX, e.deltaMode, width);
        const dy = wheelPx(e.deltaY, e.deltaMode, act.pageHeight());
        if (e.ctrlKey || e.metaKey) {
          // Zoom at the pointer (a trackpad's pinch sends ctrl+wheel too); not the page's zoom.
          e.preventDefault();
          act.setSpan(zoomSpan(model.span, this.scale().toPs(a.point(e).x), Math.pow(1.0015, Math.max(-400, Math.min(400, dy))), model.bounds));
        } else if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
          e.preventDefault();
          act.setSpan(panSpan(model.span, ((e.shiftKey ? dy || dx : dx) / width) * (model.span.end - model.span.start), model.bounds));
        }
        // Otherwise the browser scrolls the track list.
      },
      { passive: false },
    );
    a.canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      act.focus();
      const p = a.point(e);
      this.drag = { area: a, x0: p.x, y0: p.y, x: p.x, y: p.y, span: model.span, moved: false };
      if (this.view.tool === 'pan') a.canvas.style.cursor = 'grabbing';
    });
    a.canvas.addEventListener('mousemove', (e) => {
      const p = a.point(e);
      this.pointerX = p.x;
      if (this.drag) return;
      act.hover(this.sliceUnder(a, p), e.clientX, e.clientY, this.scale().toPs(p.x));
    });
    a.canvas.addEventListener('mouseleave', () => {
      this.pointerX = null;
      act.hover(null, 0, 0, null);
    });
  }

  private move(e: MouseEvent): void {
    const d = this.drag;
    if (!d) return;
    const p = d.area.point(e);
    d.x = p.x;
    d.y = p.y;
    if (Math.abs(p.x - d.x0) > 3 || Math.abs(p.y - d.y0) > 3) d.moved = true;
    if (!d.moved) return;
    if (this.view.tool === 'pan') {
      this.act.setSpan(panSpan(d.span, (-(p.x - d.x0) / this.act.plotWidth()) * (d.span.end - d.span.start), this.model.bounds));
    } else this.act.redraw();
  }

  private up(e: MouseEvent): void {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    const { model, view, act } = this;
    const p = d.area.point(e);
    const width = act.plotWidth();
    const scale = this.scale();
    if (view.tool === 'pan') d.area.canvas.style.cursor = 'grab';
    if (!d.moved) {
      if (view.tool === 'zoom') return act.setSpan(zoomSpan(model.span, scale.toPs(p.x), e.shiftKey ? 2 : 0.5, model.bounds));
      if (view.tool === 'timing') return act.setTiming(null);
      return act.select(this.sliceUnder(d.area, p)?.id ?? null);
    }
    const a = scale.toPs(Math.max(0, Math.min(d.x0, p.x)));
    const b = scale.toPs(Math.min(width, Math.max(d.x0, p.x)));
    const picked = { start: Math.round(a), end: Math.round(b) };
    if (view.tool === 'zoom') act.setSpan(zoomSpan(picked, (a + b) / 2, 1, model.bounds));
    else if (view.tool === 'timing') act.setTiming(picked);
    else if (view.tool === 'select') act.selectRange({ span: picked, tracks: tracksInBand(d.area.layout.rows, d.y0, p.y) });
    act.redraw();
  }

  private key(e: KeyboardEvent): void {
    const { model, view, act } = this;
    if (act.busy()) return;
    const t = e.target as HTMLElement | null;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey || !model.tracks) return;
    const { bounds } = model;
    const key = keyOf(e);
    if (KeyNavigator.handles(key)) {
      this.keys.press(key);
      return e.preventDefault();
    }
    const dy = scrollStep(key, act.pageHeight(), ROW);
    if (dy !== 0) {
      act.scrollTracks(dy);
      return e.preventDefault();
    }
    const toolIndex = ['1', '2', '3', '4'].indexOf(key);
    if (toolIndex >= 0) {
      const tool = TOOLS[toolIndex];
      if (tool) act.setTool(tool);
      return e.preventDefault();
    }
    const actions: Record<string, () => void> = {
      f: () => act.fit(),
      '0': () => act.setSpan({ ...bounds }),
      m: () => act.mark(),
      '[': () => act.neighbour(-1),
      ']': () => act.neighbour(1),
      '?': () => act.help(),
      '/': () => act.focusSearch(),
      escape: () => {
        if (view.timing) act.setTiming(null);
        else if (view.range) act.selectRange(null);
        else if (view.selected !== null) act.select(null);
        else act.clearPicks();
      },
    };
    const run = actions[key];
    if (!run) return;
    run();
    e.preventDefault();
  }
}
