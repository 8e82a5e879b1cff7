// The SQL route (`/oxprof/api/query`) for the pages that join SQL to the timeline: the
// answer's shape, a query runner, and SQL literals built safely from profile strings.

import { buildUrl, getJson } from './api';

export const QUERY_ROUTE = '/oxprof/api/query';

export interface QueryAnswer {
  columns: { name: string; type: string }[];
  rows: unknown[][];
  row_count: number;
  truncated: boolean;
  elapsed_ms: number;
}

/** Runs one read-only statement over a run (the server's limits apply: 20 s, 10,000 rows). */
export function runQuery(run: string, sql: string, maxRows?: number): Promise<QueryAnswer> {
  return getJson<QueryAnswer>(buildUrl(QUERY_ROUTE, { run, sql, max_rows: maxRows === undefined ? undefined : String(maxRows) }));
}

/** A SQL string literal (quotes doubled). */
export function sqlString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * A SQL integer literal. Times in picoseconds may pass 2^53 (PyTorch's epoch times): such a
 * number is written as the shortest decimal that reads back as it (the value the server
 * sent), in full, never in exponent form.
 */
export function sqlInt(n: number): string {
  if (!Number.isInteger(n) || Math.abs(n) >= 1e21) throw new Error(`not an integer: ${n}`);
  return String(n);
}

/** The rows of an answer as objects keyed by column name. */
export function answerObjects(a: QueryAnswer): Record<string, unknown>[] {
  return a.rows.map((r) => Object.fromEntries(a.columns.map((c, i) => [c.name, r[i]])));
}

/** The index of the first column named one of `names` (any case), or -1. */
export function columnOf(a: QueryAnswer, ...names: string[]): number {
  const want = names.map((n) => n.toLowerCase());
  for (const n of want) {
    const i = a.columns.findIndex((c) => c.name.toLowerCase() === n);
    if (i >= 0) return i;
  }
  return -1;
}

/** What of an answer the timeline can show: its times (a debug track) and its slice ids. */
export interface TimelineColumns {
  /** Start column and its unit (ps or ns). */
  ts: { index: number; scale: number } | null;
  dur: { index: number; scale: number } | null;
  name: number;
  host: number;
  /** A slice id column (`slice_id`, or `id` beside times). */
  slice: number;
}

/** The columns of an answer the timeline uses. */
export function timelineColumns(a: QueryAnswer): TimelineColumns {
  const num = (i: number) => i >= 0 && a.columns[i]?.type === 'number';
  const tsPs = columnOf(a, 'ts_ps');
  const tsNs = columnOf(a, 'ts');
  const durPs = columnOf(a, 'dur_ps');
  const durNs = columnOf(a, 'dur');
  const ts = num(tsPs) ? { index: tsPs, scale: 1 } : num(tsNs) ? { index: tsNs, scale: 1000 } : null;
  const dur = num(durPs) ? { index: durPs, scale: 1 } : num(durNs) ? { index: durNs, scale: 1000 } : null;
  const sliceId = columnOf(a, 'slice_id');
  const id = columnOf(a, 'id');
  return { ts, dur, name: columnOf(a, 'name'), host: columnOf(a, 'host'), slice: num(sliceId) ? sliceId : num(id) && ts ? id : -1 };
}

