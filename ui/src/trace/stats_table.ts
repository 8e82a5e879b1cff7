// A table of slice statistics (the area selection's Slices tab and pivot table): the
// group keys, count, wall and self time inside the range, average, min and max duration,
// sortable by any column, totals, CSV of the raw picoseconds; each row says whether its
// numbers are SQL's exact ones (data-exact). Marks its tab shown (data-shown, the time
// since the tab started in data-shown-ms).

import { downloadText } from '../components/table';
import { toCsv } from '../datatable';
import { h, replaceChildren } from '../dom';
import { exactMicros, formatCount, formatTime } from '../format';
import { type SelfClipped, type SliceStats, totals } from './area';

/** The sort of a stats table: a column (keys first, then the numbers) and its direction. */
export type Sort = { col: number; desc: boolean };

/** The columns after the group keys. */
const STAT_COLUMNS = ['Count', 'Wall (in range)', 'Self (in range)', 'Avg wall', 'Min duration', 'Max duration'];

export interface StatsTableOptions {
  /** `slices` or `pivot` (the summary's and table's roles, the CSV's name). */
  key: string;
  dimLabels: string[];
  rows: SliceStats[];
  /** Whose self times are clipped to the range (SQL's). */
  clipped: SelfClipped;
  /** The Slices tab's summary ("N slices overlap the range") rather than the pivot's. */
  agg: boolean;
  /** SQL cut the groups at its row limit. */
  truncated: boolean;
  sort: Sort | undefined;
  onSort(sort: Sort): void;
  csvName: string;
}

export function renderStatsTable(box: HTMLElement, o: StatsTableOptions): void {
  // Shown (what a user waits for), maybe refined later (data-ready: nothing pending).
  const tab = box.closest<HTMLElement>('[data-area-body]') ?? box;
  if (tab.dataset.shown !== 'true') tab.dataset.shownMs = String(Math.round(performance.now() - Number(tab.dataset.started ?? performance.now())));
  tab.dataset.shown = 'true';
  const { key, dimLabels, rows, clipped, agg, truncated } = o;
  const selfClipped = clipped !== 'none';
  const sort = o.sort ?? { col: dimLabels.length + 1, desc: true };
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
        onclick: () => o.onSort({ col: c, desc: sort.col === c ? !sort.desc : c >= n }),
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
          `${o.csvName}_${key}.csv`,
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
