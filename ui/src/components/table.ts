// The table every page uses: sort by any column (click a header), filter by text, export
// the rows as shown to CSV. Sort and filter live in the URL (`<key>.sort`, `<key>.q`).

import {
  type CellValue,
  type Column,
  type DataTable,
  type NumberFormat,
  formatValue,
  rowMatches,
  sortedOrder,
  tableValues,
  toCsv,
} from '../datatable';
import { h, replaceChildren } from '../dom';

/** Reads and writes this table's view keys. */
export interface ViewStore {
  get(key: string): string;
  set(key: string, value: string | null): void;
}

export interface TableOptions {
  /** Prefix of the URL keys and `data-table` attribute. */
  key: string;
  title?: string;
  description?: string;
  /** Column ids not shown (e.g. tooltips). */
  hidden?: string[];
  /** Number formats by column id. */
  formats?: Record<string, NumberFormat>;
  /** Columns the filter searches (ids); default: every string column. */
  filterColumns?: string[];
  filterPlaceholder?: string;
  /** CSV file name without extension. */
  csvName: string;
  /** Initial sort when the URL has none. */
  defaultSort?: { column: string; direction: 'asc' | 'desc' };
  /** Custom cell content (e.g. links); return null for the default. */
  renderCell?: (columnId: string, value: CellValue, row: CellValue[]) => Node | string | null;
  /** Rows shown before "show all" (default 500). */
  pageSize?: number;
  /** Message when the table has no rows. */
  emptyText?: string;
}

/** Columns holding long names (ops, kernels): given room so they wrap less. */
const WIDE = /(^|_)(operation|name)$|^opName$|kernel_name|^op_name$/i;

/** Parses `column.direction` (as stored in the URL). */
export function parseSort(text: string): { column: string; direction: 'asc' | 'desc' } | null {
  const dot = text.lastIndexOf('.');
  if (dot <= 0) return null;
  const direction = text.slice(dot + 1);
  if (direction !== 'asc' && direction !== 'desc') return null;
  return { column: text.slice(0, dot), direction };
}

/** Starts a browser download of `text` as `filename`. */
export function downloadText(filename: string, text: string, mime = 'text/csv'): void {
  const url = URL.createObjectURL(new Blob([text], { type: `${mime};charset=utf-8` }));
  const a = h('a', { href: url, download: filename, class: 'hidden' });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Renders `table` as a sortable, filterable, exportable table card. */
export function renderTable(table: DataTable, options: TableOptions, store: ViewStore): HTMLElement {
  const allColumns = table.cols ?? [];
  const shown = allColumns
    .map((column, index) => ({ column, index }))
    .filter(({ column }) => !(options.hidden ?? []).includes(column.id));
  const values = tableValues(table);
  const filterIndices = (
    options.filterColumns ??
    allColumns.filter((c) => (c.type ?? 'string') === 'string').map((c) => c.id)
  )
    .map((id) => allColumns.findIndex((c) => c.id === id))
    .filter((i) => i >= 0);

  const sortKey = `${options.key}.sort`;
  const queryKey = `${options.key}.q`;
  let showAll = false;

  const card = h('section', { class: 'card table-card', 'data-table': options.key });
  const count = h('span', { class: 'row-count', 'data-role': 'count' });
  const filter = h('input', {
    type: 'search',
    class: 'filter',
    'data-role': 'filter',
    placeholder: options.filterPlaceholder ?? 'Filter rows',
    'aria-label': options.filterPlaceholder ?? 'Filter rows',
  });
  filter.value = store.get(queryKey);
  const csvButton = h('button', { type: 'button', class: 'button', 'data-role': 'csv', title: 'Download the rows shown as CSV' }, 'Export as CSV');
  const tableEl = h('table', { class: 'data-table' });
  const more = h('div', { class: 'more' });

  const header = h(
    'div',
    { class: 'card-header' },
    options.title ? h('h3', null, options.title) : null,
    h('div', { class: 'spacer' }),
    filterIndices.length ? filter : null,
    count,
    csvButton,
  );
  card.append(header);
  if (options.description) card.append(h('p', { class: 'description' }, options.description));
  card.append(h('div', { class: 'table-scroll' }, tableEl), more);

  const currentSort = () => parseSort(store.get(sortKey)) ?? options.defaultSort ?? null;

  /** Row indices after filter and sort. */
  const visibleRows = (): number[] => {
    const sort = currentSort();
    const colIndex = sort ? allColumns.findIndex((c) => c.id === sort.column) : -1;
    const order = colIndex >= 0 && sort ? sortedOrder(values, colIndex, sort.direction) : values.map((_, i) => i);
    const q = filter.value;
    return order.filter((i) => rowMatches(values[i] ?? [], filterIndices, q));
  };

  const render = () => {
    const sort = currentSort();
    const rows = visibleRows();
    const limit = showAll ? rows.length : (options.pageSize ?? 500);
    const thead = h(
      'thead',
      null,
      h(
        'tr',
        null,
        shown.map(({ column }) => {
          const active = sort?.column === column.id;
          const arrow = active ? (sort?.direction === 'asc' ? ' ▲' : ' ▼') : '';
          return h(
            'th',
            {
              'data-col': column.id,
              class: (column.type === 'number' ? 'num ' : '') + 'sortable',
              'aria-sort': active ? (sort?.direction === 'asc' ? 'ascending' : 'descending') : 'none',
              title: `Sort by ${column.label || column.id}`,
              tabindex: 0,
              onclick: () => toggleSort(column),
              onkeydown: (e: Event) => {
                if ((e as KeyboardEvent).key === 'Enter') toggleSort(column);
              },
            },
            (column.label || column.id) + arrow,
          );
        }),
      ),
    );
    const tbody = h('tbody');
    for (const rowIndex of rows.slice(0, limit)) {
      const row = values[rowIndex] ?? [];
      tbody.append(
        h(
          'tr',
          null,
          shown.map(({ column, index }) => {
            const value = row[index] ?? null;
            const custom = options.renderCell?.(column.id, value, row) ?? null;
            return h(
              'td',
              {
                'data-col': column.id,
                'data-value': value === null ? '' : String(value),
                class: column.type === 'number' ? 'num' : WIDE.test(column.id) ? 'wide' : null,
              },
              custom ?? formatValue(value, options.formats?.[column.id] ?? 'plain'),
            );
          }),
        ),
      );
    }
    replaceChildren(tableEl, thead, tbody);
    count.textContent =
      rows.length === values.length ? `${values.length} rows` : `${rows.length} of ${values.length} rows`;
    count.dataset.shown = String(rows.length);
    count.dataset.total = String(values.length);
    replaceChildren(more);
    if (values.length === 0) {
      more.append(h('p', { class: 'empty-table' }, options.emptyText ?? 'No rows.'));
    } else if (rows.length > limit) {
      more.append(
        h(
          'button',
          { type: 'button', class: 'button', 'data-role': 'show-all', onclick: () => ((showAll = true), render()) },
          `Show all ${rows.length} rows (${rows.length - limit} more)`,
        ),
      );
    }
  };

  const toggleSort = (column: Column) => {
    const sort = currentSort();
    let direction: 'asc' | 'desc';
    if (sort?.column === column.id) direction = sort.direction === 'asc' ? 'desc' : 'asc';
    else direction = column.type === 'number' ? 'desc' : 'asc';
    store.set(sortKey, `${column.id}.${direction}`);
    render();
  };

  filter.addEventListener('input', () => {
    store.set(queryKey, filter.value || null);
    render();
  });

  csvButton.addEventListener('click', () => {
    const rows = visibleRows().map((i) => values[i] ?? []);
    const columns = shown.map(({ column }) => column);
    const projected = rows.map((row) => shown.map(({ index }) => row[index] ?? null));
    downloadText(`${options.csvName}.csv`, toCsv(columns, projected));
  });

  render();
  return card;
}

/** A key/value list (properties of a DataTable, run environment...). */
export function renderProperties(entries: [string, string | Node][], key: string): HTMLElement {
  return h(
    'dl',
    { class: 'properties', 'data-props': key },
    entries.map(([k, v]) => [h('dt', null, k), h('dd', { 'data-prop': k }, v)]),
  );
}
