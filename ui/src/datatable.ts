// Google DataTable JSON (what XProf's tools return): types, cell access, sorting,
// filtering, number formatting and CSV rendering. Pure functions, unit tested.

import { formatBytes, formatMiB, formatMicros, formatMillis } from './format';

export interface Column {
  id: string;
  label?: string;
  type?: string;
}

export interface Cell {
  v?: unknown;
  f?: string;
}

export interface Row {
  c: (Cell | null)[];
}

export interface DataTable {
  cols?: Column[];
  rows?: Row[];
  p?: Record<string, string>;
}

export type CellValue = string | number | boolean | null;

/** The value of a cell (`null` for missing cells or non-scalar values). */
export function cellValue(row: Row, index: number): CellValue {
  const v = row.c[index]?.v;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return null;
}

/** A table's rows as arrays of values. */
export function tableValues(table: DataTable): CellValue[][] {
  const width = table.cols?.length ?? 0;
  return (table.rows ?? []).map((row) => Array.from({ length: width }, (_, i) => cellValue(row, i)));
}

/** The index of column `id`, or -1. */
export function columnIndex(table: DataTable, id: string): number {
  return (table.cols ?? []).findIndex((c) => c.id === id);
}

/** The first table of a tool's response having a column `id` (XProf's frontend finds tables this way). */
export function findTableWithColumn(tables: unknown, id: string): DataTable | null {
  if (!Array.isArray(tables)) return null;
  for (const t of tables as DataTable[]) {
    if (t && Array.isArray(t.cols) && t.cols.some((c) => c.id === id)) return t;
  }
  return null;
}

/** Whether a response is one DataTable or a list of them (the generic page can show those). */
export function asTables(data: unknown): DataTable[] {
  const isTable = (t: unknown): t is DataTable =>
    !!t && typeof t === 'object' && Array.isArray((t as DataTable).cols);
  if (isTable(data)) return [data];
  if (Array.isArray(data)) return data.filter(isTable);
  return [];
}

export type SortDirection = 'asc' | 'desc';

/** Orders two cell values: numbers numerically, strings by code points, nulls last. */
export function compareValues(a: CellValue, b: CellValue): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
    if (Number.isNaN(b)) return -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * Row indices of `values` sorted by column `column` (stable: ties keep their original
 * order in both directions; nulls stay last in both directions).
 */
export function sortedOrder(values: CellValue[][], column: number, direction: SortDirection): number[] {
  const order = values.map((_, i) => i);
  const sign = direction === 'asc' ? 1 : -1;
  order.sort((i, j) => {
    const a = values[i]?.[column] ?? null;
    const b = values[j]?.[column] ?? null;
    if (a === null || b === null) {
      const c = compareValues(a, b);
      return c !== 0 ? c : i - j;
    }
    const c = compareValues(a, b) * sign;
    return c !== 0 ? c : i - j;
  });
  return order;
}

/** Whether a row matches a case-insensitive substring filter on the given columns. */
export function rowMatches(row: CellValue[], columns: number[], query: string): boolean {
  const q = query.trim().toLowerCase();
  if (!q) return true;
  return columns.some((c) => String(row[c] ?? '').toLowerCase().includes(q));
}

/**
 * How a column's numbers are shown: `us`, `ms` (times in those units) and `bytes`, `mib`
 * are shown in adaptive units (format.ts); CSV exports keep the raw values.
 */
export type NumberFormat = 'plain' | 'fraction-percent' | 'percent' | 'integer' | 'id' | 'us' | 'ms' | 'bytes' | 'mib';

const UNIT_IN_LABEL = /\s*\((?:in\s+)?(?:us|µs|μs|ms|bytes|MiB)\)\s*$/i;

/** The format a column's id and label imply (`Total time (us)` → `us`, `stepTimeMs` → `ms`, counts → `integer`), or null. */
export function autoFormat(column: Column): NumberFormat | null {
  if (column.type !== 'number') return null;
  const id = column.id;
  const label = column.label ?? '';
  if (/\((us|µs|μs)\)/i.test(label) || /(_us|Us)$/.test(id)) return 'us';
  if (/\((in\s+)?ms\)/i.test(label) || /(TimeMs|_ms|InMs)$/.test(id)) return 'ms';
  if (/\(MiB\)/.test(label) || /_mib$/i.test(id)) return 'mib';
  if (/bytes/i.test(label) || /bytes$/i.test(id)) return 'bytes';
  if (/(^|_)(id|correlation|correlation_id|external_id|program_id|step_num|pid|tid)$/i.test(id) || /^(correlation|program id|id)$/i.test(label)) return 'id';
  if (/^(rank|occurrences|count|num_.*|.*_count)$/i.test(id) || /^#/.test(label)) return 'integer';
  return null;
}

/** A column's header: its label without the unit when values carry adaptive units. */
export function displayLabel(column: Column, format: NumberFormat | undefined): string {
  const label = column.label || column.id;
  return format === 'us' || format === 'ms' || format === 'bytes' || format === 'mib' ? label.replace(UNIT_IN_LABEL, '') || label : label;
}

/**
 * A table's title as shown: without its unit (`Step time breakdown (µs)`) when the table
 * shows values of that kind (times, sizes) in adaptive units (`formats`: its columns'), where
 * the unit would be wrong for every cell not in it.
 */
export function displayTitle(title: string, formats: readonly NumberFormat[]): string {
  const unit = UNIT_IN_LABEL.exec(title)?.[0].replace(/[\s()]|in\s+/gi, '').toLowerCase();
  if (!unit) return title;
  const kinds: readonly NumberFormat[] = unit === 'bytes' || unit === 'mib' ? ['bytes', 'mib'] : ['us', 'ms'];
  return formats.some((f) => kinds.includes(f)) ? title.replace(UNIT_IN_LABEL, '') || title : title;
}

/** Formats a value for display (numbers: at most 3 decimals, thousands separators). */
export function formatValue(value: CellValue, format: NumberFormat = 'plain'): string {
  if (value === null) return '';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return String(value);
  switch (format) {
    case 'us':
      return formatMicros(value);
    case 'ms':
      return formatMillis(value);
    case 'bytes':
      return formatBytes(value);
    case 'mib':
      return formatMiB(value);
    case 'fraction-percent':
      return `${formatNumber(value * 100, 2)}%`;
    case 'percent':
      return `${formatNumber(value, 2)}%`;
    case 'integer':
      return formatNumber(value, 0);
    case 'id':
      // Identifiers (correlation ids, program ids) as recorded: no thousands separators.
      return Number.isInteger(value) ? String(value) : formatNumber(value, 3);
    default:
      return formatNumber(value, 3);
  }
}

/** `value` with at most `decimals` decimals (trailing zeros dropped) and `,` thousands separators. */
export function formatNumber(value: number, decimals: number): string {
  const fixed = value.toFixed(decimals);
  const [intPart = '0', fracPart] = fixed.split('.');
  const negative = intPart.startsWith('-');
  const digits = negative ? intPart.slice(1) : intPart;
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const frac = fracPart ? fracPart.replace(/0+$/, '') : '';
  const text = `${negative ? '-' : ''}${grouped}${frac ? '.' + frac : ''}`;
  return text === '-0' ? '0' : text;
}

/** One CSV field, always quoted like XProf's `/data_csv` (Python csv.QUOTE_ALL). */
function csvField(value: CellValue): string {
  const text = value === null ? '' : typeof value === 'boolean' ? (value ? 'True' : 'False') : String(value);
  return `"${text.replace(/"/g, '""')}"`;
}

/** CSV of a table: header = column labels (or ids), one line per row, `\r\n` line ends. */
export function toCsv(columns: Column[], rows: CellValue[][]): string {
  const lines = [columns.map((c) => csvField(c.label || c.id)).join(',')];
  for (const row of rows) lines.push(columns.map((_, i) => csvField(row[i] ?? null)).join(','));
  return lines.join('\r\n') + '\r\n';
}

/** Parses a CSV produced by `toCsv` (quoted fields) back into rows of strings; used by tests. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  if (field || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
