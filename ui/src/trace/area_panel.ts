// An area selection in the panel, Perfetto's tabs: Slices (every slice overlapping the
// range, wall and self time clipped to it, counts), Pivot (grouped by any mix of name,
// track, process, category and argument), Flows (arrows leaving, entering or inside the
// area) and Counters (each counter's values over the range). Each tab is computed when it
// is first shown; Slices answers from the trace routes at once and its self times are
// refined by the SQL route when the run has SQL twins of the tracks (sql_bridge.ts).

import { downloadText } from '../components/table';
import { toCsv } from '../datatable';
import { h, replaceChildren } from '../dom';
import { exactMicros, formatCount, formatTime } from '../format';
import { type ColumnWindow, type EventRef, type Span, type TraceAggregate } from '../trace';
import {
  type CounterStats,
  type Dimension,
  type SliceStats,
  BASIC_DIMENSIONS,
  clippedSlices,
  counterStats,
  dimensionLabel,
  edgeSlices,
  needsSql,
  pivotFromTracks,
  refineWithSql,
  type SelfClipped,
  totals,
} from './area';
import type { TraceClient } from './client';
import { formatNumber } from './draw';
import type { TraceModel } from './model';
import { type SqlBridge, pivotRows, pivotSql } from './sql_bridge';
import { runQuery } from '../sql';
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

type Sort = { col: number; desc: boolean };

/**
 * Traces above this many events get no SQL refinement of their Slices and pivot tables
 * (self times stay those of the whole slices): SQL builds its slice table for a query, which
 * on such traces takes seconds and more memory than its column cache keeps. A pivot by
 * category or argument still asks SQL (nothing else can answer it).
 */
export const SQL_REFINE_MAX_EVENTS = 5_000_000;

/** The columns of a stats table after its dimensions. */
const STAT_COLUMNS = ['Count', 'Wall (in range)', 'Self (in range)', 'Avg wall', 'Min duration', 'Max duration'];

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
    const refs = await this.sql.refs(threads).catch(() => null);
    if (needsSql(dims)) {
      if (!refs) return void replaceChildren(out, h('p', { class: 'muted', 'data-role': 'pivot-no-sql' }, 'Grouping by category or argument reads the slices with SQL, which has no twin of some of these tracks (derived lines such as XLA Ops): group by name, track or process, or select other tracks.'));
      const a = await runQuery(this.client.run, pivotSql(refs, this.range, dims), 10_000);
      const rows = pivotRows(a, dims, this.sqlNames(names));
      this.renderStats(out, 'pivot', labels, rows.map((r) => ({ ...r, exact: true })), 'all', null, a.truncated);
      return;
    }
    // Name, track, process: one aggregate per track (from the trace index), wall clipped.
    const per = await mapLimit(threads, 4, async (track) => ({ track, rows: (await this.client.aggregate(this.range.start, this.range.end, [track])).rows }));
    const edges = await this.edgeSlices();
    const rows = pivotFromTracks(per, edges, this.range, dims, names);
    this.renderStats(out, 'pivot', labels, rows, 'none', null);
    if (!refs || !this.refineWithSql()) return;
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
    const selfClipped = clipped !== 'none';
    // Shown (what a user waits for), maybe refined later (data-ready: nothing pending).
    const tab = box.closest<HTMLElement>('[data-area-body]') ?? box;
    if (tab.dataset.shown !== 'true') tab.dataset.shownMs = String(Math.round(performance.now() - Number(tab.dataset.started ?? performance.now())));
    tab.dataset.shown = 'true';
    const sort = this.sorts.get(key) ?? { col: dimLabels.length + 1, desc: true };
    const n = dimLabels.length;
    const value = (r: SliceStats, c: number): number | string => {
      if (c < n) return r.keys[c] ?? '';
      return [r.count, r.wall_ps, r.self_ps ?? -1, r.count ? r.wall_ps / r.count : 0, r.min_ps, r.max_ps][c - n] ?? 0;
    };
    const sorted = [...rows].sort((a, b) => {
      const x = value(a, sort.col);
      const y = value(b, sort.col);
      const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
      return sort.desc ? -c : c;
    });
    const t = totals(rows);
    const headers = [...dimLabels, ...STAT_COLUMNS.map((c, i) => (i === 2 && !selfClipped ? 'Self (whole slices)' : c))];
    const th = (label: string, c: number) =>
      h(
        'th',
        {
          class: c < n ? 'sortable' : 'sortable num',
          'data-col': c,
          tabindex: 0,
          'aria-sort': sort.col === c ? (sort.desc ? 'descending' : 'ascending') : 'none',
          title: c === n + 2 && !selfClipped ? 'Self time of the whole slices (clipped self times need the SQL route)' : undefined,
          onclick: () => {
            this.sorts.set(key, { col: c, desc: sort.col === c ? !sort.desc : c >= n });
            this.renderStats(box, key, dimLabels, rows, clipped, agg, truncated);
          },
          onkeydown: (e: Event) => {
            if ((e as KeyboardEvent).key === 'Enter') (e.target as HTMLElement).click();
          },
        },
        label + (sort.col === c ? (sort.desc ? ' ▼' : ' ▲') : ''),
      );
    const time = (field: string, ps: number | null, note = '') => h('td', { class: note ? 'num whole' : 'num', 'data-field': field, 'data-ps': ps ?? '', title: ps === null ? null : `${exactMicros(ps)}${note}` }, ps === null ? '' : formatTime(ps));
    const wholeNote = clipped === 'some' ? ' (of the whole slices: SQL names or holds these slices differently)' : '';
    const csv = h(
      'button',
      {
        type: 'button',
        class: 'button',
        'data-role': 'aggregate-csv',
        title: 'Download the rows as CSV (times in picoseconds)',
        onclick: () =>
          downloadText(
            `${this.host.csvName}_${key}.csv`,
            toCsv(
              [...dimLabels, 'Count', 'Wall in range (ps)', selfClipped ? 'Self in range (ps)' : 'Self of whole slices (ps)', 'Min duration (ps)', 'Max duration (ps)'].map((label) => ({ id: label, label })),
              sorted.map((r) => [...r.keys, r.count, r.wall_ps, r.self_ps, r.min_ps, r.max_ps]),
            ),
          ),
      },
      'Export as CSV',
    );
    const note = agg ? `${formatCount(t.count)} slices overlap the range: wall ${formatTime(t.wall_ps)} inside it${t.self_ps !== null ? `, self ${formatTime(t.self_ps)}${clipped === 'all' ? '' : clipped === 'some' ? ' (clipped where SQL has the same slices)' : ' (whole slices)'}` : ''}.` : `${formatCount(rows.length)} groups of ${formatCount(t.count)} slices.`;
    replaceChildren(
      box,
      h('div', { class: 'card-header' }, h('p', { class: 'trace-summary', 'data-role': `${key}-summary`, 'data-count': t.count, 'data-wall-ps': t.wall_ps, 'data-self-ps': t.self_ps ?? '', 'data-self-clipped': clipped }, note), h('div', { class: 'spacer' }), csv),
      truncated ? h('p', { class: 'muted' }, 'The first 10,000 groups (the SQL route\'s row limit).') : null,
      h(
        'table',
        { class: 'data-table trace-aggregate', 'data-role': key === 'slices' ? 'trace-aggregate' : 'pivot-table', 'data-rows': rows.length },
        h('thead', null, h('tr', null, headers.map((label, c) => th(label, c)))),
        h(
          'tbody',
          null,
          sorted.slice(0, 2000).map((r) =>
            h(
              'tr',
              { 'data-agg-name': r.keys[0] ?? '', 'data-keys': r.keys.join(' › '), 'data-exact': r.exact ? 'true' : null },
              r.keys.map((k, i) => h('td', { class: 'trace-name-cell', title: k, 'data-field': i === 0 ? 'name' : `key${i}` }, k)),
              h('td', { class: 'num', 'data-field': 'count' }, formatCount(r.count)),
              time('wall', r.wall_ps),
              time('self', r.self_ps, r.exact ? '' : wholeNote),
              time('avg', r.count ? r.wall_ps / r.count : 0),
              time('min', r.min_ps),
              time('max', r.max_ps),
            ),
          ),
        ),
        h(
          'tfoot',
          null,
          h(
            'tr',
            { 'data-role': 'aggregate-totals' },
            h('th', { scope: 'row', colspan: n }, 'Total'),
            h('td', { class: 'num', 'data-field': 'count' }, formatCount(t.count)),
            time('wall', t.wall_ps),
            time('self', t.self_ps),
            h('td'),
            h('td'),
            h('td'),
          ),
        ),
      ),
      sorted.length > 2000 ? h('p', { class: 'muted' }, `The first 2,000 of ${formatCount(sorted.length)} rows (all of them in the CSV).`) : null,
    );
  }

  // ---- Flows ----------------------------------------------------------------------------------

  private async flows(body: HTMLElement): Promise<void> {
    const threads = this.threadTracks();
    if (!threads.length) return void replaceChildren(body, h('p', { class: 'muted' }, 'No thread track in the selection.'));
    const url = `${this.client.windowUrl(this.range.start, this.range.end, 16_384, threads.join(','))}&exact_limit=50000`;
    const w = await this.client.windowJson(url);
    const exact = w.tracks.every((t) => t.exact);
    type Row = { name: string; leaving: number; arriving: number; through: number; first: EventRef };
    const byName = new Map<string, Row>();
    let n = 0;
    for (const t of w.tracks) {
      for (const e of t.events ?? []) {
        if (!e.flow || e.ts_ps > this.range.end || e.ts_ps + e.dur_ps < this.range.start) continue;
        n++;
        const name = w.names[e.name] ?? '';
        const row = byName.get(name) ?? { name, leaving: 0, arriving: 0, through: 0, first: { id: e.id, track: t.id, name, ts_ps: e.ts_ps, dur_ps: e.dur_ps } };
        if (e.flow[1] === 'start') row.leaving++;
        else if (e.flow[1] === 'end') row.arriving++;
        else row.through++;
        byName.set(name, row);
      }
    }
    const rows = [...byName.values()].sort((a, b) => b.leaving + b.arriving + b.through - (a.leaving + a.arriving + a.through) || (a.name < b.name ? -1 : 1));
    replaceChildren(
      body,
      h('p', { class: 'trace-summary', 'data-role': 'flows-summary', 'data-count': n }, n ? `${formatCount(n)} slices of the area are ends of flows${exact ? '' : ' (among the slices loaded at this zoom: select a shorter range to list them all)'}: click one to select it and draw its arrows.` : 'No flow starts or ends in the area.'),
      rows.length
        ? h(
            'table',
            { class: 'data-table', 'data-role': 'flows-table' },
            h('thead', null, h('tr', null, h('th', null, 'Slice name'), h('th', { class: 'num' }, 'Flows leaving'), h('th', { class: 'num' }, 'Flows arriving'), h('th', { class: 'num' }, 'Passing through'), h('th', null, ''))),
            h(
              'tbody',
              null,
              rows.slice(0, 500).map((r) =>
                h(
                  'tr',
                  { 'data-flow-name': r.name },
                  h('td', { class: 'trace-name-cell', title: r.name }, r.name),
                  h('td', { class: 'num' }, formatCount(r.leaving)),
                  h('td', { class: 'num' }, formatCount(r.arriving)),
                  h('td', { class: 'num' }, formatCount(r.through)),
                  h('td', null, h('button', { type: 'button', class: 'link-button', 'data-role': 'flow-first', onclick: () => void this.host.jump(r.first) }, 'Select the first')),
                ),
              ),
            ),
          )
        : null,
    );
  }

  // ---- Counters -------------------------------------------------------------------------------

  private async counters(body: HTMLElement): Promise<void> {
    const ids = this.counterTracks();
    if (!ids.length) return void replaceChildren(body, h('p', { class: 'muted', 'data-role': 'counters-none' }, 'No counter track in the selection: drag over a counter track to include it.'));
    const w = await this.client.windowJson(`${this.client.windowUrl(this.range.start, this.range.end, 16_384, ids.join(','))}&exact_limit=50000`);
    // The value in force at the range's start: the last sample before it.
    const before = await this.client.windowJson(`${this.client.windowUrl(this.model.bounds.start, this.range.start, 1, ids.join(','))}`).catch(() => null);
    const stats: CounterStats[] = [];
    for (const t of w.tracks) {
      const prior = before?.tracks.find((x) => x.id === t.id)?.samples ?? [];
      const last = prior.length ? [prior[prior.length - 1] as [number, number]] : [];
      const s = counterStats(t.id, [...last, ...(t.samples ?? [])], this.range);
      if (s) stats.push(s);
    }
    const num = (v: number) => h('td', { class: 'num', title: String(v) }, formatNumber(v));
    replaceChildren(
      body,
      h('p', { class: 'trace-summary', 'data-role': 'counters-summary' }, `${ids.length} counter${ids.length === 1 ? '' : 's'} over the range (time-weighted mean: each value holds until the next sample).`),
      h(
        'table',
        { class: 'data-table', 'data-role': 'counters-table' },
        h('thead', null, h('tr', null, ['Counter', 'Samples', 'First', 'Last', 'Min', 'Max', 'Mean', 'Change'].map((c, i) => h('th', { class: i ? 'num' : null }, c)))),
        h(
          'tbody',
          null,
          stats.map((s) =>
            h('tr', { 'data-counter': s.track }, h('td', null, this.model.trackLabel(s.track)), h('td', { class: 'num' }, formatCount(s.samples)), num(s.first), num(s.last), num(s.min), num(s.max), num(s.mean), num(s.last - s.first)),
          ),
        ),
      ),
    );
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
