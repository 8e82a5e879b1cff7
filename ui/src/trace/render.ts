// Draws the trace viewer's canvases from the view model: the ruler (and the base time the
// labels count from at deep zoom) and each track area with the selection, search matches,
// flows, the timing mark and a drag in progress. Follows the page theme.

import { ruler as rulerOf } from '../format';
import { TimeScale } from '../trace';
import { Painter, type Theme, drawRuler, readTheme, sizeCanvas } from './draw';
import type { Drag } from './input';
import type { TraceModel } from './model';
import type { Overview } from './overview';
import type { TrackArea } from './track_area';
import type { TraceView } from './view';

export class Renderer {
  /** The slice under the pointer and its time (ps). */
  hover: number | null = null;
  hoverPs: number | null = null;
  private theme: Theme = readTheme(document.documentElement);
  private readonly painter = new Painter(this.theme);
  private readonly observer: MutationObserver;
  private readonly media: MediaQueryList | undefined;
  private readonly onTheme = () => {
    this.theme = readTheme(document.documentElement);
    this.painter.setTheme(this.theme);
    this.changed?.();
  };
  /** Called when the theme changed (the page redraws). */
  changed: (() => void) | null = null;
  /** The overview strip, drawn with the rest. */
  overview: Overview | null = null;

  constructor(
    private readonly model: TraceModel,
    private readonly view: TraceView,
    private readonly areas: readonly TrackArea[],
    private readonly ruler: { canvas: HTMLCanvasElement; base: HTMLElement },
  ) {
    this.media = window.matchMedia?.('(prefers-color-scheme: dark)');
    this.media?.addEventListener?.('change', this.onTheme);
    this.observer = new MutationObserver(this.onTheme);
    this.observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  }

  stop(): void {
    this.observer.disconnect();
    this.media?.removeEventListener?.('change', this.onTheme);
  }

  draw(width: number, drag: Drag | null): void {
    const t0 = performance.now();
    this.drawAll(width, drag);
    // The benchmark (scripts/bench/trace-ui.mjs) collects each frame's drawing time.
    (window as { __oxprofFrameMs?: number[] }).__oxprofFrameMs?.push(performance.now() - t0);
  }

  private drawAll(width: number, drag: Drag | null): void {
    const { model, view, painter } = this;
    const scale = new TimeScale(model.span, width);
    const r = rulerOf(model.span, model.bounds.start, width);
    const rc = this.ruler.canvas;
    sizeCanvas(rc, width, 28);
    drawRuler(rc, r, scale, this.theme, { timing: view.timing, hoverPs: this.hoverPs, flags: view.flags });
    this.overview?.draw(width, this.theme);
    this.ruler.base.textContent = r.base !== null ? `${r.baseLabel} +` : '';
    this.ruler.base.title = r.base !== null ? `Tick labels count from ${r.baseLabel} after the trace start` : '';
    rc.dataset.labels = r.ticks.map((t) => t.label).join('|');
    rc.dataset.base = r.baseLabel;
    const names = model.names;
    painter.setNames(names);
    const matchIds = new Set((model.search.result?.matches ?? []).map((m) => m.id));
    const matchNames = model.search.args ? new Set<number>() : model.matchingNames();
    const currentMatch = model.search.result?.matches[model.search.index]?.id;
    const arrows = { main: model.flowArrowsIn('main'), pinned: model.flowArrowsIn('pinned') };
    const main = this.areas.find((a) => a.kind === 'main');
    if (main) {
      // Frames drawn (the benchmark waits for the first frame after an input).
      main.canvas.dataset.draws = String(Number(main.canvas.dataset.draws ?? 0) + 1);
      main.canvas.dataset.flowArrows = String(arrows.main.length + arrows.pinned.length);
      if (model.flow) main.canvas.dataset.flowId = model.flow.id;
      else delete main.canvas.dataset.flowId;
    }
    for (const a of this.areas) {
      if (!a.layout.rows.length && a.kind === 'pinned') continue;
      a.canvas.dataset.offset = String(a.offset);
      painter.draw(a.canvas, {
        layout: a.layout,
        scale,
        offset: a.offset,
        height: a.canvasHeight,
        names,
        grid: r.ticks.map((t) => t.ps),
        selectedId: view.selected,
        matchIds,
        matchNames,
        currentMatch,
        hoverId: this.hover,
        flows: arrows[a.kind],
        range: view.range,
        timing: view.timing,
        drag: drag && drag.moved && drag.area === a ? { x0: drag.x0, x1: drag.x, y0: drag.y0, y1: drag.y, kind: view.tool === 'select' ? 'band' : 'span' } : null,
        dataEnd: model.data?.end_ps ?? model.span.end,
        flags: view.flags.map((f) => f.ps),
      });
    }
  }
}
