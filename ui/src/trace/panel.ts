// The trace viewer's docked panel: tabs for the selection's details, the search results and
// the named flags, under a handle that resizes it (drag, or the arrow keys). It stays
// closed until there is something to show (a selection, search results, a flag opened)
// and its × closes it, so the tracks get the whole height.

import { h, replaceChildren } from '../dom';
import { resizer } from './widgets';

export type PanelTab = 'details' | 'results' | 'flags';

export class DockedPanel {
  readonly element: HTMLElement;
  readonly handle: HTMLElement;
  /** The selection's details (an event, or an area selection's tabs). */
  readonly details: HTMLElement;
  readonly results: HTMLElement;
  readonly flags: HTMLElement;
  readonly toggleButton: HTMLButtonElement;
  private readonly tabs: Record<PanelTab, HTMLButtonElement>;
  private readonly bodies: Record<PanelTab, HTMLElement>;
  private current: PanelTab = 'details';

  constructor(
    private readonly workspace: HTMLElement,
    private readonly resized: () => void,
  ) {
    const tab = (key: PanelTab, label: string) =>
      h('button', { type: 'button', role: 'tab', class: 'trace-tab', 'data-tab': key, 'aria-selected': String(key === 'details'), onclick: () => this.open(key) }, label);
    this.tabs = { details: tab('details', 'Details'), results: tab('results', 'Search results'), flags: tab('flags', 'Flags') };
    this.details = h('div', { class: 'trace-details', 'data-role': 'trace-details', role: 'tabpanel' });
    this.results = h('div', { class: 'trace-details hidden', 'data-role': 'trace-results', role: 'tabpanel' }, h('p', { class: 'muted' }, 'Search to list matching events.'));
    this.flags = h('div', { class: 'trace-details hidden', 'data-role': 'trace-flags', role: 'tabpanel' });
    this.bodies = { details: this.details, results: this.results, flags: this.flags };
    const close = h('button', { type: 'button', class: 'trace-panel-close', 'data-role': 'panel-close', 'aria-label': 'Close the panel', title: 'Close the panel (the tracks get the whole height)', onclick: () => this.close() }, '×');
    this.element = h(
      'section',
      { class: 'trace-panel', 'data-role': 'trace-panel', 'aria-label': 'Selection details' },
      h('div', { class: 'trace-tabs', role: 'tablist' }, this.tabs.details, this.tabs.results, this.tabs.flags, h('span', { class: 'spacer' }), close),
      this.details,
      this.results,
      this.flags,
    );
    this.handle = h('div', { class: 'trace-panel-handle', 'data-role': 'panel-resizer', role: 'separator', 'aria-orientation': 'horizontal', 'aria-label': 'Resize the details panel', tabindex: 0 });
    this.toggleButton = h(
      'button',
      { type: 'button', class: 'button', 'data-role': 'panel-toggle', 'aria-pressed': 'false', title: 'Show or hide the details panel', onclick: () => (this.isOpen ? this.close() : this.open(this.current)) },
      'Panel',
    );
    const initial = Math.round(Math.min(260, (window.innerHeight || 800) * 0.28));
    resizer(this.handle, 'y', 'oxprof.trace.panel', initial, 80, 2000, (px) => workspace.style.setProperty('--trace-panel-h', `${px}px`), () => resized(), true);
    // Closed until there is something to show (no resize callback: the page is not built yet).
    this.element.classList.add('hidden');
    this.handle.classList.add('hidden');
    workspace.dataset.panel = 'closed';
  }

  get isOpen(): boolean {
    return !this.element.classList.contains('hidden');
  }

  get tab(): PanelTab {
    return this.current;
  }

  /** Opens the panel on a tab. */
  open(which: PanelTab): void {
    this.current = which;
    for (const key of Object.keys(this.tabs) as PanelTab[]) {
      this.tabs[key].setAttribute('aria-selected', String(key === which));
      this.bodies[key].classList.toggle('hidden', key !== which);
    }
    this.setOpen(true);
  }

  close(): void {
    this.setOpen(false);
  }

  /** A tab's label (with a count). */
  label(which: PanelTab, text: string): void {
    replaceChildren(this.tabs[which], text);
  }

  private setOpen(open: boolean): void {
    const was = this.isOpen;
    this.element.classList.toggle('hidden', !open);
    this.handle.classList.toggle('hidden', !open);
    this.workspace.dataset.panel = open ? 'open' : 'closed';
    this.toggleButton.setAttribute('aria-pressed', String(open));
    if (was !== open) this.resized();
  }
}
