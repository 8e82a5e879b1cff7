// The trace viewer's toolbar: the mouse tools (the active one pressed), the search box with
// its "args" switch, previous / next and its status, the track filter, the hosts picker's
// place, the timing mark, the panel and keys buttons (one line at 1440 px); and the status
// line under it (the window shown, what is loaded, the active tool's help, the tracks
// picked with their actions).

import { h, replaceChildren } from '../dom';
import { formatCount, formatTime, ruler as rulerOf } from '../format';
import type { Span } from '../trace';
import type { TraceModel } from './model';
import { type TraceTool, TOOLS } from './view';

export const TOOL_LABELS: Record<TraceTool, string> = { select: 'Select', pan: 'Pan', zoom: 'Zoom', timing: 'Timing' };
export const TOOL_HELP: Record<TraceTool, string> = {
  select: 'Select (1): click a slice for its details; drag to select an area (slices, pivot, flows, counters)',
  pan: 'Pan (2): drag to pan; click a slice for its details',
  zoom: 'Zoom (3): drag an interval to zoom to it; click to zoom in (shift: out)',
  timing: 'Timing (4): drag to mark an interval and measure it',
};

export class Toolbar {
  readonly toolButtons: HTMLButtonElement[];
  readonly activeTool = h('span', { class: 'trace-active-tool muted', 'data-role': 'trace-help', 'aria-live': 'polite' });
  readonly timingBox = h('span', { class: 'trace-timing', 'data-role': 'trace-timing' });
  readonly searchInput = h('input', {
    type: 'search',
    placeholder: 'Search events (any part of the name)',
    'data-role': 'trace-search',
    'aria-label': 'Search events by name (substring, any case)',
    class: 'trace-search',
  });
  readonly argsBox = h('input', { type: 'checkbox', 'data-role': 'search-args' });
  readonly searchStatus = h('span', { class: 'muted trace-search-status', 'data-role': 'search-status', 'aria-live': 'polite' });
  readonly prevButton = h('button', { type: 'button', class: 'button', 'data-role': 'search-prev', title: 'Previous match (shift+Enter)', 'aria-label': 'Previous match' }, '◀');
  readonly nextButton = h('button', { type: 'button', class: 'button', 'data-role': 'search-next', title: 'Next match (Enter)', 'aria-label': 'Next match' }, '▶');
  readonly helpButton = h('button', { type: 'button', class: 'button', 'data-role': 'trace-help-button', title: 'Keys (?)' }, '? Keys');
  readonly hostsHolder = h('span', { class: 'trace-hosts' });
  readonly trackFilter = h('input', {
    type: 'search',
    placeholder: 'Filter tracks',
    'data-role': 'track-filter',
    'aria-label': 'Show only the tracks whose name or process contains this text',
    title: 'Show only the tracks whose name (or whose process name) contains this text, any case',
    class: 'trace-track-filter',
  });
  readonly status = h('div', { class: 'trace-status', 'data-role': 'trace-status' });
  readonly hiddenBox = h('div', { class: 'trace-hidden', 'data-role': 'trace-hidden' });
  /** The tracks picked in the name column and what to do with them. */
  readonly pickBox = h('div', { class: 'trace-picked', 'data-role': 'track-picks' });
  readonly element: HTMLElement;

  constructor(onTool: (t: TraceTool) => void, extra: HTMLElement[] = []) {
    this.toolButtons = TOOLS.map((t, i) =>
      h('button', { type: 'button', class: 'trace-tool', 'data-tool': t, title: TOOL_HELP[t], onclick: () => onTool(t) }, h('kbd', null, String(i + 1)), ` ${TOOL_LABELS[t]}`),
    );
    const bar = h(
      'div',
      { class: 'trace-toolbar', 'data-role': 'trace-toolbar', role: 'toolbar', 'aria-label': 'Trace tools' },
      h('span', { class: 'trace-tools', role: 'group', 'aria-label': 'Mouse tool' }, this.toolButtons),
      h(
        'span',
        { class: 'trace-omnibox' },
        this.searchInput,
        h('label', { class: 'trace-args', title: 'Search argument values too (long names, HLO ops, shapes…)' }, this.argsBox, ' args'),
        this.prevButton,
        this.nextButton,
        this.searchStatus,
      ),
      this.trackFilter,
      this.hostsHolder,
      h('span', { class: 'spacer' }),
      this.timingBox,
      extra,
      this.helpButton,
    );
    this.element = h('div', { class: 'trace-bar' }, bar, h('div', { class: 'trace-statusbar' }, this.status, this.hiddenBox, this.pickBox, h('span', { class: 'spacer' }), this.activeTool));
  }

  /** The status line: the window shown, and what the loaded window holds and merges. */
  showWindow(model: TraceModel, plotWidth: number): void {
    const { span, bounds, data, loaded } = model;
    const r = rulerOf(span, bounds.start, plotWidth);
    const from = r.base !== null ? r.baseLabel : formatTime(span.start - bounds.start, 6);
    const shown = `Showing ${formatTime(span.end - span.start)} of ${formatTime(bounds.end - bounds.start)}, from ${from}`;
    replaceChildren(this.status, h('span', { 'data-role': 'trace-window', 'data-start-ps': span.start, 'data-end-ps': span.end }, shown));
    const box = this.hiddenBox;
    if (!data || !loaded) return replaceChildren(box);
    Object.assign(box.dataset, {
      hidden: String(data.total_hidden),
      inWindow: String(data.total_in_window),
      fetchStart: String(data.start_ps),
      fetchEnd: String(data.end_ps),
      fetchWidth: String(loaded.width),
      fetchTracks: loaded.tracksKey,
    });
    const loadedText = `${formatCount(data.total_in_window)} events loaded`;
    replaceChildren(box, data.total_hidden ? `${loadedText}, ${formatCount(data.total_hidden)} merged at this zoom (zoom in to see them)` : `${loadedText}, all shown`);
    box.title = 'Events of the view and half a view on each side';
    box.classList.toggle('has-hidden', data.total_hidden > 0);
  }

  /** The timing mark: its length and start (from the trace start `origin`), and a Clear button. */
  showTiming(timing: Span | null, origin: number, clear: () => void): void {
    const box = this.timingBox;
    if (!timing) {
      delete box.dataset.ps;
      return replaceChildren(box);
    }
    const len = timing.end - timing.start;
    Object.assign(box.dataset, { ps: String(len), startPs: String(timing.start), endPs: String(timing.end) });
    replaceChildren(box, `Interval ${formatTime(len)} at ${formatTime(timing.start - origin, 7)} `, h('button', { type: 'button', class: 'button', 'data-role': 'timing-clear', onclick: clear }, 'Clear'));
  }

  /** Shows the active tool: its button pressed, its help named. */
  showTool(t: TraceTool): void {
    for (const b of this.toolButtons) b.setAttribute('aria-pressed', String(b.dataset.tool === t));
    replaceChildren(this.activeTool, `${TOOL_HELP[t]}.`);
  }

  /** The tracks picked and their actions (nothing when none is picked). */
  showPicks(count: number, actions: { pin(): void; unpin(): void; hide(): void; clear(): void }): void {
    const box = this.pickBox;
    box.dataset.count = String(count);
    if (!count) return replaceChildren(box);
    const b = (role: string, label: string, run: () => void) => h('button', { type: 'button', class: 'button small', 'data-role': role, onclick: run }, label);
    replaceChildren(
      box,
      `${formatCount(count)} track${count === 1 ? '' : 's'} picked: `,
      b('picks-pin', 'Pin', actions.pin),
      b('picks-unpin', 'Unpin', actions.unpin),
      b('picks-hide', 'Hide', actions.hide),
      b('picks-clear', 'Clear', actions.clear),
    );
  }
}
