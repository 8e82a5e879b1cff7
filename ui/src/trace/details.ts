// The trace viewer's docked panel contents: one event's details (times in readable units
// with the exact values in titles, the track, the step, the flow's other ends as jump
// buttons, links to the XLA tools, arguments), a drag selection's aggregate (sortable,
// totals with self time, CSV export of the raw picoseconds) and the search results list.
// Every profile string is set as text.

import { downloadText } from '../components/table';
import { toCsv } from '../datatable';
import { h } from '../dom';
import { exactMicros, formatCount, formatTime } from '../format';
import {
  type AggregateKey,
  type EventRef,
  type SearchResult,
  type TraceAggregate,
  type TraceEvent,
  aggregateTotals,
  sortAggregate,
} from '../trace';

/** A time in readable units, the exact value in the title and `data-ps`. */
function timeCell(field: string, ps: number, text = formatTime(ps)): HTMLElement {
  return h('td', { 'data-field': field, 'data-ps': ps, class: 'num', title: exactMicros(ps) }, text);
}

export interface EventPanelOptions {
  /** Start of the trace (times are shown from it). */
  origin: number;
  /** "section › track" of a track id. */
  trackLabel(track: number): string;
  /** The other events of the event's flow (null while loading, [] without a flow). */
  flowEvents: EventRef[] | null;
  /** Jump to an event (selects it, moves the view there). */
  jump(e: EventRef): void;
  /** Where links to the XLA tools go (filled in later). */
  links: HTMLElement;
}

/** The details of one event. */
export function eventPanel(ev: TraceEvent, o: EventPanelOptions): HTMLElement {
  const prop = (key: string, label: string, value: Node | string, extra: Record<string, string | number> = {}) =>
    h('tr', null, h('th', { scope: 'row' }, label), h('td', { 'data-field': key, ...extra }, value));
  const args = Object.entries(ev.args ?? {});
  const rel = ev.ts_ps - o.origin;
  const flow = ev.flow
    ? h(
        'div',
        { class: 'trace-flow', 'data-role': 'trace-flow' },
        h('h3', null, `Flow ${ev.flow[0]} (${ev.flow[1]} of the flow)`),
        o.flowEvents === null
          ? h('p', { class: 'muted' }, 'Loading the flow…')
          : o.flowEvents.filter((f) => f.id !== ev.id).length === 0
            ? h('p', { class: 'muted' }, 'No other event of this flow.')
            : h(
                'ul',
                { class: 'trace-jumps' },
                o.flowEvents
                  .filter((f) => f.id !== ev.id)
                  .map((f) =>
                    h(
                      'li',
                      null,
                      h(
                        'button',
                        { type: 'button', class: 'link-button', 'data-role': 'flow-jump', 'data-event-id': f.id, onclick: () => o.jump(f) },
                        f.ts_ps < ev.ts_ps ? '← ' : '→ ',
                        f.name,
                      ),
                      h('span', { class: 'muted' }, ` · ${o.trackLabel(f.track)} · at ${formatTime(f.ts_ps - o.origin)} · ${formatTime(f.dur_ps)}`),
                    ),
                  ),
              ),
      )
    : null;
  return h(
    'div',
    { class: 'trace-event' },
    h('h3', { class: 'trace-event-name', 'data-role': 'event-title' }, ev.name),
    h(
      'table',
      { class: 'props trace-props' },
      h(
        'tbody',
        null,
        prop('name', 'Name', ev.name),
        prop('start', 'Start', `${formatTime(rel, 7)} from the trace start`, { 'data-ps': ev.ts_ps, title: exactMicros(rel) }),
        prop('duration', 'Duration', formatTime(ev.dur_ps), { 'data-ps': ev.dur_ps, title: exactMicros(ev.dur_ps) }),
        ev.self_ps !== undefined ? prop('self', 'Self time', formatTime(ev.self_ps), { 'data-ps': ev.self_ps, title: exactMicros(ev.self_ps) }) : null,
        prop('track', 'Track', o.trackLabel(ev.track)),
        ev.group_id !== undefined ? prop('group', 'Step (group id)', String(ev.group_id)) : null,
        ev.flow ? prop('flow', 'Flow', `${ev.flow[1]} of flow ${ev.flow[0]}`, { 'data-flow-id': ev.flow[0] }) : null,
      ),
    ),
    o.links,
    flow,
    h('h3', null, 'Arguments'),
    args.length
      ? h(
          'table',
          { class: 'props trace-args', 'data-role': 'trace-args' },
          h('tbody', null, args.map(([k, v]) => h('tr', { 'data-arg': k }, h('th', { scope: 'row' }, k), h('td', null, typeof v === 'string' ? v : JSON.stringify(v))))),
        )
      : h('p', { class: 'muted', 'data-role': 'trace-no-args' }, 'No arguments.'),
  );
}

export interface AggregatePanelOptions {
  sort: { key: AggregateKey; desc: boolean };
  onSort(key: AggregateKey): void;
  onClear(): void;
  /** CSV file name without extension. */
  csvName: string;
}

const AGG_COLUMNS: [AggregateKey, string][] = [
  ['name', 'Name'],
  ['count', 'Count'],
  ['total_ps', 'Total'],
  ['self_ps', 'Self'],
  ['avg_ps', 'Average'],
  ['min_ps', 'Min'],
  ['max_ps', 'Max'],
];

/** The CSV of an aggregate: raw values (picoseconds), rows as shown. */
export function aggregateCsv(a: TraceAggregate, rows = a.rows): string {
  const cols = AGG_COLUMNS.map(([key, label]) => ({ id: key, label: key === 'name' || key === 'count' ? label : `${label} (ps)` }));
  return toCsv(
    cols,
    rows.map((r) => [r.name, r.count, r.total_ps, r.self_ps ?? null, r.avg_ps, r.min_ps, r.max_ps]),
  );
}

/** A drag selection's aggregate: totals (with self time), the sortable table, CSV export. */
export function aggregatePanel(a: TraceAggregate, o: AggregatePanelOptions): HTMLElement {
  const rows = sortAggregate(a.rows, o.sort.key, o.sort.desc);
  const totals = aggregateTotals(a.rows);
  const head = (key: AggregateKey, label: string) =>
    h(
      'th',
      {
        'data-sort': key,
        class: key === 'name' ? 'sortable' : 'sortable num',
        tabindex: 0,
        'aria-sort': o.sort.key === key ? (o.sort.desc ? 'descending' : 'ascending') : 'none',
        onclick: () => o.onSort(key),
        onkeydown: (e: Event) => {
          if ((e as KeyboardEvent).key === 'Enter') o.onSort(key);
        },
      },
      label + (o.sort.key === key ? (o.sort.desc ? ' ▼' : ' ▲') : ''),
    );
  const csv = h(
    'button',
    { type: 'button', class: 'button', 'data-role': 'aggregate-csv', title: 'Download the rows as CSV (durations in picoseconds)', onclick: () => downloadText(`${o.csvName}.csv`, aggregateCsv(a, rows)) },
    'Export as CSV',
  );
  return h(
    'div',
    { class: 'trace-aggregate-panel' },
    h(
      'div',
      { class: 'card-header' },
      h(
        'p',
        { 'data-role': 'trace-aggregate-summary', class: 'trace-summary' },
        `${formatCount(totals.count)} events of ${a.tracks.length} tracks in ${formatTime(a.end_ps - a.start_ps)}: total ${formatTime(totals.total_ps)}, self ${formatTime(totals.self_ps)} (every event in the selection, whatever the zoom).`,
      ),
      h('div', { class: 'spacer' }),
      csv,
      h('button', { type: 'button', class: 'button', 'data-role': 'aggregate-clear', onclick: () => o.onClear() }, 'Clear'),
    ),
    h(
      'table',
      { class: 'data-table trace-aggregate', 'data-role': 'trace-aggregate', 'data-num-events': a.num_events, 'data-start-ps': a.start_ps, 'data-end-ps': a.end_ps },
      h('thead', null, h('tr', null, AGG_COLUMNS.map(([key, label]) => head(key, label)))),
      h(
        'tbody',
        null,
        rows.map((r) =>
          h(
            'tr',
            { 'data-agg-name': r.name },
            h('td', { 'data-field': 'name', class: 'trace-name-cell', title: r.name }, r.name),
            h('td', { 'data-field': 'count', class: 'num' }, formatCount(r.count)),
            timeCell('total', r.total_ps),
            r.self_ps !== undefined ? timeCell('self', r.self_ps) : h('td', { 'data-field': 'self', class: 'num' }, ''),
            timeCell('avg', r.avg_ps),
            timeCell('min', r.min_ps),
            timeCell('max', r.max_ps),
          ),
        ),
      ),
      h(
        'tfoot',
        null,
        h(
          'tr',
          { 'data-role': 'aggregate-totals' },
          h('th', { scope: 'row' }, 'Total'),
          h('td', { class: 'num', 'data-field': 'count' }, formatCount(totals.count)),
          timeCell('total', totals.total_ps),
          timeCell('self', totals.self_ps),
          h('td'),
          h('td'),
          h('td'),
        ),
      ),
    ),
  );
}

export interface SearchListOptions {
  origin: number;
  current: number;
  trackLabel(track: number): string;
  jump(index: number): void;
}

/** Most search results listed at once (the rest are a click away). */
const LIST_PAGE = 200;

/** The search results as a list of jump buttons. */
export function searchList(r: SearchResult, o: SearchListOptions): HTMLElement {
  const list = h('ol', { class: 'trace-results', 'data-role': 'search-results' });
  let shown = 0;
  const more = h('div');
  const add = () => {
    const next = Math.min(r.matches.length, shown + LIST_PAGE);
    for (let i = shown; i < next; i++) {
      const m = r.matches[i];
      if (!m) continue;
      list.append(
        h(
          'li',
          { 'data-result': i, class: i === o.current ? 'current' : null },
          h(
            'button',
            { type: 'button', class: 'link-button', 'data-event-id': m.id, 'aria-current': i === o.current ? 'true' : null, onclick: () => o.jump(i) },
            m.name,
          ),
          h(
            'span',
            { class: 'muted' },
            ` · ${o.trackLabel(m.track)} · at ${formatTime(m.ts_ps - o.origin, 6)} · ${formatTime(m.dur_ps)}${m.arg ? ` · matched in ${m.arg}` : ''}`,
          ),
        ),
      );
    }
    shown = next;
    more.replaceChildren();
    if (shown < r.matches.length) {
      more.append(h('button', { type: 'button', class: 'button', onclick: add }, `Show ${Math.min(LIST_PAGE, r.matches.length - shown)} more`));
    }
  };
  add();
  const note =
    r.total > r.matches.length
      ? h('p', { class: 'muted' }, `The first ${formatCount(r.matches.length)} of ${formatCount(r.total)} matches by time; refine the search to see the others.`)
      : null;
  return h('div', { class: 'trace-search-panel' }, note, list, more);
}
