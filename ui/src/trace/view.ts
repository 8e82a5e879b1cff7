// The trace viewer's view state besides the window (see spanFromView in ../trace.ts) in
// the URL: selected event, drag selection (range + tracks), timing mark, named flags,
// search (and whether it covers argument values), the track filter, collapsed sections
// and hosts, hidden and pinned tracks, the hosts shown and the active tool. Pure: reads
// and writes through get/set callbacks.

import type { Span } from '../trace';

export type TraceTool = 'select' | 'pan' | 'zoom' | 'timing';
export const TOOLS: readonly TraceTool[] = ['select', 'pan', 'zoom', 'timing'];

/** A drag selection: a time range over some tracks. */
export interface RangeSelection {
  span: Span;
  tracks: number[];
}

/** A named flag: a time marked on the timeline. */
export interface Flag {
  ps: number;
  name: string;
}

/** Most flags kept (the URL stays short). */
export const MAX_FLAGS = 50;

export interface TraceView {
  /** Selected event id. */
  selected: number | null;
  /** Drag selection (aggregate). */
  range: RangeSelection | null;
  /** Timing mark. */
  timing: Span | null;
  /** Named flags, by time. */
  flags: Flag[];
  /** Tracks shown: those whose track or process name contains this text ('' = all). */
  trackFilter: string;
  /** The area selection's tab ('' = slices). */
  areaTab: string;
  /** The pivot table's dimensions (`name,process,arg:KEY`; '' = by name). */
  pivot: string;
  /** An SQL query whose rows are a debug track ('' = none). */
  debugSql: string;
  /** Search text ('' = none). */
  search: string;
  /** Search argument values too. */
  searchArgs: boolean;
  /** Pids of collapsed sections. */
  collapsed: Set<number>;
  /** Collapsed hosts (several hosts shown). */
  collapsedHosts: Set<string>;
  /** Track ids hidden by the user. */
  hidden: Set<number>;
  /** Track ids pinned to the top, in pin order. */
  pinned: number[];
  /** Tracks folded or unfolded against the default (many tracks: folded; few: unfolded). */
  trackFold: Set<number>;
  /** Hosts shown together ([] = the page's host). */
  hosts: string[];
  tool: TraceTool;
}

export const VIEW_KEYS = {
  selected: 'sel',
  range: 'range',
  rangeTracks: 'range_tracks',
  timing: 'timing',
  flags: 'flags',
  trackFilter: 'track_q',
  areaTab: 'area_tab',
  pivot: 'pivot',
  debugSql: 'debug_sql',
  search: 'q',
  searchArgs: 'q_args',
  collapsed: 'collapsed',
  collapsedHosts: 'collapsed_hosts',
  hidden: 'hidden_tracks',
  pinned: 'pinned',
  trackFold: 'track_fold',
  hosts: 'hosts',
  tool: 'tool_mode',
} as const;

/** URL keys that open a step (the overview's and the pod viewer's links), read once. */
export const STEP_KEYS = { step: 'step', stepName: 'step_name' } as const;

const INT = /^-?\d+$/;

function parseSpan(text: string): Span | null {
  const parts = text.split('_');
  if (parts.length !== 2) return null;
  const [a, b] = parts;
  if (a === undefined || b === undefined || !INT.test(a) || !INT.test(b)) return null;
  const start = Number(a);
  const end = Number(b);
  return end >= start ? { start, end } : null;
}

function parseIds(text: string): number[] {
  return text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => /^\d+$/.test(t))
    .map(Number);
}

function parseNames(text: string): string[] {
  return text
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

/** Flags from `ps~name,ps~name` (names URI-encoded), sorted by time; junk is skipped. */
export function parseFlags(text: string): Flag[] {
  const out: Flag[] = [];
  for (const part of text.split(',')) {
    const cut = part.indexOf('~');
    const ps = cut < 0 ? part : part.slice(0, cut);
    const name = cut < 0 ? '' : part.slice(cut + 1);
    if (!INT.test(ps.trim())) continue;
    let decoded = name;
    try {
      decoded = decodeURIComponent(name);
    } catch {
      // A stray % in a hand-written URL: the name as written.
    }
    out.push({ ps: Number(ps), name: decoded.slice(0, 80) });
    if (out.length >= MAX_FLAGS) break;
  }
  return out.sort((a, b) => a.ps - b.ps);
}

/** The URL text of flags (see parseFlags). */
export function flagsText(flags: readonly Flag[]): string {
  return flags.map((f) => `${Math.round(f.ps)}~${encodeURIComponent(f.name)}`).join(',');
}

/** The view from the URL (anything invalid is ignored). */
export function viewFromUrl(get: (key: string) => string): TraceView {
  const sel = get(VIEW_KEYS.selected).trim();
  const rangeSpan = parseSpan(get(VIEW_KEYS.range).trim());
  const rangeTracks = parseIds(get(VIEW_KEYS.rangeTracks));
  const tool = get(VIEW_KEYS.tool).trim() as TraceTool;
  return {
    selected: /^\d+$/.test(sel) ? Number(sel) : null,
    range: rangeSpan && rangeTracks.length ? { span: rangeSpan, tracks: rangeTracks } : null,
    timing: parseSpan(get(VIEW_KEYS.timing).trim()),
    flags: parseFlags(get(VIEW_KEYS.flags)),
    trackFilter: get(VIEW_KEYS.trackFilter),
    areaTab: get(VIEW_KEYS.areaTab),
    pivot: get(VIEW_KEYS.pivot),
    debugSql: get(VIEW_KEYS.debugSql),
    search: get(VIEW_KEYS.search),
    searchArgs: get(VIEW_KEYS.searchArgs) === '1',
    collapsed: new Set(parseIds(get(VIEW_KEYS.collapsed))),
    collapsedHosts: new Set(parseNames(get(VIEW_KEYS.collapsedHosts))),
    hidden: new Set(parseIds(get(VIEW_KEYS.hidden))),
    pinned: [...new Set(parseIds(get(VIEW_KEYS.pinned)))],
    trackFold: new Set(parseIds(get(VIEW_KEYS.trackFold))),
    hosts: [...new Set(parseNames(get(VIEW_KEYS.hosts)))],
    tool: TOOLS.includes(tool) ? tool : 'select',
  };
}

const spanText = (s: Span) => `${Math.round(s.start)}_${Math.round(s.end)}`;

/** The URL values of a view (null removes a key; defaults are not written). */
export function viewToUrl(view: TraceView): Record<string, string | null> {
  return {
    [VIEW_KEYS.selected]: view.selected === null ? null : String(view.selected),
    [VIEW_KEYS.range]: view.range ? spanText(view.range.span) : null,
    [VIEW_KEYS.rangeTracks]: view.range ? view.range.tracks.join(',') : null,
    [VIEW_KEYS.timing]: view.timing ? spanText(view.timing) : null,
    [VIEW_KEYS.flags]: view.flags.length ? flagsText(view.flags) : null,
    [VIEW_KEYS.trackFilter]: view.trackFilter || null,
    [VIEW_KEYS.areaTab]: view.range && view.areaTab && view.areaTab !== 'slices' ? view.areaTab : null,
    [VIEW_KEYS.pivot]: view.range && view.pivot ? view.pivot : null,
    [VIEW_KEYS.debugSql]: view.debugSql || null,
    [VIEW_KEYS.search]: view.search || null,
    [VIEW_KEYS.searchArgs]: view.searchArgs ? '1' : null,
    [VIEW_KEYS.collapsed]: view.collapsed.size ? [...view.collapsed].sort((a, b) => a - b).join(',') : null,
    [VIEW_KEYS.collapsedHosts]: view.collapsedHosts.size ? [...view.collapsedHosts].sort().join(',') : null,
    [VIEW_KEYS.hidden]: view.hidden.size ? [...view.hidden].sort((a, b) => a - b).join(',') : null,
    [VIEW_KEYS.pinned]: view.pinned.length ? view.pinned.join(',') : null,
    [VIEW_KEYS.trackFold]: view.trackFold.size ? [...view.trackFold].sort((a, b) => a - b).join(',') : null,
    [VIEW_KEYS.hosts]: view.hosts.length ? view.hosts.join(',') : null,
    [VIEW_KEYS.tool]: view.tool === 'select' ? null : view.tool,
  };
}
