// Named flags of the trace viewer: times marked on the timeline (a click on the ruler, or
// the Flags tab's button), drawn across the tracks with their names in the ruler, listed in
// the panel's Flags tab (rename, go to, remove) and kept in the URL (`flags=`).

import { h, replaceChildren } from '../dom';
import { exactMicros, formatTime } from '../format';
import { type Span, TimeScale, zoomSpan } from '../trace';
import type { DockedPanel } from './panel';
import { type Flag, MAX_FLAGS, type TraceView } from './view';

/** A flag at `ps` named after its place in the list (`Flag 3`), the list kept sorted by time. */
export function addFlag(flags: readonly Flag[], ps: number, name?: string): Flag[] {
  if (flags.length >= MAX_FLAGS) return [...flags];
  const used = new Set(flags.map((f) => f.name));
  let n = flags.length + 1;
  while (used.has(`Flag ${n}`)) n++;
  return [...flags, { ps: Math.round(ps), name: name ?? `Flag ${n}` }].sort((a, b) => a.ps - b.ps);
}

/** The flag drawn within `px` pixels of `x` on the ruler, or -1. */
export function flagAt(flags: readonly Flag[], x: number, toX: (ps: number) => number, px = 5): number {
  let best = -1;
  let bestD = px;
  flags.forEach((f, i) => {
    const d = Math.abs(toX(f.ps) - x);
    if (d <= bestD) {
      best = i;
      bestD = d;
    }
  });
  return best;
}

export interface FlagListOptions {
  /** The trace start (times are shown from it). */
  origin: number;
  span: Span;
  change(flags: Flag[]): void;
  goTo(f: Flag): void;
  /** Adds a flag at the view's centre. */
  addHere(): void;
}

/** The Flags tab: every flag with its name (editable), its time, Go to and Remove. */
export function renderFlagList(box: HTMLElement, flags: readonly Flag[], o: FlagListOptions): void {
  const rows = flags.map((f, i) =>
    h(
      'tr',
      { 'data-flag': i, 'data-ps': f.ps },
      h(
        'td',
        null,
        (() => {
          const input = h('input', { type: 'text', class: 'trace-flag-name', value: f.name, 'data-role': 'flag-name', 'aria-label': `Name of the flag at ${formatTime(f.ps - o.origin)}`, maxlength: 80 });
          input.addEventListener('change', () => o.change(flags.map((g, j) => (j === i ? { ...g, name: input.value.trim() || g.name } : g))));
          input.addEventListener('keydown', (e) => {
            if (e.key === 'Enter') input.blur();
          });
          return input;
        })(),
      ),
      h('td', { class: 'num', title: exactMicros(f.ps - o.origin) }, formatTime(f.ps - o.origin, 7)),
      h(
        'td',
        null,
        h('button', { type: 'button', class: 'link-button', 'data-role': 'flag-go', onclick: () => o.goTo(f) }, 'Go to'),
        ' · ',
        h('button', { type: 'button', class: 'link-button', 'data-role': 'flag-remove', onclick: () => o.change(flags.filter((_, j) => j !== i)) }, 'Remove'),
      ),
    ),
  );
  replaceChildren(
    box,
    h(
      'div',
      { class: 'card-header' },
      h('p', { class: 'trace-summary' }, flags.length ? `${flags.length} flag${flags.length === 1 ? '' : 's'} (kept in the URL).` : 'No flags yet: click the time ruler to drop one.'),
      h('div', { class: 'spacer' }),
      h('button', { type: 'button', class: 'button', 'data-role': 'flag-add', disabled: flags.length >= MAX_FLAGS, onclick: () => o.addHere() }, 'Add a flag at the centre'),
    ),
    flags.length
      ? h('table', { class: 'data-table trace-flags', 'data-role': 'flag-list' }, h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', { class: 'num' }, 'At (from the trace start)'), h('th', null, ''))), h('tbody', null, rows))
      : null,
  );
}

export interface FlagsHost {
  span(): Span;
  bounds(): Span;
  /** Whether the trace is loaded (a click on the ruler needs it). */
  active(): boolean;
  plotWidth(): number;
  setSpan(s: Span): void;
  /** Writes the view to the URL. */
  save(): void;
  redraw(): void;
}

/** The flags of a trace viewer: a click on the ruler drops one (or opens the one there), the Flags tab lists them. */
export class FlagsController {
  constructor(
    private readonly view: TraceView,
    private readonly panel: DockedPanel,
    ruler: HTMLCanvasElement,
    private readonly host: FlagsHost,
  ) {
    ruler.addEventListener('click', (e) => {
      if (!host.active()) return;
      const x = e.clientX - ruler.getBoundingClientRect().left;
      const scale = new TimeScale(host.span(), host.plotWidth());
      const hit = flagAt(view.flags, x, (ps) => scale.toX(ps));
      if (hit < 0) this.set(addFlag(view.flags, scale.toPs(x)));
      panel.open('flags');
      const at = hit < 0 ? view.flags.findIndex((f) => Math.abs(f.ps - scale.toPs(x)) < 1) : hit;
      const input = panel.flags.querySelectorAll<HTMLInputElement>('[data-role="flag-name"]')[at];
      input?.focus();
      input?.select();
    });
  }

  set(next: Flag[]): void {
    this.view.flags = next;
    this.host.save();
    this.show();
    this.host.redraw();
  }

  /** The Flags tab and its label. */
  show(): void {
    const { view, host } = this;
    this.panel.label('flags', view.flags.length ? `Flags (${view.flags.length})` : 'Flags');
    renderFlagList(this.panel.flags, view.flags, {
      origin: host.bounds().start,
      span: host.span(),
      change: (f) => this.set(f),
      goTo: (f) => {
        const span = host.span();
        const len = span.end - span.start;
        host.setSpan(zoomSpan({ start: f.ps - len / 2, end: f.ps + len / 2 }, f.ps, 1, host.bounds()));
      },
      addHere: () => {
        const span = host.span();
        this.set(addFlag(view.flags, (span.start + span.end) / 2));
      },
    });
  }
}
