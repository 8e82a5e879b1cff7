// The trace viewer's keyboard help sheet (`?`): a modal dialog listing every key and mouse
// gesture; Escape or its button closes it and gives the focus back.

import { h } from '../dom';

export const KEYS: [string, string][] = [
  ['wheel, PageUp / PageDown, ↑ / ↓', 'scroll the tracks (Home / End: to the top / bottom)'],
  ['ctrl/⌘+wheel', 'zoom at the pointer'],
  ['shift+wheel, sideways swipe', 'pan'],
  ['W / S (hold)', 'zoom in / out at the pointer, faster the longer held'],
  ['A / D (hold)', 'pan left / right, faster the longer held'],
  ['overview strip', 'drag the box to move the view, drag elsewhere for a new view, click to centre it'],
  ['1 2 3 4', 'tools: select, pan, zoom, timing'],
  ['click', 'select a slice: its details and the slices of the same name below'],
  ['drag (select tool)', 'select an area: slices clipped to it, pivot table, flows, counters'],
  ['click a track name', 'pick it (ctrl/⌘+click, shift+click: several), then pin or hide them together'],
  ['click the ruler', 'drop a named flag (listed in the panel\'s Flags tab)'],
  ['[ / ]', 'previous / next slice on the same track and depth'],
  ['f', 'fit the view to the selection'],
  ['m', 'mark the selection\'s time range (timing mark)'],
  ['0', 'reset the view to the whole trace'],
  ['/', 'search (names; arguments too with "args")'],
  ['Enter / shift+Enter', 'next / previous search match'],
  ['Esc', 'clear the mark, then the selection, then the picked tracks'],
  ['?', 'this help'],
];

export class HelpSheet {
  readonly element: HTMLElement;
  private returnFocus: HTMLElement | null = null;
  private readonly closeButton: HTMLButtonElement;

  constructor() {
    this.closeButton = h('button', { type: 'button', class: 'button', 'data-role': 'help-close', onclick: () => this.close() }, 'Close');
    const box = h(
      'div',
      { class: 'dialog', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'trace-help-title', 'data-role': 'trace-help-sheet' },
      h('h2', { id: 'trace-help-title' }, 'Trace viewer keys'),
      h('table', { class: 'props' }, h('tbody', null, KEYS.map(([k, what]) => h('tr', null, h('th', { scope: 'row' }, h('kbd', null, k)), h('td', null, what))))),
      h('p', { class: 'muted' }, 'Hover a track name to pin it to the top (Pin) or hide it (Hide); "Filter tracks" shows only the tracks whose name or process holds a text. Drag the edges of the name column and of the details panel (or focus them and use the arrow keys) to resize them; × closes the panel.'),
      h('div', { class: 'dialog-buttons' }, this.closeButton),
    );
    this.element = h('div', { class: 'dialog-backdrop hidden', 'data-role': 'help-backdrop', onclick: (e: Event) => e.target === this.element && this.close() }, box);
    this.element.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' || e.key === '?') {
        e.preventDefault();
        e.stopPropagation();
        this.close();
      }
    });
  }

  get isOpen(): boolean {
    return !this.element.classList.contains('hidden');
  }

  open(): void {
    this.returnFocus = document.activeElement as HTMLElement | null;
    this.element.classList.remove('hidden');
    this.closeButton.focus();
  }

  close(): void {
    this.element.classList.add('hidden');
    this.returnFocus?.focus();
  }

  toggle(): void {
    if (this.isOpen) this.close();
    else this.open();
  }
}
