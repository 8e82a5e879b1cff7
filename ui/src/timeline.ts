// "Show in timeline": links from any page's rows to their events in the trace viewer. The
// link names the events (`reveal`: the exact slice name; `reveal_ts` / `reveal_dur`: one
// slice; `reveal_near`: the occurrence nearest a time; `reveal_track`: prefer tracks or
// processes whose name holds a text; `reveal_corr`: the slice with a correlation id), and
// the trace viewer zooms to it, selects it and highlights every slice of that name.

import type { ViewState } from './state';
import { formatState } from './state';

export const REVEAL_KEYS = {
  name: 'reveal',
  ts: 'reveal_ts',
  dur: 'reveal_dur',
  near: 'reveal_near',
  at: 'reveal_at',
  track: 'reveal_track',
  corr: 'reveal_corr',
  slice: 'reveal_slice',
} as const;

/** What to show: a slice name (every occurrence), maybe one of them. */
export interface RevealTarget {
  /** The slice's exact name (required unless `corr` is given). */
  name?: string;
  /** One slice: its start and duration (ps, the profile's clock). */
  ts?: number;
  dur?: number;
  /** The occurrence nearest this time (ps, the profile's clock). */
  near?: number;
  /** The occurrence nearest this time from the trace's start (ps): pages that count from the profile's start. */
  at?: number;
  /** Prefer tracks or processes whose name contains this (any case): `stream`, `/device:`, `CPU`. */
  track?: string;
  /** The slice carrying this correlation id (PyTorch launches and kernels). */
  corr?: string | number;
  /** The SQL `slice` table's id of the slice (on the link's host). */
  slice?: number;
}

/** The trace viewer's tool name a link opens (the app maps it to the run's trace tool). */
export const TRACE_TOOL = 'trace_viewer';

/**
 * The link to the trace viewer of `state`'s run showing `target`; `host` (default the
 * page's) is the host whose trace holds it: `ALL_HOSTS` shows every host merged.
 */
export function timelineHref(state: ViewState, target: RevealTarget, host = state.host): string {
  const view: Record<string, string> = {};
  if (target.name) view[REVEAL_KEYS.name] = target.name;
  if (target.ts !== undefined && Number.isFinite(target.ts)) view[REVEAL_KEYS.ts] = String(Math.round(target.ts));
  if (target.dur !== undefined && Number.isFinite(target.dur)) view[REVEAL_KEYS.dur] = String(Math.round(target.dur));
  if (target.near !== undefined && Number.isFinite(target.near)) view[REVEAL_KEYS.near] = String(Math.round(target.near));
  if (target.at !== undefined && Number.isFinite(target.at)) view[REVEAL_KEYS.at] = String(Math.round(target.at));
  if (target.track) view[REVEAL_KEYS.track] = target.track;
  if (target.corr !== undefined && target.corr !== '') view[REVEAL_KEYS.corr] = String(target.corr);
  if (target.slice !== undefined && Number.isSafeInteger(target.slice)) view[REVEAL_KEYS.slice] = String(target.slice);
  const all = host === 'ALL_HOSTS';
  if (all) view.hosts = 'ALL_HOSTS';
  return formatState({ run: state.run, tool: TRACE_TOOL, host: all ? '' : host, view }) || '?';
}

/** The reveal target of a trace viewer URL (null without one). */
export function revealFromView(get: (key: string) => string): RevealTarget | null {
  const int = (k: string) => {
    const v = get(k).trim();
    return /^-?\d+$/.test(v) ? Number(v) : undefined;
  };
  const name = get(REVEAL_KEYS.name);
  const corr = get(REVEAL_KEYS.corr).trim();
  const slice = int(REVEAL_KEYS.slice);
  if (!name && !corr && slice === undefined) return null;
  return {
    name: name || undefined,
    ts: int(REVEAL_KEYS.ts),
    dur: int(REVEAL_KEYS.dur),
    near: int(REVEAL_KEYS.near),
    at: int(REVEAL_KEYS.at),
    track: get(REVEAL_KEYS.track) || undefined,
    corr: /^\d+$/.test(corr) ? corr : undefined,
    slice,
  };
}

/** Of candidate slices, the one a target means: the exact one, else the nearest, else the longest on a preferred track, else the longest. */
export function pickOccurrence<T extends { ts_ps: number; dur_ps: number; id: number }>(cands: readonly T[], target: RevealTarget, preferred: (c: T) => boolean): T | null {
  if (!cands.length) return null;
  if (target.ts !== undefined) {
    const exact = cands.filter((c) => c.ts_ps === target.ts && (target.dur === undefined || c.dur_ps === target.dur));
    if (exact[0]) return exact[0];
  }
  const pool = target.track ? cands.filter(preferred) : [...cands];
  const list = pool.length ? pool : [...cands];
  if (target.near !== undefined || target.ts !== undefined) {
    const at = target.near ?? target.ts ?? 0;
    const dist = (c: T) => (at < c.ts_ps ? c.ts_ps - at : at > c.ts_ps + c.dur_ps ? at - c.ts_ps - c.dur_ps : 0);
    return list.reduce((a, b) => (dist(b) < dist(a) ? b : a));
  }
  return list.reduce((a, b) => (b.dur_ps > a.dur_ps || (b.dur_ps === a.dur_ps && b.ts_ps < a.ts_ps) ? b : a));
}
