// The trace viewer's search (an omnibox): names containing the text in any case, argument
// values too with "args", over the whole trace (/oxprof/api/trace/search); the count and
// the current match in the toolbar, the results in the panel's second tab; Enter and the
// arrows (or a result) jump to a match, in time and to its track.

import { h, replaceChildren } from '../dom';
import { formatCount } from '../format';
import { type EventRef, stepMatch } from '../trace';
import type { TraceClient } from './client';
import { searchList } from './details';
import type { TraceModel } from './model';
import type { Toolbar } from './toolbar';
import type { TraceView } from './view';

const SEARCH_DELAY_MS = 250;
const SEARCH_LIMIT = 1000;

export interface SearchHost {
  /** Writes the view to the URL. */
  save(): void;
  redraw(): void;
  /** Counts a request in the page's readiness. */
  loading<T>(work: Promise<T>): Promise<T>;
  /** Selects an event and moves there. */
  jump(e: EventRef): Promise<void>;
}

export class SearchController {
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly model: TraceModel,
    private readonly view: TraceView,
    private readonly client: TraceClient,
    private readonly bar: Toolbar,
    /** The results tab's panel, and how to label its tab. */
    private readonly results: HTMLElement,
    private readonly label: (text: string) => void,
    private readonly host: SearchHost,
  ) {
    const { searchInput, argsBox, prevButton, nextButton } = bar;
    searchInput.value = view.search;
    argsBox.checked = view.searchArgs;
    searchInput.addEventListener('input', () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.run(searchInput.value, argsBox.checked), SEARCH_DELAY_MS);
    });
    argsBox.addEventListener('change', () => void this.run(searchInput.value, argsBox.checked));
    searchInput.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter') return;
      e.preventDefault();
      clearTimeout(this.timer);
      void this.step(e.shiftKey ? -1 : 1);
    });
    prevButton.addEventListener('click', () => void this.step(-1));
    nextButton.addEventListener('click', () => void this.step(1));
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  async run(text: string, args: boolean): Promise<void> {
    const { model, view, bar } = this;
    model.search = { text, args, result: null, index: -1 };
    view.search = text;
    view.searchArgs = args;
    this.host.save();
    this.host.redraw();
    if (!text.trim()) {
      delete bar.searchStatus.dataset.total;
      replaceChildren(this.results, h('p', { class: 'muted' }, 'Search to list matching events.'));
      this.label('Search results');
      return replaceChildren(bar.searchStatus);
    }
    replaceChildren(bar.searchStatus, 'searching…');
    try {
      const r = await this.host.loading(this.client.search(text.trim(), args, SEARCH_LIMIT));
      if (model.search.text !== text || model.search.args !== args) return;
      model.search.result = r;
      this.show();
      this.host.redraw();
    } catch (e) {
      replaceChildren(bar.searchStatus, h('span', { class: 'error' }, e instanceof Error ? e.message : String(e)));
    }
  }

  private show(): void {
    const { result: r, index } = this.model.search;
    const status = this.bar.searchStatus;
    if (!r) return;
    status.dataset.total = String(r.total);
    status.dataset.index = String(index);
    const current = r.matches[index];
    if (current) status.dataset.matchId = String(current.id);
    else delete status.dataset.matchId;
    const pos = index >= 0 ? `${formatCount(index + 1)} of ` : '';
    replaceChildren(status, r.total === 0 ? 'no match' : `${pos}${formatCount(r.total)} match${r.total === 1 ? '' : 'es'}`);
    this.label(`Search results (${formatCount(r.total)})`);
    replaceChildren(
      this.results,
      searchList(r, { origin: this.model.bounds.start, current: index, trackLabel: (t) => this.model.trackLabel(t), jump: (i) => void this.goTo(i) }),
    );
  }

  private async goTo(i: number): Promise<void> {
    const m = this.model.search.result?.matches[i];
    if (!m) return;
    this.model.search.index = i;
    this.show();
    await this.host.jump(m);
  }

  /** The next (+1) or previous (-1) match, searching first when the text changed. */
  async step(step: 1 | -1): Promise<void> {
    const { searchInput, argsBox } = this.bar;
    const s = this.model.search;
    if (searchInput.value !== s.text || argsBox.checked !== s.args || !s.result) await this.run(searchInput.value, argsBox.checked);
    const r = this.model.search.result;
    if (!r || !r.matches.length) return;
    await this.goTo(stepMatch(this.model.search.index, r.matches.length, step));
  }
}
