// The SQL query page (like Perfetto's): an editor with the schema beside it and the
// queries run before (kept in this browser), the result as a sortable grid with a column
// picker and CSV export (sort, filter and columns in the URL), a bar or line chart of two
// of its columns in the query's row order, and the way to the timeline: a result with
// times (`ts_ps` or `ts`, maybe `dur_ps`/`dur` and `name`) becomes a debug track of the
// trace viewer, and a row with a slice id (`slice_id`, or `id` beside times) opens that
// slice. Queries go to `/oxprof/api/query` (read-only, limited by the server); the
// statement is kept in the URL (`sql=`) so a query can be linked to.

import { chartElement, disposeChartsIn } from '../components/chart';
import { card } from '../components/common';
import { renderTable, rowsText } from '../components/table';
import type { CellValue, DataTable } from '../datatable';
import { h, replaceChildren } from '../dom';
import { formatTime } from '../format';
import { type PageContext, learnToolTitles } from '../page';
import { type QueryAnswer, type TimelineColumns, runQuery, timelineColumns } from '../sql';
import { formatState } from '../state';
import { TRACE_TOOL, timelineHref } from '../timeline';
import { getJson } from '../api';

export type { QueryAnswer } from '../sql';

export const QUERY_TOOL = 'query';
learnToolTitles([{ name: QUERY_TOOL, title: 'SQL query' }]);

const DEFAULT_SQL = 'SELECT name, count(*) AS n, sum(dur) / 1e6 AS total_ms\nFROM slice\nGROUP BY name\nORDER BY total_ms DESC\nLIMIT 20';

/** The grid's view keys (`sql.sort`, `sql.q`, `sql.hide`): reset when another statement runs. */
const GRID_KEY = 'sql';
/** The trace viewer's key holding a debug track's statement. */
export const DEBUG_SQL_KEY = 'debug_sql';

interface SchemaColumn {
  name: string;
  type: string;
  doc: string;
}
interface SchemaTable {
  name: string;
  doc: string;
  tool: string | null;
  columns: SchemaColumn[];
}
interface SchemaView {
  name: string;
  doc: string;
  example: string;
}
interface Schema {
  version: number;
  tables: SchemaTable[];
  views: SchemaView[];
}

/** A query answer as a DataTable for the shared table widget. */
export function answerTable(answer: QueryAnswer): DataTable {
  return {
    cols: answer.columns.map((c) => ({ id: c.name, label: c.name, type: c.type === 'number' ? 'number' : c.type === 'boolean' ? 'boolean' : 'string' })),
    rows: answer.rows.map((r) => ({ c: r.map((v) => ({ v })) })),
  };
}

/** The chart of an answer: `x` labels, `y` values, as bars or a line, in the rows' order (the query's ORDER BY). */
export function chartOption(answer: QueryAnswer, x: number, y: number, kind: 'bar' | 'line'): Record<string, unknown> {
  const labels = answer.rows.map((r) => String(r[x] ?? ''));
  const values = answer.rows.map((r) => (typeof r[y] === 'number' ? (r[y] as number) : Number(r[y])));
  return {
    title: { text: `${answer.columns[y]?.name ?? ''} by ${answer.columns[x]?.name ?? ''}`, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis' },
    grid: { left: 70, right: 20, bottom: 90, top: 40 },
    // A category axis with its labels given keeps the rows' order (duplicates stay separate bars).
    xAxis: { type: 'category', data: labels, axisLabel: { rotate: labels.length > 8 ? 40 : 0, width: 120, overflow: 'truncate' } },
    yAxis: { type: 'value', name: answer.columns[y]?.name },
    series: [{ type: kind, name: answer.columns[y]?.name, data: values }],
  };
}

// ---- history ------------------------------------------------------------------------------

const HISTORY_KEY = 'oxprof.sql.history';
const HISTORY_MAX = 30;

export interface HistoryEntry {
  sql: string;
  run: string;
  /** When it last ran (ms since the epoch). */
  at: number;
}

export function readHistory(): HistoryEntry[] {
  try {
    const v: unknown = JSON.parse(localStorage.getItem(HISTORY_KEY) ?? '[]');
    return Array.isArray(v) ? v.filter((e): e is HistoryEntry => !!e && typeof e.sql === 'string' && typeof e.run === 'string' && typeof e.at === 'number').slice(0, HISTORY_MAX) : [];
  } catch {
    return [];
  }
}

/** The history with `sql` moved to the front (one entry per statement). */
export function remember(history: readonly HistoryEntry[], sql: string, run: string, at: number): HistoryEntry[] {
  return [{ sql, run, at }, ...history.filter((e) => e.sql !== sql)].slice(0, HISTORY_MAX);
}

function saveHistory(list: readonly HistoryEntry[]): void {
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(list));
  } catch {
    // Private mode or full: not remembered.
  }
}

// ---- the way to the timeline ---------------------------------------------------------------

/** The hosts an answer's rows name (its `host` column), in order. */
function hostsOf(a: QueryAnswer, c: TimelineColumns): string[] {
  if (c.host < 0) return [];
  return [...new Set(a.rows.map((r) => r[c.host]).filter((v): v is string => typeof v === 'string'))];
}

/** The trace viewer showing an answer as a debug track (its hosts: one, or all of them merged). */
export function debugTrackHref(run: string, sql: string, hosts: readonly string[]): string {
  const view: Record<string, string> = { [DEBUG_SQL_KEY]: sql };
  if (hosts.length > 1) view.hosts = 'ALL_HOSTS';
  return formatState({ run, tool: TRACE_TOOL, host: hosts.length === 1 ? (hosts[0] ?? '') : '', view }) || '?';
}

export function queryPage(ctx: PageContext): HTMLElement {
  const run = ctx.state.run;
  const editor = h('textarea', { class: 'sql-editor', 'data-role': 'sql-editor', spellcheck: 'false', rows: 8, 'aria-label': 'SQL' }) as HTMLTextAreaElement;
  editor.value = ctx.view.get('sql') || DEFAULT_SQL;
  const runButton = h('button', { type: 'button', class: 'button', 'data-role': 'sql-run', title: 'Run (Ctrl+Enter)' }, '▶ Run');
  const status = h('span', { class: 'muted', 'data-role': 'sql-status', 'aria-live': 'polite' });
  const results = h('div', { 'data-role': 'sql-results' });
  const schemaBox = h('div', { class: 'sql-schema', 'data-role': 'sql-schema' }, 'Loading the schema…');
  const historyList = h('ol', { class: 'sql-history', 'data-role': 'sql-history' });
  const historyBox = h('details', { class: 'sql-history-box' }, h('summary', null, 'History'), historyList);

  const showHistory = () => {
    const list = readHistory();
    historyBox.classList.toggle('hidden', list.length === 0);
    replaceChildren(
      historyList,
      list.map((e) =>
        h(
          'li',
          null,
          h(
            'button',
            {
              type: 'button',
              class: 'link-button sql-history-entry',
              'data-role': 'sql-history-entry',
              title: `${e.sql}\n(run ${e.run}, ${new Date(e.at).toLocaleString()})`,
              onclick: () => {
                editor.value = e.sql;
                void execute();
              },
            },
            e.sql.replace(/\s+/g, ' ').slice(0, 160),
          ),
          e.run !== run ? h('span', { class: 'muted' }, ` (${e.run})`) : null,
        ),
      ),
      h('li', { class: 'sql-history-clear' }, h('button', { type: 'button', class: 'link-button', 'data-role': 'sql-history-clear', onclick: () => (saveHistory([]), showHistory()) }, 'Clear the history')),
    );
  };

  let generation = 0;
  const execute = async () => {
    const sql = editor.value.trim();
    if (!sql) return;
    if (sql !== ctx.view.get('sql')) {
      // Another statement: the grid's sort, filter and columns were the last result's.
      for (const k of ['sort', 'q', 'hide']) ctx.view.set(`${GRID_KEY}.${k}`, null);
    }
    ctx.view.set('sql', sql);
    const mine = ++generation;
    status.textContent = 'Running…';
    disposeChartsIn(results);
    replaceChildren(results);
    try {
      const answer = await runQuery(run, sql);
      if (mine !== generation) return;
      saveHistory(remember(readHistory(), sql, run, Date.now()));
      showHistory();
      status.textContent = `${rowsText(answer.row_count)}${answer.truncated ? ' (truncated at the row limit)' : ''} in ${formatTime(answer.elapsed_ms * 1e9)}`;
      showAnswer(sql, answer);
    } catch (e) {
      if (mine !== generation) return;
      status.textContent = '';
      replaceChildren(results, h('div', { class: 'error', role: 'alert', 'data-role': 'sql-error' }, e instanceof Error ? e.message : String(e)));
    }
  };

  const showAnswer = (sql: string, answer: QueryAnswer) => {
    const tc = timelineColumns(answer);
    const hosts = hostsOf(answer, tc);
    const sliceAction =
      tc.slice >= 0
        ? {
            label: 'Timeline',
            role: 'show-in-timeline',
            title: 'Open this slice in the trace viewer',
            href: (row: CellValue[]) => {
              const id = row[tc.slice];
              if (typeof id !== 'number') return null;
              const host = tc.host >= 0 && typeof row[tc.host] === 'string' ? (row[tc.host] as string) : '';
              return timelineHref({ run, tool: QUERY_TOOL, host, view: {} }, { slice: id });
            },
          }
        : undefined;
    const table = renderTable(answerTable(answer), { key: GRID_KEY, title: 'Result', csvName: 'query', emptyText: 'No rows.', rowAction: sliceAction }, ctx.view);
    const numeric = answer.columns.map((c, i) => (c.type === 'number' ? i : -1)).filter((i) => i >= 0);
    const chartBox = h('div', { 'data-role': 'sql-chart' });
    const debug =
      tc.ts && answer.rows.length
        ? h(
            'a',
            {
              class: 'button',
              href: debugTrackHref(run, sql, hosts),
              'data-role': 'sql-debug-track',
              title: `Show the rows as a track at the top of the trace viewer (start: ${answer.columns[tc.ts.index]?.name}${tc.dur ? `, duration: ${answer.columns[tc.dur.index]?.name}` : ''}${tc.name >= 0 ? ', label: name' : ''})`,
            },
            'Show as a timeline track',
          )
        : null;
    const nodes: Node[] = [];
    if (debug) table.querySelector('.card-header')?.insertBefore(debug, table.querySelector('.card-header .spacer')?.nextSibling ?? null);
    nodes.push(table);
    if (answer.rows.length > 0 && numeric.length > 0) {
      const select = (role: string, options: number[], selected: number) => {
        const s = h('select', { 'data-role': role }, options.map((i) => h('option', { value: String(i) }, answer.columns[i]?.name ?? ''))) as HTMLSelectElement;
        s.value = String(selected);
        return s;
      };
      const all = answer.columns.map((_, i) => i);
      const xSel = select('chart-x', all, all.find((i) => !numeric.includes(i)) ?? 0);
      const ySel = select('chart-y', numeric, numeric.find((i) => i !== Number(xSel.value)) ?? numeric[0] ?? 0);
      const kindSel = h('select', { 'data-role': 'chart-kind' }, h('option', { value: 'bar' }, 'bar'), h('option', { value: 'line' }, 'line')) as HTMLSelectElement;
      const draw = () => {
        disposeChartsIn(chartBox);
        const x = Number(xSel.value);
        chartBox.dataset.labels = JSON.stringify(answer.rows.slice(0, 200).map((r) => String(r[x] ?? '')));
        replaceChildren(chartBox, chartElement('query', chartOption(answer, x, Number(ySel.value), kindSel.value === 'line' ? 'line' : 'bar'), undefined, 320));
      };
      for (const s of [xSel, ySel, kindSel]) s.addEventListener('change', draw);
      nodes.push(card('Chart', h('div', { class: 'toolbar' }, h('label', null, 'x ', xSel), h('label', null, ' y ', ySel), h('label', null, ' ', kindSel), h('span', { class: 'muted' }, ' in the rows\' order (ORDER BY)')), chartBox));
      draw();
    }
    replaceChildren(results, ...nodes);
  };

  runButton.addEventListener('click', () => void execute());
  editor.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void execute();
    }
  });

  void getJson<Schema>('/oxprof/api/query/schema')
    .then((schema) => {
      const insert = (text: string) => {
        const at = editor.selectionStart ?? editor.value.length;
        editor.value = editor.value.slice(0, at) + text + editor.value.slice(editor.selectionEnd ?? at);
        editor.focus();
      };
      replaceChildren(
        schemaBox,
        h('h3', null, `Tables (schema ${schema.version})`),
        ...schema.tables.map((t) =>
          h(
            'details',
            { 'data-table-name': t.name },
            h(
              'summary',
              { title: t.doc },
              h(
                'a',
                {
                  href: '#',
                  onclick: (e: Event) => {
                    e.preventDefault();
                    insert(t.name);
                  },
                },
                t.name,
              ),
            ),
            h('p', { class: 'muted' }, t.doc),
            h('ul', null, t.columns.map((c) => h('li', { title: c.doc }, h('code', null, c.name), ` ${c.type}`))),
            t.tool ? h('p', { class: 'muted' }, `…and the columns of ${t.tool}'s table.`) : null,
          ),
        ),
        h('h3', null, 'Views'),
        ...schema.views.map((v) => h('details', { 'data-view-name': v.name }, h('summary', { title: v.doc }, v.name), h('p', { class: 'muted' }, v.doc), h('pre', null, v.example))),
      );
    })
    .catch(() => replaceChildren(schemaBox, 'The schema could not be loaded.'));

  showHistory();
  const page = h(
    'div',
    { class: 'page query', 'data-page': 'query' },
    h('div', { class: 'sql-layout' }, h('div', { class: 'sql-main' }, card('SQL', editor, h('div', { class: 'toolbar' }, runButton, ' ', status), historyBox), results), schemaBox),
  );
  if (ctx.view.get('sql')) queueMicrotask(() => void execute());
  return page;
}
