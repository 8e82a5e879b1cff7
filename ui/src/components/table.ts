// The table every page uses: key columns first, sort by any column (click or Enter on a
// header), filter by text, a column picker, long names cut to one line with the whole name
// in a tooltip, export of the rows as shown to CSV (raw values). Large tables are
// virtualised: only the rows in the scroll box (plus a margin) are in the page, so a
// 10,000-row table renders as fast as a 50-row one. Sort, filter and hidden columns live
// in the URL (`<key>.sort`, `<key>.q`, `<key>.hide`).

import {
  type CellValue,
  type Column,
  type DataTable,
  type NumberFormat,
  autoFormat,
  displayLabel,
  displayTitle,
  formatValue,
  rowMatches,
  sortedOrder,
  tableValues,
  toCsv,
} from '../datatable';
import { h, replaceChildren } from '../dom';
import { formatCount } from '../format';

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
  /** Column ids never shown (e.g. tooltips). */
  hidden?: string[];
  /** Column ids shown first, in this order (the rest keep theirs). */
  keyColumns?: string[];
  /** Column ids hidden until picked (the column picker shows them). */
  optional?: string[];
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
  /** Message when the table has no rows. */
  emptyText?: string;
  /** A link on each row (e.g. "Show in timeline"): its href, or null for rows without one. Not exported, not a column. */
  rowAction?: { label: string; title?: string; role?: string; href(row: CellValue[]): string | null };
}

/** Columns holding long names (ops, kernels): cut to one line, the whole name in a tooltip. */
const WIDE = /(^|_)(operation|name|expression)$|^opName$|kernel_name|^provenance$|^shape/i;

/** The raw unit of a format (cell tooltips show the exact value in it). */
const UNIT: Partial<Record<NumberFormat, string>> = { us: 'µs', ms: 'ms', bytes: 'bytes', mib: 'MiB', percent: '%' };

/** Rows rendered at once above which a table is virtualised. */
export const VIRTUAL_ABOVE = 150;
/** Height of a virtualised row (px): cells stay on one line. */
export const ROW_PX = 27;
/** Rows rendered beyond the visible ones, on each side. */
const OVERSCAN = 20;

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

/** Column order: key columns first (in their order), then the others in table order. */
export function orderColumns(columns: readonly Column[], keyColumns: readonly string[] = []): number[] {
  const indices = columns.map((_, i) => i);
  const rank = (i: number) => {
    const k = keyColumns.indexOf(columns[i]?.id ?? '');
    return k < 0 ? keyColumns.length + i : k;
  };
  return indices.sort((a, b) => rank(a) - rank(b));
}

/** The visible slice of a virtualised list: first and last (exclusive) row. */
export function visibleRange(scrollTop: number, viewHeight: number, rows: number, rowPx = ROW_PX, overscan = OVERSCAN): { first: number; last: number } {
  const first = Math.max(0, Math.floor(scrollTop / rowPx) - overscan);
  const last = Math.min(rows, Math.ceil((scrollTop + Math.max(viewHeight, rowPx)) / rowPx) + overscan);
  return { first, last: Math.max(first, last) };
}

/** `1 row`, `2 rows`, `3,091 rows`. */
export function rowsText(n: number): string {
  return `${formatCount(n)} ${n === 1 ? 'row' : 'rows'}`;
}

/** Renders `table` as a sortable, filterable, exportable table card. */
export function renderTable(table: DataTable, options: TableOptions, store: ViewStore): HTMLElement {
  const allColumns = table.cols ?? [];
  const never = new Set(options.hidden ?? []);
  const ordered = orderColumns(allColumns, options.keyColumns)
    .map((index) => ({ column: allColumns[index] as Column, index }))
    .filter(({ column }) => column && !never.has(column.id));
  const values = tableValues(table);
  const filterIndices = (options.filterColumns ?? allColumns.filter((c) => (c.type ?? 'string') === 'string').map((c) => c.id))
    .map((id) => allColumns.findIndex((c) => c.id === id))
    .filter((i) => i >= 0);

  const sortKey = `${options.key}.sort`;
  const queryKey = `${options.key}.q`;
  const hideKey = `${options.key}.hide`;
  const userHidden = (): Set<string> => {
    const stored = store.get(hideKey);
    // Not in the URL: the optional columns start hidden.
    if (!stored) return new Set(options.optional ?? []);
    return new Set(stored === '-' ? [] : stored.split(',').filter(Boolean));
  };
  const shown = () => {
    const off = userHidden();
    const cols = ordered.filter(({ column }) => !off.has(column.id));
    return cols.length ? cols : ordered.slice(0, 1);
  };

  const card = h('section', { class: 'card table-card', 'data-table': options.key });
  const count = h('span', { class: 'row-count', 'data-role': 'count', 'aria-live': 'polite' });
  const filter = h('input', {
    type: 'search',
    class: 'filter',
    'data-role': 'filter',
    placeholder: options.filterPlaceholder ?? 'Filter rows',
    'aria-label': options.filterPlaceholder ?? 'Filter rows',
  });
  filter.value = store.get(queryKey);
  const csvButton = h('button', { type: 'button', class: 'button', 'data-role': 'csv', title: 'Download the rows shown as CSV (raw values)' }, 'Export as CSV');
  const picker = columnPicker(ordered.map(({ column }) => column), userHidden, (hiddenIds) => {
    const optional = new Set(options.optional ?? []);
    const sameAsDefault = hiddenIds.size === optional.size && [...hiddenIds].every((id) => optional.has(id));
    store.set(hideKey, sameAsDefault ? null : hiddenIds.size ? [...hiddenIds].join(',') : '-');
    render();
  });
  const formatOf = (column: Column): NumberFormat => options.formats?.[column.id] ?? autoFormat(column) ?? 'plain';
  const tableEl = h('table', { class: 'data-table' });
  const scroller = h('div', { class: 'table-scroll' }, tableEl);
  const more = h('div', { class: 'more' });

  card.append(
    h(
      'div',
      { class: 'card-header' },
      options.title ? h('h3', null, displayTitle(options.title, ordered.map(({ column }) => formatOf(column)))) : null,
      h('div', { class: 'spacer' }),
      filterIndices.length ? filter : null,
      count,
      ordered.length > 1 ? picker : null,
      csvButton,
    ),
  );
  if (options.description) card.append(h('p', { class: 'description' }, options.description));
  card.append(scroller, more);

  const currentSort = () => parseSort(store.get(sortKey)) ?? options.defaultSort ?? null;

  /** Row indices after filter and sort. */
  const visibleRows = (): number[] => {
    const sort = currentSort();
    const colIndex = sort ? allColumns.findIndex((c) => c.id === sort.column) : -1;
    const order = colIndex >= 0 && sort ? sortedOrder(values, colIndex, sort.direction) : values.map((_, i) => i);
    const q = filter.value;
    return order.filter((i) => rowMatches(values[i] ?? [], filterIndices, q));
  };

  let rows: number[] = [];
  let cols = shown();
  /** Measured height of a row (virtualised tables), else ROW_PX. */
  let rowPx = ROW_PX;
  let window: { first: number; last: number } | null = null;
  const tbody = h('tbody');

  const cellOf = (column: Column, index: number, row: CellValue[]) => {
    const value = row[index] ?? null;
    const custom = options.renderCell?.(column.id, value, row) ?? null;
    const wide = column.type !== 'number' && WIDE.test(column.id);
    const format = formatOf(column);
    const text = custom ?? formatValue(value, format);
    const exact = typeof value === 'number' && format !== 'plain' && format !== 'integer' && format !== 'id' && !custom ? `${String(value)} ${UNIT[format] ?? ''}`.trim() : null;
    return h(
      'td',
      {
        'data-col': column.id,
        'data-value': value === null ? '' : String(value),
        class: column.type === 'number' ? 'num' : wide ? 'wide' : null,
        title: wide && typeof value === 'string' && value.length > 24 ? value : exact,
      },
      wide ? h('span', { class: 'cell-text' }, text) : text,
    );
  };
  const action = options.rowAction;
  const rowOf = (rowIndex: number) => {
    const row = values[rowIndex] ?? [];
    const cells = cols.map(({ column, index }) => cellOf(column, index, row));
    // The action inside the key cell, which stays in view however wide the table is.
    const href = action?.href(row);
    const first = cells[0];
    if (action && href && first) {
      const link = h('a', { href, class: 'row-action', 'data-role': action.role ?? 'row-action', title: action.title ?? action.label }, action.label);
      first.replaceChildren(h('div', { class: 'key-cell' }, ...first.childNodes, link));
    }
    return h('tr', null, cells);
  };
  const spacer = (px: number, role: string) => h('tr', { class: 'spacer-row', 'data-role': role, 'aria-hidden': 'true' }, h('td', { colspan: cols.length, style: `height:${px}px;padding:0;border:0` }));

  /** Fills the body: every row, or (virtualised) the rows in view between two spacers. */
  const fill = (force = false) => {
    if (rows.length <= VIRTUAL_ABOVE) {
      if (force) replaceChildren(tbody, rows.map(rowOf));
      window = null;
      return;
    }
    const next = visibleRange(scroller.scrollTop - headerHeight(), scroller.clientHeight || 600, rows.length, rowPx);
    if (!force && window && next.first === window.first && next.last === window.last) return;
    window = next;
    replaceChildren(
      tbody,
      spacer(next.first * rowPx, 'rows-above'),
      rows.slice(next.first, next.last).map(rowOf),
      spacer((rows.length - next.last) * rowPx, 'rows-below'),
    );
    // Rows are one line high: measure one once (fonts differ) and keep the spacers exact.
    const measured = tbody.querySelector('tr:not(.spacer-row)')?.getBoundingClientRect().height ?? 0;
    if (measured > 0 && Math.abs(measured - rowPx) > 0.5) {
      rowPx = measured;
      fill(true);
    }
  };
  const headerHeight = () => tableEl.tHead?.getBoundingClientRect().height ?? 0;
  let scrollPending = false;
  scroller.addEventListener(
    'scroll',
    () => {
      if (scrollPending || rows.length <= VIRTUAL_ABOVE) return;
      scrollPending = true;
      requestAnimationFrame(() => {
        scrollPending = false;
        fill();
      });
    },
    { passive: true },
  );

  const render = () => {
    const sort = currentSort();
    rows = visibleRows();
    cols = shown();
    const thead = h(
      'thead',
      null,
      h(
        'tr',
        null,
        cols.map(({ column }) => {
          const active = sort?.column === column.id;
          const arrow = active ? (sort?.direction === 'asc' ? ' ▲' : ' ▼') : '';
          return h(
            'th',
            {
              'data-col': column.id,
              class: (column.type === 'number' ? 'num ' : '') + 'sortable',
              'aria-sort': active ? (sort?.direction === 'asc' ? 'ascending' : 'descending') : 'none',
              title: `Sort by ${column.label || column.id}`,
              scope: 'col',
              tabindex: 0,
              onclick: () => toggleSort(column),
              onkeydown: (e: Event) => {
                if ((e as KeyboardEvent).key === 'Enter') toggleSort(column);
              },
            },
            displayLabel(column, formatOf(column)) + arrow,
          );
        }),
      ),
    );
    tableEl.classList.toggle('virtual', rows.length > VIRTUAL_ABOVE);
    replaceChildren(tableEl, thead, tbody);
    fill(true);
    count.textContent = rows.length === values.length ? rowsText(values.length) : `${formatCount(rows.length)} of ${rowsText(values.length)}`;
    count.dataset.shown = String(rows.length);
    count.dataset.total = String(values.length);
    tableEl.dataset.rows = String(rows.length);
    replaceChildren(more);
    if (values.length === 0) more.append(h('p', { class: 'empty-table' }, options.emptyText ?? 'No rows.'));
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
    scroller.scrollTop = 0;
    render();
  });

  csvButton.addEventListener('click', () => {
    const columns = cols.map(({ column }) => column);
    const projected = visibleRows().map((i) => cols.map(({ index }) => values[i]?.[index] ?? null));
    downloadText(`${options.csvName}.csv`, toCsv(columns, projected));
  });

  render();
  return card;
}

/** The column picker: a menu of checkboxes, one per column. */
function columnPicker(columns: Column[], hidden: () => Set<string>, apply: (hidden: Set<string>) => void): HTMLElement {
  const menu = h('div', { class: 'column-menu', role: 'group', 'aria-label': 'Columns shown' });
  const details = h('details', { class: 'column-picker', 'data-role': 'columns' }, h('summary', { class: 'button', title: 'Choose the columns shown' }, 'Columns'), menu);
  details.addEventListener('toggle', () => {
    if (!details.open) return;
    const off = hidden();
    replaceChildren(
      menu,
      columns.map((c) => {
        const box = h('input', { type: 'checkbox', 'data-column': c.id });
        box.checked = !off.has(c.id);
        box.addEventListener('change', () => {
          const next = hidden();
          if (box.checked) next.delete(c.id);
          else next.add(c.id);
          apply(next);
        });
        return h('label', null, box, ` ${c.label || c.id}`);
      }),
    );
  });
  return details;
}

/** A key/value list (properties of a DataTable, run environment...). */
export function renderProperties(entries: [string, string | Node][], key: string): HTMLElement {
  return h(
    'dl',
    { class: 'properties', 'data-props': key },
    entries.map(([k, v]) => [h('dt', null, k), h('dd', { 'data-prop': k }, v)]),
  );
}
