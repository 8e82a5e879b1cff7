// The SQL query page (like Perfetto's): an editor with the schema beside it, the result
// as a sortable table with CSV export, and a bar or line chart of two of its columns.
// Queries go to `/oxprof/api/query` (read-only, limited by the server); the statement is
// kept in the URL (`sql=`) so a query can be linked to.

import { buildUrl, getJson } from '../api';
import { chartElement, disposeChartsIn } from '../components/chart';
import { card } from '../components/common';
import { renderTable } from '../components/table';
import type { DataTable } from '../datatable';
import { h, replaceChildren } from '../dom';
import { type PageContext, learnToolTitles } from '../page';

export const QUERY_TOOL = 'query';
learnToolTitles([{ name: QUERY_TOOL, title: 'SQL query' }]);

const DEFAULT_SQL = 'SELECT name, count(*) AS n, sum(dur) / 1e6 AS total_ms\nFROM slice\nGROUP BY name\nORDER BY total_ms DESC\nLIMIT 20';

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
export interface QueryAnswer {
  columns: { name: string; type: string }[];
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
  elapsed_ms: number;
}

/** A query answer as a DataTable for the shared table widget. */
export function answerTable(answer: QueryAnswer): DataTable {
  return {
    cols: answer.columns.map((c) => ({ id: c.name, label: c.name, type: c.type === 'number' ? 'number' : c.type === 'boolean' ? 'boolean' : 'string' })),
    rows: answer.rows.map((r) => ({ c: r.map((v) => ({ v })) })),
  };
}

/** The chart of an answer: `x` labels, `y` values, as bars or a line. */
export function chartOption(answer: QueryAnswer, x: number, y: number, kind: 'bar' | 'line'): Record<string, unknown> {
  const labels = answer.rows.map((r) => String(r[x] ?? ''));
  const values = answer.rows.map((r) => (typeof r[y] === 'number' ? (r[y] as number) : Number(r[y])));
  return {
    title: { text: `${answer.columns[y]?.name ?? ''} by ${answer.columns[x]?.name ?? ''}`, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis' },
    grid: { left: 70, right: 20, bottom: 90, top: 40 },
    xAxis: { type: 'category', data: labels, axisLabel: { rotate: labels.length > 8 ? 40 : 0, width: 120, overflow: 'truncate' } },
    yAxis: { type: 'value', name: answer.columns[y]?.name },
    series: [{ type: kind, name: answer.columns[y]?.name, data: values }],
  };
}

export function queryPage(ctx: PageContext): HTMLElement {
  const run = ctx.state.run;
  const editor = h('textarea', { class: 'sql-editor', 'data-role': 'sql-editor', spellcheck: 'false', rows: 8, 'aria-label': 'SQL' }) as HTMLTextAreaElement;
  editor.value = ctx.view.get('sql') || DEFAULT_SQL;
  const runButton = h('button', { type: 'button', class: 'button', 'data-role': 'sql-run', title: 'Run (Ctrl+Enter)' }, '▶ Run');
  const status = h('span', { class: 'muted', 'data-role': 'sql-status', 'aria-live': 'polite' });
  const results = h('div', { 'data-role': 'sql-results' });
  const schemaBox = h('div', { class: 'sql-schema', 'data-role': 'sql-schema' }, 'Loading the schema…');

  let generation = 0;
  const execute = async () => {
    const sql = editor.value.trim();
    if (!sql) return;
    ctx.view.set('sql', sql);
    const mine = ++generation;
    status.textContent = 'Running…';
    disposeChartsIn(results);
    replaceChildren(results);
    try {
      const answer = await getJson<QueryAnswer>(buildUrl('/oxprof/api/query', { run, sql }));
      if (mine !== generation) return;
      status.textContent = `${answer.row_count} rows${answer.truncated ? ' (truncated at the row limit)' : ''} in ${answer.elapsed_ms.toFixed(0)} ms`;
      showAnswer(answer);
    } catch (e) {
      if (mine !== generation) return;
      status.textContent = '';
      replaceChildren(results, h('div', { class: 'error', role: 'alert', 'data-role': 'sql-error' }, e instanceof Error ? e.message : String(e)));
    }
  };

  const showAnswer = (answer: QueryAnswer) => {
    const table = renderTable(answerTable(answer), { key: 'q', title: 'Result', csvName: 'query', emptyText: 'No rows.' }, { get: () => '', set: () => undefined });
    const numeric = answer.columns.map((c, i) => (c.type === 'number' ? i : -1)).filter((i) => i >= 0);
    const chartBox = h('div', { 'data-role': 'sql-chart' });
    const nodes: Node[] = [table];
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
        replaceChildren(chartBox, chartElement('query', chartOption(answer, Number(xSel.value), Number(ySel.value), kindSel.value === 'line' ? 'line' : 'bar'), undefined, 320));
      };
      for (const s of [xSel, ySel, kindSel]) s.addEventListener('change', draw);
      nodes.push(card('Chart', h('div', { class: 'toolbar' }, h('label', null, 'x ', xSel), h('label', null, ' y ', ySel), h('label', null, ' ', kindSel)), chartBox));
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
            h('summary', { title: t.doc }, h('a', { href: '#', onclick: (e: Event) => {
                    e.preventDefault();
                    insert(t.name);
                  } }, t.name)),
            h('p', { class: 'muted' }, t.doc),
            h('ul', null, t.columns.map((c) => h('li', { title: c.doc }, h('code', null, c.name), ` ${c.type}`))),
            t.tool ? h('p', { class: 'muted' }, `…and the columns of ${t.tool}'s table.`) : null,
          ),
        ),
        h('h3', null, 'Views'),
        ...schema.views.map((v) =>
          h('details', { 'data-view-name': v.name }, h('summary', { title: v.doc }, v.name), h('p', { class: 'muted' }, v.doc), h('pre', null, v.example)),
        ),
      );
    })
    .catch(() => replaceChildren(schemaBox, 'The schema could not be loaded.'));

  const page = h(
    'div',
    { class: 'page query', 'data-page': 'query' },
    h('div', { class: 'sql-layout' }, h('div', { class: 'sql-main' }, card('SQL', editor, h('div', { class: 'toolbar' }, runButton, ' ', status)), results), schemaBox),
  );
  if (ctx.view.get('sql')) queueMicrotask(() => void execute());
  return page;
}
