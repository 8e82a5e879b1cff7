// The trace viewer's selection and the panel's Details tab: one event (its details, its
// flow's other ends, links to the XLA tools, the slices of the same name) or an area
// selection (a range over some tracks: area_panel.ts's tabs).

import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import type { EventRef, Span, TraceEvent } from '../trace';
import type { TraceClient } from './client';
import { type AreaTab, AREA_TABS, AreaSelection } from './area_panel';
import { parseDimensions } from './area';
import { eventPanel } from './details';
import type { TraceModel } from './model';
import { sameNamePanel } from './same_name';
import type { SqlBridge } from './sql_bridge';
import type { TraceView } from './view';
import { linksOf } from './widgets';

export interface SelectionHost {
  save(): void;
  redraw(): void;
  loading<T>(work: Promise<T>): Promise<T>;
  /** Shows the Details tab. */
  showDetails(): void;
  /** Nothing is selected any more. */
  cleared(): void;
  /** The details of a debug track's row (negative ids). */
  debugRow(id: number): HTMLElement | null;
  jump(e: EventRef): Promise<void>;
}

const HINT = 'Click a slice to see its details; drag to select many.';

export class Selection {
  /** Event details fetched (the hover tooltip reads them too). */
  readonly cache = new Map<number, TraceEvent>();
  /** The slices of the same name as the selected event (kept while its flow loads). */
  private sameName: HTMLElement | null = null;

  constructor(
    private readonly model: TraceModel,
    private readonly view: TraceView,
    private readonly client: TraceClient,
    private readonly ctx: PageContext,
    readonly details: HTMLElement,
    private readonly host: SelectionHost,
    private readonly sql: SqlBridge,
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
    if (id === null) {
      delete details.dataset.eventId;
      replaceChildren(details, h('p', { class: 'muted' }, HINT));
      return host.cleared();
    }
    host.showDetails();
    if (id < 0) {
      // A debug track's row: no trace event behind it.
      delete details.dataset.eventId;
      return replaceChildren(details, host.debugRow(id) ?? h('p', { class: 'muted' }, HINT));
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
    const same = (this.sameName ??= h('div', { class: 'trace-same-name', 'data-role': 'same-name' }));
    if (same.dataset.eventId !== String(ev.id)) {
      same.dataset.eventId = String(ev.id);
      void this.host.loading(sameNamePanel(same, ev, this.model, this.client, (e) => void this.host.jump(e))).catch(() => undefined);
    }
    replaceChildren(
      this.details,
      eventPanel(ev, { origin: this.model.bounds.start, trackLabel: (t) => this.model.trackLabel(t), flowEvents, jump: (e) => void this.host.jump(e), links, extra: same }),
    );
    void linksOf(ev, this.model, this.client, this.ctx, links, () => this.view.selected === ev.id).catch(() => undefined);
  }

  /** Selects an area: a range over some tracks (null: nothing), shown in its tabs. */
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
    if (!r) {
      view.areaTab = '';
      view.pivot = '';
      return void this.select(null);
    }
    host.showDetails();
    delete details.dataset.eventId;
    const tab = (AREA_TABS as readonly string[]).includes(view.areaTab) ? (view.areaTab as AreaTab) : 'slices';
    const dims = parseDimensions(view.pivot);
    const area = new AreaSelection(model, this.client, this.sql, r.span, r.tracks, tab, dims.length ? dims : ['name'], {
      loading: (w) => host.loading(w),
      select: (id) => void this.select(id),
      jump: (e) => host.jump(e),
      saveTab: (t, d) => {
        if (view.range !== r) return;
        view.areaTab = t;
        view.pivot = d.length === 1 && d[0] === 'name' ? '' : d.join(',');
        host.save();
      },
      clear: () => void this.selectRange(null),
      csvName: `trace_selection_${this.ctx.state.run.replace(/[^A-Za-z0-9_.-]+/g, '_')}`,
    });
    replaceChildren(details, area.element);
  }
}
