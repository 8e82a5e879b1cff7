// A track area of the trace viewer: a vertically scrolling box of track labels (host and
// section headers as buttons, track names with pin / hide buttons, full names in tooltips;
// a click picks a track, ctrl/⌘+click and shift+click pick several) beside a canvas that
// stays in view (sticky) and draws the rows under it. The main area holds every shown
// track; a second, smaller one holds the pinned tracks above it, each named with its
// process.

import { formatCount } from '../format';
import { h, replaceChildren } from '../dom';
import { type Layout, HEADER, HOST_HEADER, ROW } from '../trace';
import { DEBUG_TRACK_ID } from './debug_track';
import { sizeCanvas } from './draw';

export interface AreaCallbacks {
  toggleSection(pid: number): void;
  toggleHost(host: string): void;
  pin(track: number): void;
  hide(track: number): void;
  /** Shows a section's hidden tracks again. */
  unhideSection(pid: number): void;
  /** A track's name clicked: picked alone, added or removed (ctrl/⌘), or a run of them (shift). */
  pick(track: number, how: 'only' | 'toggle' | 'range'): void;
  /** Whether a track is picked. */
  picked(track: number): boolean;
  /** The process label of a track (pinned tracks show it). */
  processOf(track: number): string;
  /** Folds a track to its outermost slices, or unfolds it. */
  fold(track: number): void;
}

export class TrackArea {
  readonly scroll: HTMLElement;
  readonly content: HTMLElement;
  readonly labels: HTMLElement;
  readonly plot: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  layout: Layout = { hosts: [], sections: [], rows: [], height: 0 };
  /** CSS height of the canvas. */
  canvasHeight = 1;

  constructor(
    readonly kind: 'main' | 'pinned',
    private readonly callbacks: AreaCallbacks,
  ) {
    this.labels = h('div', { class: 'trace-labels', 'data-role': kind === 'main' ? 'trace-labels' : 'trace-pinned-labels' });
    this.canvas = h('canvas', { class: 'trace-canvas', 'data-role': kind === 'main' ? 'trace-canvas' : 'trace-pinned-canvas' });
    this.plot = h('div', { class: 'trace-plot' }, this.canvas);
    this.content = h('div', { class: 'trace-content' }, this.labels, this.plot);
    this.scroll = h('div', { class: kind === 'main' ? 'trace-scroll' : 'trace-scroll trace-pinned', 'data-role': kind === 'main' ? 'trace-scroll' : 'trace-pinned' }, this.content);
  }

  /** Content y at the canvas's top. */
  get offset(): number {
    return Math.round(Math.max(0, Math.min(this.layout.height - this.canvasHeight, this.scroll.scrollTop)));
  }

  /** A mouse position in content coordinates (x from the plot's left). */
  point(e: MouseEvent): { x: number; y: number } {
    const rect = this.canvas.getBoundingClientRect();
    return { x: e.clientX - rect.left, y: e.clientY - rect.top + this.offset };
  }

  /** Whether content y `y` is on screen. */
  shows(y: number, height = ROW): boolean {
    return y >= this.scroll.scrollTop && y + height <= this.scroll.scrollTop + this.scroll.clientHeight;
  }

  /** Scrolls so that content rows `[y, y + height)` are on screen (centered when they were not). */
  reveal(y: number, height = ROW): void {
    if (this.shows(y, height)) return;
    this.scroll.scrollTop = Math.max(0, y - Math.max(0, (this.scroll.clientHeight - height) / 2));
  }

  /** A new layout: labels rebuilt, content and canvas resized. */
  setLayout(layout: Layout, plotWidth: number, maxHeight: number): void {
    this.layout = layout;
    const cb = this.callbacks;
    const nodes: HTMLElement[] = [];
    for (const host of layout.hosts) {
      nodes.push(
        h(
          'button',
          {
            type: 'button',
            class: 'trace-host',
            style: `top:${host.top}px;height:${HOST_HEADER}px`,
            'data-host': host.name,
            'data-collapsed': String(host.collapsed),
            'aria-expanded': String(!host.collapsed),
            title: `${host.name}: ${host.collapsed ? 'expand' : 'collapse'} its ${host.sections} processes`,
            onclick: () => cb.toggleHost(host.name),
          },
          h('span', { 'aria-hidden': 'true', class: 'twisty' }, host.collapsed ? '▸' : '▾'),
          h('span', { 'data-role': 'host-name' }, host.name),
        ),
      );
    }
    for (const s of layout.sections) {
      const title = s.label ? `${s.label} (${s.name})` : s.name;
      nodes.push(
        h(
          'div',
          { class: 'trace-section', style: `top:${s.top}px;height:${HEADER}px`, 'data-section': s.pid, 'data-name': s.name, 'data-collapsed': String(s.collapsed), 'data-density': s.density ? 'true' : null, title },
          h(
            'button',
            {
              type: 'button',
              class: 'trace-section-toggle',
              'aria-expanded': String(!s.collapsed),
              title: `${title} — ${s.collapsed ? 'expand' : 'collapse'} (${s.tracks} tracks)`,
              onclick: () => cb.toggleSection(s.pid),
            },
            h('span', { 'aria-hidden': 'true', class: 'twisty' }, s.collapsed ? '▸' : '▾'),
            h('span', { 'data-role': 'section-name', class: 'trace-name' }, s.label ?? shortSectionName(s.name, s.host)),
            s.collapsed ? h('span', { class: 'muted trace-count' }, ` (${s.tracks})`) : null,
          ),
          s.hiddenTracks
            ? h('button', { type: 'button', class: 'trace-chip', 'data-role': 'unhide', title: 'Show the hidden tracks of this process again', onclick: () => cb.unhideSection(s.pid) }, `${s.hiddenTracks} hidden`)
            : null,
          s.pinnedTracks ? h('span', { class: 'trace-chip static', 'data-role': 'pinned-count', title: 'Tracks of this process pinned to the top' }, `${s.pinnedTracks} pinned`) : null,
          s.filteredTracks ? h('span', { class: 'muted trace-count', 'data-role': 'filtered-count', title: 'Tracks the track filter leaves out' }, `${s.filteredTracks} filtered`) : null,
        ),
      );
    }
    for (const row of layout.rows) {
      const name = row.info.name || `(${row.info.kind} ${row.info.id})`;
      const process = row.pinned ? cb.processOf(row.info.id) : '';
      const picked = cb.picked(row.info.id);
      nodes.push(
        h(
          'div',
          {
            class: picked ? 'trace-track-label picked' : 'trace-track-label',
            style: `top:${row.top}px;height:${row.depths * ROW}px`,
            'data-track': row.info.id,
            'data-debug': row.info.id === DEBUG_TRACK_ID ? 'true' : null,
            'data-kind': row.info.kind,
            'data-depths': row.depths,
            'data-folded': row.folded ? 'true' : null,
            'data-picked': picked ? 'true' : null,
            'aria-selected': picked ? 'true' : 'false',
            title: `${process ? `${process} › ` : ''}${name}\n${formatCount(row.info.num_events)} events${row.hidden ? ` · ${formatCount(row.hidden)} merged at this zoom` : ''}\nClick to pick it (ctrl/⌘+click, shift+click: several), then pin or hide them together`,
            onclick: (e: Event) => {
              if ((e.target as HTMLElement).closest('button')) return;
              const m = e as MouseEvent;
              cb.pick(row.info.id, m.shiftKey ? 'range' : m.ctrlKey || m.metaKey ? 'toggle' : 'only');
            },
          },
          row.fullDepths > 1 && row.info.kind === 'thread' && row.info.id !== DEBUG_TRACK_ID
            ? h(
                'button',
                {
                  type: 'button',
                  class: 'trace-fold',
                  'data-role': 'fold',
                  'aria-expanded': String(!row.folded),
                  'aria-label': `${row.folded ? 'Unfold' : 'Fold'} ${name}`,
                  title: row.folded ? `Show its ${row.fullDepths} levels of nested slices` : 'Fold it to its outermost slices (the nested ones as a strip)',
                  onclick: () => cb.fold(row.info.id),
                },
                row.folded ? '▸' : '▾',
              )
            : h('span', { class: 'trace-fold-space', 'aria-hidden': 'true' }),
          process ? h('span', { class: 'trace-track-process muted', 'data-role': 'track-process' }, `${process} › `) : null,
          h('span', { class: 'trace-track-name trace-name' }, name),
          row.folded ? h('span', { class: 'muted trace-levels' }, ` ${row.fullDepths} levels`) : null,
          row.hidden ? h('span', { class: 'trace-track-hidden', 'data-role': 'track-hidden' }, ` +${formatCount(row.hidden)}`) : null,
          h(
            'span',
            { class: 'trace-track-actions' },
            row.info.id === DEBUG_TRACK_ID
              ? h('button', { type: 'button', 'data-role': 'debug-remove', 'aria-label': 'Remove the debug track', title: 'Remove the debug track', onclick: () => cb.pin(row.info.id) }, 'Remove')
              : h(
                  'button',
                  {
                    type: 'button',
                    'data-role': row.pinned ? 'unpin' : 'pin',
                    'aria-label': `${row.pinned ? 'Unpin' : 'Pin'} ${name}`,
                    title: row.pinned ? 'Unpin' : 'Pin to the top',
                    onclick: () => cb.pin(row.info.id),
                  },
                  row.pinned ? 'Unpin' : 'Pin',
                ),
            row.pinned ? null : h('button', { type: 'button', 'data-role': 'hide', 'aria-label': `Hide ${name}`, title: 'Hide this track', onclick: () => cb.hide(row.info.id) }, 'Hide'),
          ),
        ),
      );
    }
    replaceChildren(this.labels, nodes);
    this.content.style.height = `${layout.height}px`;
    this.resize(plotWidth, maxHeight);
  }

  /** Fits the canvas to the plot's width and the visible height. */
  resize(plotWidth: number, maxHeight: number): void {
    const visible = this.scroll.clientHeight || maxHeight;
    this.canvasHeight = Math.max(1, Math.min(this.layout.height || 1, visible || 1));
    // Setting a canvas's size reallocates (and clears) it: only when it changes, not on
    // every window that arrives while panning.
    sizeCanvas(this.canvas, plotWidth, this.canvasHeight);
  }
}

/**
 * A section's name without its host (`"10.0.0.1_6003 /device:GPU:0"` → `/device:GPU:0`): the
 * host is in the page title or the host header, and a narrow column would otherwise cut
 * every section of a host to the same stub. The full name is the section's tooltip.
 */
export function shortSectionName(name: string, host: string): string {
  return host && name.startsWith(`${host} `) && name.length > host.length + 1 ? name.slice(host.length + 1) : name;
}
