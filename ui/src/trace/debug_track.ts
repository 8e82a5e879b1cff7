// A debug track: the rows of an SQL query (the SQL page's "Show as a timeline track",
// `debug_sql=` in the URL) drawn as slices pinned at the top of the trace viewer, Perfetto's
// debug tracks. A row is a slice from its start column (`ts_ps`, or `ts` in ns) lasting its
// duration (`dur_ps`, `dur`; none: an instant), labelled by its `name` (else the query's
// first text column); rows nest by time like any track. Its slices have negative ids
// (-1 - row), so they never collide with the trace's.

import { h } from '../dom';
import { exactMicros, formatTime } from '../format';
import { type QueryAnswer, columnOf, timelineColumns } from '../sql';
import type { TrackSlices } from '../trace';

/** The debug track's id among the tracks. */
export const DEBUG_TRACK_ID = -1;

export interface DebugTrack {
  sql: string;
  label: string;
  answer: QueryAnswer;
  /** Slices in start order; `name` indexes `names`; `id` is -1 - the row's index. */
  slices: TrackSlices;
  names: string[];
  depths: number;
  maxDur: number;
}

/** The rows of an answer as a debug track, or an Error saying which column is missing. */
export function debugTrack(sql: string, a: QueryAnswer): DebugTrack | Error {
  const c = timelineColumns(a);
  if (!c.ts) return new Error('The query has no start column: name one ts_ps (picoseconds) or ts (nanoseconds).');
  const label = a.columns.find((col) => col.type === 'text' && col.name !== 'host' && col.name !== 'run');
  const nameCol = c.name >= 0 ? c.name : label ? columnOf(a, label.name) : -1;
  const rows = a.rows
    .map((r, i) => ({ i, ts: Number(r[c.ts?.index ?? 0]) * (c.ts?.scale ?? 1), dur: c.dur ? Math.max(0, Number(r[c.dur.index]) * c.dur.scale) : 0, name: nameCol >= 0 ? String(r[nameCol] ?? '') : `row ${i + 1}` }))
    .filter((r) => Number.isFinite(r.ts) && Number.isFinite(r.dur))
    .sort((x, y) => x.ts - y.ts || y.dur - x.dur);
  const names: string[] = [];
  const nameIndex = new Map<string, number>();
  const n = rows.length;
  const slices = { count: n, id: new Float64Array(n), name: new Uint32Array(n), ts: new Float64Array(n), dur: new Float64Array(n), depth: new Uint16Array(n) };
  const ends: number[] = [];
  let depths = 1;
  let maxDur = 0;
  rows.forEach((r, k) => {
    let ni = nameIndex.get(r.name);
    if (ni === undefined) {
      ni = names.length;
      names.push(r.name);
      nameIndex.set(r.name, ni);
    }
    while (ends.length && r.ts >= (ends[ends.length - 1] ?? Infinity)) ends.pop();
    const depth = Math.min(ends.length, 31);
    if (r.dur > 0) ends.push(r.ts + r.dur);
    slices.id[k] = -1 - r.i;
    slices.name[k] = ni;
    slices.ts[k] = r.ts;
    slices.dur[k] = r.dur;
    slices.depth[k] = depth;
    depths = Math.max(depths, depth + 1);
    maxDur = Math.max(maxDur, r.dur);
  });
  const short = sql.replace(/\s+/g, ' ').trim();
  return { sql, label: `SQL: ${short.length > 60 ? `${short.slice(0, 59)}…` : short}`, answer: a, slices, names, depths: Math.min(depths, 8), maxDur };
}

/** The debug slices with their name indexes moved past a window's `offset` names (one name list for the painter). */
export function shiftedSlices(d: DebugTrack, offset: number): TrackSlices {
  const name = new Uint32Array(d.slices.count);
  for (let i = 0; i < d.slices.count; i++) name[i] = (d.slices.name[i] ?? 0) + offset;
  return { ...d.slices, name };
}

/** A debug slice's row: every column of the query, times readable. */
export function debugDetails(d: DebugTrack, id: number, open: (sliceId: number, host: string) => void): HTMLElement | null {
  const row = d.answer.rows[-1 - id];
  if (!row) return null;
  const c = timelineColumns(d.answer);
  const sliceId = c.slice >= 0 ? row[c.slice] : undefined;
  const host = c.host >= 0 && typeof row[c.host] === 'string' ? (row[c.host] as string) : '';
  return h(
    'div',
    { class: 'trace-event', 'data-role': 'debug-row' },
    h('h3', { class: 'trace-event-name' }, `Row ${-id} of the debug track`),
    h('p', { class: 'muted' }, d.sql),
    typeof sliceId === 'number' ? h('p', null, h('button', { type: 'button', class: 'button', 'data-role': 'debug-open-slice', onclick: () => open(sliceId, host) }, 'Open this slice')) : null,
    h(
      'table',
      { class: 'props trace-args' },
      h(
        'tbody',
        null,
        d.answer.columns.map((col, i) => {
          const v = row[i];
          const time = /(^|_)(ts|dur)(_ps)?$/.test(col.name) && typeof v === 'number';
          const ps = time ? (col.name.endsWith('_ps') ? v : v * 1000) : 0;
          return h('tr', null, h('th', { scope: 'row' }, col.name), h('td', { title: time && /dur/.test(col.name) ? exactMicros(ps) : null }, time && /dur/.test(col.name) ? formatTime(ps) : v === null || v === undefined ? '' : String(v)));
        }),
      ),
    ),
  );
}
