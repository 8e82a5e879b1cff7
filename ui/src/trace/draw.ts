// Canvas drawing of the trace viewer: the time ruler, and a track area (host and section
// header bands, slices by depth with readable labels, counters, flow arrows, selections,
// search matches, the timing mark). Colors of the page theme come from CSS variables
// (light or dark). Only the rows inside the canvas's part of the content are drawn, and
// within a row at most about one rectangle per pixel and depth.

import { type Ruler, formatTime } from '../format';
import {
  type FlowArrow,
  type Layout,
  ROW,
  type Span,
  TimeScale,
  type TrackRow,
  HEADER,
  HOST_HEADER,
  counterSteps,
  colorFor,
  firstVisible,
  labelColorFor,
} from '../trace';

/** Theme colors read from the page's CSS variables. */
export interface Theme {
  bg: string;
  text: string;
  muted: string;
  grid: string;
  header: string;
  hostHeader: string;
  highlight: string;
  selected: string;
  flow: string;
  range: string;
  rangeStroke: string;
  timing: string;
  timingText: string;
  flag: string;
}

const LIGHT: Theme = {
  bg: '#ffffff',
  text: '#1f2328',
  muted: '#5f6672',
  grid: '#e6e8ec',
  header: '#eef1f5',
  hostHeader: '#dde4ee',
  highlight: '#f4b400',
  selected: '#000000',
  flow: '#d93025',
  range: 'rgba(26,115,232,0.15)',
  rangeStroke: 'rgba(26,115,232,0.8)',
  timing: '#1a66c9',
  timingText: '#ffffff',
  flag: '#8e24aa',
};

/** The theme of `el` (its CSS variables `--trace-*`, with light defaults). */
export function readTheme(el: Element): Theme {
  const css = getComputedStyle(el);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    bg: v('--card', LIGHT.bg),
    text: v('--text', LIGHT.text),
    muted: v('--muted', LIGHT.muted),
    grid: v('--trace-grid', LIGHT.grid),
    header: v('--trace-header', LIGHT.header),
    hostHeader: v('--trace-host-header', LIGHT.hostHeader),
    highlight: v('--trace-highlight', LIGHT.highlight),
    selected: v('--trace-selected', LIGHT.selected),
    flow: v('--trace-flow', LIGHT.flow),
    range: v('--trace-range', LIGHT.range),
    rangeStroke: v('--trace-range-stroke', LIGHT.rangeStroke),
    timing: v('--accent', LIGHT.timing),
    timingText: LIGHT.timingText,
    flag: v('--trace-flag', LIGHT.flag),
  };
}

/** Sizes a canvas to `width` × `height` CSS pixels at the device's pixel ratio. */
export function sizeCanvas(canvas: HTMLCanvasElement, width: number, height: number): void {
  const dpr = window.devicePixelRatio || 1;
  const cw = Math.max(1, Math.floor(width * dpr));
  const ch = Math.max(1, Math.floor(height * dpr));
  if (canvas.width !== cw || canvas.height !== ch) {
    canvas.width = cw;
    canvas.height = ch;
  }
  const w = `${width}px`;
  const h = `${height}px`;
  if (canvas.style.width !== w) canvas.style.width = w;
  if (canvas.style.height !== h) canvas.style.height = h;
}

const FONT = '11px system-ui, sans-serif';

/** Draws the ruler: ticks, labels, and at deep zoom the base time the labels count from. */
export function drawRuler(canvas: HTMLCanvasElement, r: Ruler, scale: TimeScale, theme: Theme, marks: { timing: Span | null; hoverPs: number | null; flags?: readonly { ps: number; name: string }[] }): void {
  const g = canvas.getContext('2d');
  if (!g) return;
  const dpr = window.devicePixelRatio || 1;
  const width = scale.width;
  const height = canvas.height / dpr;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = theme.bg;
  g.fillRect(0, 0, width, height);
  g.font = FONT;
  g.strokeStyle = theme.muted;
  g.fillStyle = theme.text;
  g.lineWidth = 1;
  g.beginPath();
  for (const t of r.ticks) {
    const x = Math.round(scale.toX(t.ps)) + 0.5;
    g.moveTo(x, height - 8);
    g.lineTo(x, height);
    g.fillText(t.label, x + 3, height - 10);
  }
  g.stroke();
  g.strokeStyle = theme.grid;
  g.beginPath();
  g.moveTo(0, height - 0.5);
  g.lineTo(width, height - 0.5);
  g.stroke();
  if (marks.timing) {
    const x0 = scale.toX(marks.timing.start);
    const x1 = scale.toX(marks.timing.end);
    const label = formatTime(marks.timing.end - marks.timing.start);
    const tw = g.measureText(label).width + 8;
    const lx = Math.min(Math.max(0, (x0 + x1) / 2 - tw / 2), width - tw);
    g.fillStyle = theme.timing;
    g.fillRect(Math.min(x0, x1), 0, Math.max(1, Math.abs(x1 - x0)), 3);
    g.fillRect(lx, 3, tw, 14);
    g.fillStyle = theme.timingText;
    g.fillText(label, lx + 4, 14);
  }
  // Flags: a pennant and the name at the top of the ruler.
  for (const f of marks.flags ?? []) {
    const x = Math.round(scale.toX(f.ps)) + 0.5;
    if (x < -100 || x > width + 1) continue;
    g.strokeStyle = theme.flag;
    g.fillStyle = theme.flag;
    g.beginPath();
    g.moveTo(x, 0);
    g.lineTo(x, height);
    g.stroke();
    g.beginPath();
    g.moveTo(x, 1);
    g.lineTo(x + 8, 4);
    g.lineTo(x, 7);
    g.closePath();
    g.fill();
    g.fillStyle = theme.text;
    g.fillText(f.name, x + 10, 9, 140);
  }
  if (marks.hoverPs !== null) {
    const x = Math.round(scale.toX(marks.hoverPs)) + 0.5;
    g.strokeStyle = theme.muted;
    g.beginPath();
    g.moveTo(x, 0);
    g.lineTo(x, height);
    g.stroke();
  }
}

/** What a track area draws besides its layout. */
export interface AreaScene {
  layout: Layout;
  scale: TimeScale;
  /** Content y at the canvas's top, and the canvas's height (CSS px). */
  offset: number;
  height: number;
  names: readonly string[];
  /** Grid lines (ruler ticks, ps). */
  grid: readonly number[];
  selectedId: number | null;
  /** Ids to outline (search matches among the results). */
  matchIds: ReadonlySet<number>;
  /** Name indexes of the window whose names match the search. */
  matchNames: ReadonlySet<number>;
  /** The current match (stronger outline). */
  currentMatch: number | undefined;
  hoverId: number | null;
  flows: readonly FlowArrow[];
  range: { span: Span; tracks: readonly number[] } | null;
  timing: Span | null;
  /** A drag in progress (content coordinates). */
  drag: { x0: number; x1: number; y0: number; y1: number; kind: 'band' | 'span' } | null;
  /** The end of the data (counters' last sample holds until it). */
  dataEnd: number;
  /** Times of the named flags (ps). */
  flags?: readonly number[];
}

/** Draws track areas; caches colors and text widths per window. */
export class Painter {
  private colors: string[] = [];
  private labelColors: string[] = [];
  private textWidths: number[] = [];
  private names: readonly string[] = [];

  constructor(private theme: Theme) {}

  setTheme(theme: Theme): void {
    this.theme = theme;
  }

  /** A new window's names: colors are looked up once per name. */
  setNames(names: readonly string[]): void {
    if (names === this.names) return;
    this.names = names;
    this.colors = names.map((n) => colorFor(n));
    this.labelColors = this.colors.map((c) => labelColorFor(c));
    this.textWidths = [];
  }

  /** The fill and label colors of a name index. */
  colorsOf(nameId: number): { fill: string; label: string } {
    return { fill: this.colors[nameId] ?? '#999', label: this.labelColors[nameId] ?? '#000' };
  }

  draw(canvas: HTMLCanvasElement, scene: AreaScene): void {
    const g = canvas.getContext('2d');
    if (!g) return;
    const theme = this.theme;
    const dpr = window.devicePixelRatio || 1;
    const { layout, scale, offset, height } = scene;
    const width = scale.width;
    g.setTransform(dpr, 0, 0, dpr, 0, -offset * dpr);
    g.fillStyle = theme.bg;
    g.fillRect(0, offset, width, height);
    g.font = FONT;
    const top = offset;
    const bottom = offset + height;
    // Grid.
    g.strokeStyle = theme.grid;
    g.lineWidth = 1;
    g.beginPath();
    for (const ps of scene.grid) {
      const x = Math.round(scale.toX(ps)) + 0.5;
      g.moveTo(x, top);
      g.lineTo(x, bottom);
    }
    g.stroke();
    // Header bands.
    g.fillStyle = theme.hostHeader;
    for (const host of layout.hosts) if (host.top + HOST_HEADER >= top && host.top <= bottom) g.fillRect(0, host.top, width, HOST_HEADER);
    g.fillStyle = theme.header;
    for (const s of layout.sections) if (s.top + HEADER >= top && s.top <= bottom) g.fillRect(0, s.top, width, HEADER);
    // A collapsed section draws its threads' activity in its header (the share busy).
    g.fillStyle = theme.timing;
    g.globalAlpha = 0.5;
    for (const s of layout.sections) {
      const d = s.density;
      if (!d || s.top + HEADER < top || s.top > bottom) continue;
      const per = (d.range.end - d.range.start) / d.bins.length;
      for (let b = 0; b < d.bins.length; b++) {
        const v = d.bins[b] ?? 0;
        if (v <= 0) continue;
        const x0 = scale.toX(d.range.start + b * per);
        const x1 = scale.toX(d.range.start + (b + 1) * per);
        if (x1 < 0 || x0 > width) continue;
        const hgt = Math.max(1, v * (HEADER - 4));
        g.fillRect(x0, s.top + HEADER - 2 - hgt, Math.max(1, x1 - x0), hgt);
      }
    }
    g.globalAlpha = 1;

    const selectedId = scene.selectedId;
    let selectedBox: [number, number, number] | null = null;
    let hoverBox: [number, number, number] | null = null;
    const highlights: [number, number, number][] = [];
    // Slices are painted color by color after the loop: setting a fill style parses the
    // color, which costs more than the rectangles themselves with thousands of slices.
    const rects: (number[] | undefined)[] = [];
    const labels: number[] = [];
    /** Folded tracks' strips: y, then x0, x1 pairs, then NaN. */
    const strips: number[] = [];
    for (const row of layout.rows) {
      const rowBottom = row.top + row.depths * ROW;
      if (rowBottom < top || row.top > bottom) continue;
      if (row.info.kind === 'counter') {
        if (row.samples?.length) this.drawCounter(g, row, scale, scene.dataEnd);
        continue;
      }
      // Right edge drawn so far per depth: a slice within an already painted pixel is
      // skipped (at most about one rectangle per pixel and depth, whatever the count), and
      // runs of touching slices narrower than two pixels merge into one rectangle in the
      // color of the run's first slice (a dense track is a few rectangles, not one per
      // pixel: canvases are rasterised in software without a GPU).
      const painted: number[] = [];
      const strip: number[] = [];
      const runs: ([number, number, number, number] | undefined)[] = [];
      const flush = (depth: number) => {
        const run = runs[depth];
        if (!run) return;
        (rects[run[3]] ??= []).push(run[0], row.top + depth * ROW + 1, run[1] - run[0]);
        runs[depth] = undefined;
      };
      const { id: ids, name: nameIds, ts: starts, dur: durations, depth: depths, count } = row.slices;
      for (let i = firstVisible(row.slices, scale.span.start, row.maxDur); i < count; i++) {
        const ts = starts[i] ?? 0;
        if (ts > scale.span.end) break; // sorted by start: the rest is right of the view
        const id = ids[i] ?? -1;
        const nameId = nameIds[i] ?? 0;
        const depth = depths[i] ?? 0;
        const x0 = scale.toX(ts);
        const x1 = scale.toX(ts + (durations[i] ?? 0));
        if (x1 < 0) continue;
        const x = Math.max(x0, -1);
        const w = Math.max(1, Math.min(x1, width + 1) - x);
        if (row.folded && depth > 0) {
          // A folded track: its deeper slices as one strip under the outermost ones.
          const last = strip.length - 1;
          if (last > 0 && x <= (strip[last] ?? 0) + 1) strip[last] = Math.max(strip[last] ?? 0, x + w);
          else strip.push(x, x + w);
          continue;
        }
        const special = id === selectedId || id === scene.currentMatch || id === scene.hoverId || scene.matchIds.has(id);
        const edge = painted[depth] ?? -Infinity;
        if (x + w <= edge && !special) continue;
        painted[depth] = Math.max(edge, Math.floor(x) + 1, x + w);
        const y = row.top + depth * ROW;
        const run = runs[depth];
        if (w < 2 && !special) {
          if (run && x <= run[1] + 0.5) run[1] = Math.max(run[1], x + w);
          else {
            flush(depth);
            runs[depth] = [x, x + w, 0, nameId];
          }
          continue;
        }
        flush(depth);
        (rects[nameId] ??= []).push(x, y + 1, w);
        if (id === selectedId) selectedBox = [x, y, w];
        if (id === scene.hoverId) hoverBox = [x, y, w];
        if (scene.matchNames.has(nameId) || scene.matchIds.has(id) || id === scene.currentMatch) highlights.push([x, y, w]);
        if (w > 24) labels.push(x, y, w, nameId);
      }
      runs.forEach((_, depth) => flush(depth));
      if (strip.length) strips.push(row.top + ROW - 3, ...strip, NaN);
    }
    rects.forEach((r, nameId) => {
      if (!r) return;
      g.fillStyle = this.colors[nameId] ?? '#999';
      for (let k = 0; k < r.length; k += 3) g.fillRect(r[k] ?? 0, r[k + 1] ?? 0, r[k + 2] ?? 0, ROW - 2);
    });
    g.fillStyle = theme.muted;
    for (let k = 0; k < strips.length; ) {
      const y = strips[k++] ?? 0;
      while (k < strips.length && !Number.isNaN(strips[k])) {
        const a = strips[k++] ?? 0;
        const b = strips[k++] ?? 0;
        g.fillRect(a, y, Math.max(1, b - a), 2);
      }
      k++;
    }
    // Labels: black or white, whichever contrasts more with the slice (≥ 4.5:1).
    let labelColor = '';
    for (let k = 0; k < labels.length; k += 4) {
      const [x, y, w, nameId] = [labels[k] ?? 0, labels[k + 1] ?? 0, labels[k + 2] ?? 0, labels[k + 3] ?? 0];
      const name = this.names[nameId] ?? '';
      const color = this.labelColors[nameId] ?? '#000';
      if (color !== labelColor) {
        g.fillStyle = color;
        labelColor = color;
      }
      const tw = this.textWidths[nameId] ?? (this.textWidths[nameId] = g.measureText(name).width);
      const lx = Math.max(x, 0) + 3;
      const room = Math.min(x + w, width) - lx - 3;
      if (tw <= room) g.fillText(name, lx, y + ROW - 5);
      else {
        const chars = Math.floor((name.length * (room - 8)) / tw);
        if (chars > 0) g.fillText(`${name.slice(0, chars)}…`, lx, y + ROW - 5);
      }
    }
    canvas.dataset.highlights = String(highlights.length);
    if (highlights.length) {
      g.strokeStyle = theme.highlight;
      g.lineWidth = 2;
      g.beginPath();
      for (const [x, y, w] of highlights) g.rect(x + 1, y + 2, Math.max(1, w - 2), ROW - 4);
      g.stroke();
    }
    if (hoverBox) {
      const [x, y, w] = hoverBox;
      g.strokeStyle = theme.muted;
      g.lineWidth = 1;
      g.strokeRect(x + 0.5, y + 1.5, Math.max(1, w - 1), ROW - 3);
    }
    if (selectedBox) {
      const [x, y, w] = selectedBox;
      g.strokeStyle = theme.selected;
      g.lineWidth = 2;
      g.strokeRect(x + 1, y + 2, Math.max(1, w - 2), ROW - 4);
    }
    g.lineWidth = 1;
    this.drawFlows(g, scene);
    this.drawOverlays(g, scene);
  }

  private drawCounter(g: CanvasRenderingContext2D, row: TrackRow, scale: TimeScale, dataEnd: number): void {
    const { points, max } = counterSteps(row.samples ?? [], dataEnd);
    const base = row.top + row.depths * ROW - 1;
    const hgt = row.depths * ROW - 4;
    const scaleMax = max > 0 ? max : 1;
    const color = colorFor(row.info.name);
    g.fillStyle = color;
    g.globalAlpha = 0.55;
    g.beginPath();
    g.moveTo(scale.toX(points[0]?.[0] ?? scale.span.start), base);
    for (const [ps, v] of points) g.lineTo(scale.toX(ps), base - (Math.max(0, v) / scaleMax) * hgt);
    g.lineTo(scale.toX(points[points.length - 1]?.[0] ?? scale.span.end), base);
    g.closePath();
    g.fill();
    g.globalAlpha = 1;
    g.strokeStyle = color;
    g.beginPath();
    points.forEach(([ps, v], i) => {
      const x = scale.toX(ps);
      const y = base - (Math.max(0, v) / scaleMax) * hgt;
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    });
    g.stroke();
    g.fillStyle = this.theme.text;
    g.fillText(`max ${formatNumber(max)}`, 4, row.top + 11);
  }

  private drawFlows(g: CanvasRenderingContext2D, scene: AreaScene): void {
    if (!scene.flows.length) return;
    const { scale } = scene;
    g.strokeStyle = this.theme.flow;
    g.fillStyle = this.theme.flow;
    g.lineWidth = 1.5;
    for (const a of scene.flows) {
      const x0 = scale.toX(a.from.ps);
      const x1 = scale.toX(a.to.ps);
      g.beginPath();
      g.moveTo(x0, a.from.y);
      const mx = (x0 + x1) / 2;
      g.bezierCurveTo(mx, a.from.y, mx, a.to.y, x1, a.to.y);
      g.stroke();
      // Arrow head pointing right into the target.
      g.beginPath();
      g.moveTo(x1, a.to.y);
      g.lineTo(x1 - 7, a.to.y - 4);
      g.lineTo(x1 - 7, a.to.y + 4);
      g.closePath();
      g.fill();
    }
    g.lineWidth = 1;
  }

  private drawOverlays(g: CanvasRenderingContext2D, scene: AreaScene): void {
    const { scale, layout, offset, height } = scene;
    const theme = this.theme;
    if (scene.range) {
      const x0 = scale.toX(scene.range.span.start);
      const x1 = scale.toX(scene.range.span.end);
      g.fillStyle = theme.range;
      const chosen = new Set(scene.range.tracks);
      for (const row of layout.rows) if (chosen.has(row.info.id)) g.fillRect(x0, row.top, Math.max(1, x1 - x0), row.depths * ROW);
    }
    if (scene.timing) {
      const x0 = scale.toX(scene.timing.start);
      const x1 = scale.toX(scene.timing.end);
      g.fillStyle = 'rgba(127,127,127,0.10)';
      g.fillRect(x0, offset, Math.max(1, x1 - x0), height);
      g.strokeStyle = theme.timing;
      g.beginPath();
      for (const x of [x0, x1]) {
        g.moveTo(Math.round(x) + 0.5, offset);
        g.lineTo(Math.round(x) + 0.5, offset + height);
      }
      g.stroke();
    }
    if (scene.flags?.length) {
      g.strokeStyle = theme.flag;
      g.setLineDash([4, 3]);
      g.beginPath();
      for (const ps of scene.flags) {
        const x = Math.round(scale.toX(ps)) + 0.5;
        if (x < 0 || x > scale.width) continue;
        g.moveTo(x, offset);
        g.lineTo(x, offset + height);
      }
      g.stroke();
      g.setLineDash([]);
    }
    const d = scene.drag;
    if (d) {
      const x0 = Math.min(d.x0, d.x1);
      const x1 = Math.max(d.x0, d.x1);
      if (d.kind === 'band') {
        g.fillStyle = theme.range;
        g.strokeStyle = theme.rangeStroke;
        const y0 = Math.min(d.y0, d.y1);
        const y1 = Math.max(d.y0, d.y1);
        g.fillRect(x0, y0, x1 - x0, y1 - y0);
        g.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0, y1 - y0);
      } else {
        g.fillStyle = theme.range;
        g.fillRect(x0, offset, x1 - x0, height);
      }
    }
  }
}

/** A counter value, compact. */
export function formatNumber(v: number): string {
  return Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(3) : String(Math.round(v * 1000) / 1000);
}

/** Creates a scale for a span over `width` pixels (re-exported for the page). */
export function scaleOf(span: Span, width: number): TimeScale {
  return new TimeScale(span, width);
}
