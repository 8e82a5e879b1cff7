// The trace viewer's selection and the panel's Details tab: one event (its details, its
// flow's other ends, links to the XLA tools) or a drag selection (the exact aggregate of
// its tracks and range, sortable, with totals and CSV).

import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import type { EventRef, Span, TraceEvent } from '../trace';
import type { TraceClient } from './client';
import { aggregatePanel, eventPanel } from './details';
import type { TraceModel } from './model';
import type { TraceView } from './view';
import { linksOf } from './widgets';

export interface SelectionHost {
  save(): void;
  redraw(): void;
  loading<T>(work: Promise<T>): Promise<T>;
  /** Shows the Details tab. */
  showDetails(): void;
  jump(e: EventRef): Promise<void>;
}

const HINT = 'Click a slice to see its details; drag to select many.';

export class Selection {
  /** Event details fetched (the hover tooltip reads them too). */
  readonly cache = new Map<number, TraceEvent>();

  constructor(
    private readonly model: TraceModel,
    private readonly view: TraceView,
    private readonly client: TraceClient,
    private readonly ctx: PageContext,
    readonly details: HTMLElement,
    private readonly host: SelectionHost,
  ) {
    replaceChildren(details, h('p', { class: 'muted' }, HINT));
  }

  /** Selects an event (null: nothing), loads its details and its flow. */
  async select(id: number | null): Promise<void> {
    const { model, view, details, host } = this;
    view.selected = id;
    if (id !== null) {
      view.range = null;
      model.aggregate = null;
    }
    model.event = null;
    model.flow = null;
    host.save();
    host.redraw();
    host.showDetails();
    if (id === null) {
      delete details.dataset.eventId;
      return replaceChildren(details, h('p', { class: 'muted' }, HINT));
    }
    try {
      const ev = await host.loading(this.client.event(id));
      if (view.selected !== id) return;
      model.event = ev;
      if (this.cache.size > 500) this.cache.clear();
      this.cache.set(id, ev);
      this.showEvent(ev, ev.flow ? null : []);
      if (ev.flow) {
        const f = await host.loading(this.client.flow(ev.flow[0]));
        if (view.selected !== id) return;
        model.flow = { id: String(f.flow), events: f.events };
        this.showEvent(ev, f.events);
        host.redraw();
      }
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not load the event: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  private showEvent(ev: TraceEvent, flowEvents: EventRef[] | null): void {
    this.details.dataset.eventId = String(ev.id);
    const links = h('p', { 'data-role': 'trace-links', class: 'trace-links' });
    replaceChildren(
      this.details,
      eventPanel(ev, { origin: this.model.bounds.start, trackLabel: (t) => this.model.trackLabel(t), flowEvents, jump: (e) => void this.host.jump(e), links }),
    );
    void linksOf(ev, this.model, this.client, this.ctx, links, () => this.view.selected === ev.id).catch(() => undefined);
  }

  /** Selects a range of tracks (null: nothing) and shows its exact aggregate. */
  async selectRange(range: { span: Span; tracks: number[] } | null): Promise<void> {
    const { model, view, details, host } = this;
    view.range = range && range.tracks.length && range.span.end > range.span.start ? range : null;
    view.selected = null;
    model.flow = null;
    model.event = null;
    model.aggregate = null;
    host.save();
    host.redraw();
    const r = view.range;
    if (!r) return void this.select(null);
    host.showDetails();
    delete details.dataset.eventId;
    replaceChildren(details, h('p', { class: 'muted' }, 'Aggregating the selection…'));
    try {
      const a = await host.loading(this.client.aggregate(r.span.start, r.span.end, r.tracks));
      if (view.range !== r) return;
      model.aggregate = a;
      this.showAggregate();
    } catch (e) {
      replaceChildren(details, h('p', { class: 'error' }, `Could not aggregate the selection: ${e instanceof Error ? e.message : String(e)}`));
    }
  }

  private showAggregate(): void {
    const a = this.model.aggregate;
    if (!a) return;
    replaceChildren(
      this.details,
      aggregatePanel(a, {
        sort: this.model.aggSort,
        onSort: (key) => {
          const s = this.model.aggSort;
          this.model.aggSort = { key, desc: s.key === key ? !s.desc : key !== 'name' };
          this.showAggregate();
        },
        onClear: () => void this.selectRange(null),
        csvName: `trace_selection_${this.ctx.state.run.replace(/[^A-Za-z0-9_.-]+/g, '_')}`,
      }),
    );
  }
}
