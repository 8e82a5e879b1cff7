// An area selection in the panel, Perfetto's tabs: Slices (every slice overlapping the
// range, wall and self time clipped to it, counts), Pivot (grouped by any mix of name,
// track, process, category and argument), Flows (arrows leaving, entering or inside the
// area) and Counters (each counter's values over the range). Each tab is computed when it
// is first shown; Slices answers from the trace routes at once and its self times are
// refined by the SQL route when the run has SQL twins of the tracks (sql_bridge.ts).

import { h, replaceChildren } from '../dom';
import { formatCount, formatTime } from '../format';
import { type ColumnWindow, type EventRef, type Span, type TraceAggregate } from '../trace';
import {
  type Dimension,
  type SliceStats,
  BASIC_DIMENSIONS,
  clippedSlices,
  dimensionLabel,
  edgeSlices,
  needsSql,
  pivotFromTracks,
  refineWithSql,
  type SelfClipped,
} from './area';
import type { TraceClient } from './client';
import type { TraceModel } from './model';
import { type SqlBridge, pivotRows, pivotSql } from './sql_bridge';
import { runQuery } from '../sql';
import { type Sort, renderStatsTable } from './stats_table';
import { countersTab, flowsTab } from './area_tabs';
import { loadWindow } from './window_loader';

export type AreaTab = 'slices' | 'pivot' | 'flows' | 'counters';
export const AREA_TABS: readonly AreaTab[] = ['slices', 'pivot', 'flows', 'counters'];
const TAB_LABELS: Record<AreaTab, string> = { slices: 'Slices', pivot: 'Pivot table', flows: 'Flows', counters: 'Counters' };

export interface AreaHost {
  loading<T>(work: Promise<T>): Promise<T>;
  /** Selects one event (a flow's end). */
  select(id: number): void;
  jump(e: EventRef): Promise<void>;
  /** The tab and pivot dimensions are kept in the URL. */
  saveTab(tab: AreaTab, dims: readonly Dimension[]): void;
  clear(): void;
  csvName: string;
}


/**
 * Traces above this many events get no SQL refinement of their Slices and pivot tables
 * (self times stay those of the whole slices): SQL builds its slice table for a query, which
 * on such traces takes seconds and more memory than its column cache keeps. A pivot by
 * category or argument still asks SQL (nothing else can answer it).
 */
export const SQL_REFINE_MAX_EVENTS = 5_000_000;


export class AreaSelection {
  readonly element: HTMLElement;
  private readonly bodies = new Map<AreaTab, HTMLElement>();
  private readonly buttons = new Map<AreaTab, HTMLButtonElement>();
  private readonly done = new Set<AreaTab>();
  private edges: Promise<ReturnType<typeof edgeSlices>> | null = null;
  private readonly sorts = new Map<string, Sort>();

  constructor(
    private readonly model: TraceModel,
    private readonly client: TraceClient,
    private readonly sql: SqlBridge,
    readonly range: Span,
    readonly tracks: readonly number[],
    public tab: AreaTab,
    private dims: Dimension[],
    private readonly host: AreaHost,
  ) {
    const bar = h('div', { class: 'trace-subtabs', role: 'tablist', 'aria-label': 'Area selection' });
    for (const t of AREA_TABS) {
      const b = h('button', { type: 'button', role: 'tab', class: 'trace-subtab', 'data-area-tab': t, 'aria-selected': 'false', onclick: () => this.show(t) }, TAB_LABELS[t]);
      this.buttons.set(t, b);
      bar.append(b);
      this.bodies.set(t, h('div', { class: 'trace-area-body hidden', 'data-area-body': t, role: 'tabpanel' }));
    }
    const threads = this.threadTracks().length;
    const counters = this.tracks.length - threads;
    const summary = h(
      'p',
      { class: 'trace-summary', 'data-role': 'area-summary', 'data-start-ps': range.start, 'data-end-ps': range.end },
      `${formatTime(range.end - range.start)} from ${formatTime(range.start - model.bounds.start, 7)} over ${formatCount(threads)} thread track${threads === 1 ? '' : 's'}${counters ? ` and ${formatCount(counters)} counter${counters === 1 ? '' : 's'}` : ''}`,
    );
    this.element = h(
      'div',
      { class: 'trace-area', 'data-role': 'trace-area' },
      h('div', { class: 'card-header' }, summary, h('div', { class: 'spacer' }), h('button', { type: 'button', class: 'button', 'data-role': 'aggregate-clear', onclick: () => host.clear() }, 'Clear')),
      bar,
      [...this.bodies.values()],
    );
    this.show(tab);
  }

  private threadTracks(): number[] {
    return this.tracks.filter((id) => this.model.info(id)?.kind === 'thread');
  }

  private counterTracks(): number[] {
    return this.tracks.filter((id) => this.model.info(id)?.kind === 'counter');
  }

  show(tab: AreaTab): void {
    this.tab = tab;
    for (const [t, b] of this.buttons) b.setAttribute('aria-selected', String(t === tab));
    for (const [t, body] of this.bodies) body.classList.toggle('hidden', t !== tab);
    this.element.dataset.tab = tab;
    this.host.saveTab(tab, this.dims);
    if (!this.done.has(tab)) {
      this.done.add(tab);
      void this.fill(tab);
    }
  }

  private body(tab: AreaTab): HTMLElement {
    return this.bodies.get(tab) as HTMLElement;
  }

  private async fill(tab: AreaTab): Promise<void> {
    const body = this.body(tab);
    body.dataset.ready = 'false';
    body.dataset.shown = 'false';
    body.dataset.started = String(performance.now());
    replaceChildren(body, h('p', { class: 'muted' }, 'Computing…'));
    const started = performance.now();
    try {
      if (tab === 'slices') await this.host.loading(this.slices(body));
      else if (tab === 'pivot') await this.host.loading(this.pivot(body));
      else if (tab === 'flows') await this.host.loading(this.flows(body));
      else await this.host.loading(this.counters(body));
    } catch (e) {
      replaceChildren(body, h('p', { class: 'error', 'data-role': 'area-error' }, `Could not compute the ${TAB_LABELS[tab].toLowerCase()}: ${e instanceof Error ? e.message : String(e)}`));
    }
    body.dataset.ms = String(Math.round(performance.now() - started));
    if (body.dataset.shown !== 'true') body.dataset.shownMs = body.dataset.ms;
    body.dataset.shown = 'true';
    body.dataset.ready = 'true';
  }

  /** The slices crossing the range's edges (a window one picosecond wide at each edge). */
  private edgeSlices(): Promise<ReturnType<typeof edgeSlices>> {
    this.edges ??= (async () => {
      const ids = this.threadTracks().join(',');
      // One picosecond wide, or one step of a number at times past 2^53 ps.
      const at = (t: number) => loadWindow(`${this.client.windowUrl(t, nextUp(t), 1, ids)}&exact_limit=50000`);
      const windows: ColumnWindow[] = await Promise.all([at(this.range.start), at(Math.max(this.range.start, this.range.end - 1))]);
      return edgeSlices(windows, this.range);
    })();
    return this.edges;
  }

  // ---- Slices ---------------------------------------------------------------------------------

  private async slices(body: HTMLElement): Promise<void> {
    const threads = this.threadTracks();
    if (!threads.length) return void replaceChildren(body, h('p', { class: 'muted' }, 'No thread track in the selection.'));
    const [agg, edges] = await Promise.all([this.client.aggregate(this.range.start, this.range.end, threads), this.edgeSlices()]);
    const rows = clippedSlices(agg, edges, this.range);
    this.renderStats(body, 'slices', ['Name'], rows, 'none', agg);
    // Self times clipped to the range: from SQL when every track has an SQL twin.
    if (!this.refineWithSql()) return;
    const refs = await this.sql.refs(threads).catch(() => null);
    if (!refs) return;
    try {
      const a = await runQuery(this.client.run, pivotSql(refs, this.range, ['name']), 10_000);
      if (a.truncated) return;
      // SQL's sums are exact integers (times past 2^53 ps, as PyTorch's epoch times are, lose
      // their last bits in the page's numbers): its wall and self times where it counts the
      // same slices.
      const refined = refineWithSql(rows, pivotRows(a, ['name'], { track: (k) => k, process: (k) => k }));
      if (refined.clipped !== 'none') this.renderStats(body, 'slices', ['Name'], refined.rows, refined.clipped, agg);
    } catch {
      // SQL failed (too large for its budget, …): self times stay those of the whole slices.
    }
  }

  // ---- Pivot ----------------------------------------------------------------------------------

  private async pivot(body: HTMLElement): Promise<void> {
    const threads = this.threadTracks();
    const chooser = this.dimensionChooser(body);
    const out = h('div', { 'data-role': 'pivot-out' });
    replaceChildren(body, chooser, out);
    if (!threads.length) return void replaceChildren(out, h('p', { class: 'muted' }, 'No thread track in the selection.'));
    if (!this.dims.length) return void replaceChildren(out, h('p', { class: 'muted' }, 'Choose what to group by.'));
    replaceChildren(out, h('p', { class: 'muted' }, 'Computing…'));
    const dims = [...this.dims];
    const labels = dims.map((d) => dimensionLabel(d).replace(/^./, (c) => c.toUpperCase()));
    const names = { track: (id: number) => this.model.trackLabel(id), process: (id: number) => this.model.processLabel(id) || this.model.sectionName(id) };
    if (needsSql(dims)) {
      const refs = await this.sql.refs(threads).catch(() => null);
      if (!refs) return void replaceChildren(out, h('p', { class: 'muted', 'data-role': 'pivot-no-sql' }, 'Grouping by category or argument reads the slices with SQL, which has no twin of some of these tracks (derived lines such as XLA Ops): group by name, track or process, or select other tracks.'));
      const a = await runQuery(this.client.run, pivotSql(refs, this.range, dims), 10_000);
      const rows = pivotRows(a, dims, this.sqlNames(names));
      this.renderStats(out, 'pivot', labels, rows.map((r) => ({ ...r, exact: true })), 'all', null, a.truncated);
      return;
    }
    // Name, track, process: one aggregate per track (from the trace index), wall clipped;
    // shown before SQL is asked anything (its first query on a large trace builds its tables).
    const [per, edges] = await Promise.all([mapLimit(threads, 4, async (track) => ({ track, rows: (await this.client.aggregate(this.range.start, this.range.end, [track])).rows })), this.edgeSlices()]);
    const rows = pivotFromTracks(per, edges, this.range, dims, names);
    this.renderStats(out, 'pivot', labels, rows, 'none', null);
    if (!this.refineWithSql()) return;
    const refs = await this.sql.refs(threads).catch(() => null);
    if (!refs) return;
    try {
      const a = await runQuery(this.client.run, pivotSql(refs, this.range, dims), 10_000);
      if (a.truncated) return;
      const refined = refineWithSql(rows, pivotRows(a, dims, this.sqlNames(names)));
      if (refined.clipped !== 'none') this.renderStats(out, 'pivot', labels, refined.rows, refined.clipped, null);
    } catch {
      // Self times stay those of the whole slices.
    }
  }

  private refineWithSql(): boolean {
    return (this.model.tracks?.num_events ?? 0) <= SQL_REFINE_MAX_EVENTS;
  }

  private sqlNames(names: { track(id: number): string; process(id: number): string }) {
    const trackOf = (key: string) => this.sql.traceTrack(key);
    return {
      track: (key: string) => {
        const t = trackOf(key);
        return t === undefined ? key : names.track(t);
      },
      process: (key: string) => {
        const t = trackOf(key);
        return t === undefined ? key : names.process(t);
      },
    };
  }

  private dimensionChooser(body: HTMLElement): HTMLElement {
    const chips = this.dims.map((d, i) =>
      h(
        'span',
        { class: 'trace-chip static', 'data-dim': d },
        dimensionLabel(d),
        h('button', { type: 'button', class: 'chip-x', 'aria-label': `Stop grouping by ${dimensionLabel(d)}`, 'data-role': 'pivot-remove', onclick: () => this.setDims(body, this.dims.filter((_, j) => j !== i)) }, '×'),
      ),
    );
    const add = h('select', { 'data-role': 'pivot-add', 'aria-label': 'Group by' }, h('option', { value: '' }, '+ group by…'), [...BASIC_DIMENSIONS, 'category' as Dimension].filter((d) => !this.dims.includes(d)).map((d) => h('option', { value: d }, dimensionLabel(d))), h('option', { value: 'arg:' }, 'argument…'));
    const argKey = h('input', { type: 'text', class: 'hidden', 'data-role': 'pivot-arg', placeholder: 'argument name (e.g. hlo_op)', 'aria-label': 'Argument to group by' });
    add.addEventListener('change', () => {
      const v = add.value;
      if (v === 'arg:') {
        argKey.classList.remove('hidden');
        argKey.focus();
      } else if (v) this.setDims(body, [...this.dims, v as Dimension]);
    });
    argKey.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || !argKey.value.trim()) return;
      this.setDims(body, [...this.dims, `arg:${argKey.value.trim()}` as Dimension]);
    });
    return h('div', { class: 'toolbar trace-pivot-dims', 'data-role': 'pivot-dims' }, h('span', { class: 'muted' }, 'Group by '), chips, add, argKey);
  }

  private setDims(body: HTMLElement, dims: Dimension[]): void {
    this.dims = dims;
    this.host.saveTab('pivot', dims);
    body.dataset.ready = 'false';
    body.dataset.shown = 'false';
    body.dataset.started = String(performance.now());
    void this.host.loading(this.pivot(body)).catch((e: unknown) => replaceChildren(body, h('p', { class: 'error' }, String(e)))).finally(() => (body.dataset.ready = 'true'));
  }

  // ---- a stats table ----------------------------------------------------------------------------

  private renderStats(box: HTMLElement, key: string, dimLabels: string[], rows: SliceStats[], clipped: SelfClipped, agg: TraceAggregate | null, truncated = false): void {
    renderStatsTable(box, {
      key,
      dimLabels,
      rows,
      clipped,
      agg: agg !== null,
      truncated,
      sort: this.sorts.get(key),
      csvName: this.host.csvName,
      onSort: (sort) => {
        this.sorts.set(key, sort);
        this.renderStats(box, key, dimLabels, rows, clipped, agg, truncated);
      },
    });
  }

  // ---- Flows and counters (area_tabs.ts) --------------------------------------------------------

  private flows(body: HTMLElement): Promise<void> {
    return flowsTab(body, { client: this.client, range: this.range, tracks: this.threadTracks(), jump: (e) => void this.host.jump(e) });
  }

  private counters(body: HTMLElement): Promise<void> {
    return countersTab(body, { client: this.client, range: this.range, tracks: this.counterTracks(), bounds: this.model.bounds, label: (id) => this.model.trackLabel(id) });
  }
}

/** The next number after an integer time: +1 ps, or a number's step past 2^53. */
export function nextUp(t: number): number {
  const a = Math.abs(t);
  return t + (a < 2 ** 53 ? 1 : Math.pow(2, Math.floor(Math.log2(a)) - 52));
}

/** `f` over `items`, at most `limit` at once, results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await f(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
