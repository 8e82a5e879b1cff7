// Finds the slice a "Show in timeline" link names (../timeline.ts): by start time (a
// window one picosecond wide there), by name (the search route's occurrences), or by
// correlation id (the SQL route's `args`), then picks the occurrence the link means.

import { runQuery, sqlString } from '../sql';
import type { EventRef, Span } from '../trace';
import { type RevealTarget, pickOccurrence } from '../timeline';
import type { TraceClient } from './client';
import type { TraceModel } from './model';
import { nextUp } from './area_panel';

/**
 * The slice of a correlation id on a host (ids repeat across ranks): its name, start and
 * duration (the one named `name` when given, else the longest).
 */
async function byCorrelation(run: string, host: string, corr: string, name?: string): Promise<RevealTarget | null> {
  const where = [
    "a.key IN ('correlation', 'correlation_id')",
    `(a.int_value = ${/^\d+$/.test(corr) ? corr : '-1'} OR a.string_value = ${sqlString(corr)})`,
    host ? `s.host = ${sqlString(host)}` : '',
    name ? `s.name = ${sqlString(name)}` : '',
  ].filter(Boolean);
  const a = await runQuery(run, `SELECT s.name, s.ts_ps, s.dur_ps FROM slice s JOIN args a ON a.arg_set_id = s.arg_set_id AND a.host = s.host WHERE ${where.join(' AND ')} ORDER BY s.dur_ps DESC LIMIT 20`, 20);
  const r = a.rows[0];
  return r ? { name: String(r[0] ?? ''), ts: Number(r[1]), dur: Number(r[2]) } : null;
}

/** The slice a link names, or an Error saying why there is none. */
export async function resolveReveal(target: RevealTarget, model: TraceModel, client: TraceClient): Promise<EventRef | Error> {
  let t = target;
  if (t.slice !== undefined) {
    const host = client.multiHost ? '' : client.host;
    const a = await runQuery(client.run, `SELECT name, ts_ps, dur_ps FROM slice WHERE id = ${t.slice}${host ? ` AND host = ${sqlString(host)}` : ''} LIMIT 1`, 1).catch(() => null);
    const r = a?.rows[0];
    if (!r) return new Error(`No slice ${t.slice} in the SQL tables of ${host || 'this run'}.`);
    t = { ...t, name: String(r[0] ?? ''), ts: Number(r[1]), dur: Number(r[2]) };
  }
  if (t.corr !== undefined && (t.ts === undefined || !t.name)) {
    const host = client.multiHost ? '' : client.host;
    const found = (await byCorrelation(client.run, host, String(t.corr), t.name).catch(() => null)) ?? (t.name ? await byCorrelation(client.run, host, String(t.corr)).catch(() => null) : null);
    if (!found) return new Error(`No slice carries correlation id ${t.corr} in this run.`);
    t = { ...t, ...found };
  }
  const name = t.name ?? '';
  let cands: EventRef[] = [];
  if (t.ts !== undefined) {
    const w = await client.window(t.ts, nextUp(t.ts), 1, undefined, 50_000);
    // The slice starting there (lasting as long): of that name, else of any (SQL names a
    // few slices otherwise than the trace does: "train" for XProf's "train 5").
    const at: EventRef[] = [];
    for (const tr of w.tracks) {
      for (const e of tr.events ?? []) {
        if (e.ts_ps !== t.ts || (t.dur !== undefined && e.dur_ps !== t.dur)) continue;
        at.push({ id: e.id, track: tr.id, name: w.names[e.name] ?? '', ts_ps: e.ts_ps, dur_ps: e.dur_ps });
      }
    }
    cands = at.filter((e) => e.name === name);
    if (!cands.length && at.length) cands = at;
  }
  if (!cands.length && name) {
    const r = await client.search(name, false, 10_000, true);
    cands = r.matches.filter((m) => m.name === name);
  }
  if (t.at !== undefined && t.near === undefined) t = { ...t, near: model.bounds.start + t.at };
  const wanted = (t.track ?? '').toLowerCase();
  const preferred = (e: EventRef) => !!wanted && (model.trackLabel(e.track).toLowerCase().includes(wanted) || model.sectionName(e.track).toLowerCase().includes(wanted));
  const pick = pickOccurrence(cands, t, preferred);
  if (!pick) return new Error(name ? `No slice named "${name}" on this host's timeline.` : 'The link names no slice.');
  return pick;
}

/** The view a revealed slice opens on: the slice in the middle third (at least 1 µs wide). */
export function revealSpan(e: { ts_ps: number; dur_ps: number }, bounds: Span): Span {
  const len = Math.max(3 * e.dur_ps, 1_000_000);
  const mid = e.ts_ps + e.dur_ps / 2;
  const start = Math.max(bounds.start, Math.min(bounds.end - len, mid - len / 2));
  return { start: Math.round(start), end: Math.round(Math.min(bounds.end, start + len)) };
}
