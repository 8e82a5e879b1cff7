// The trace viewer's view state besides the window (see spanFromView in ../trace.ts) in
// the URL: selected event, drag selection (range + tracks), timing mark, search (and
// whether it covers argument values), collapsed sections and hosts, hidden and pinned
// tracks, the hosts shown and the active tool. Pure: reads and writes through get/set
// callbacks.

import type { Span } from '../trace';

export type TraceTool = 'select' | 'pan' | 'zoom' | 'timing';
export const TOOLS: readonly TraceTool[] = ['select', 'pan', 'zoom', 'timing'];

/** A drag selection: a time range over some tracks. */
export interface RangeSelection {
  span: Span;
  tracks: number[];
}

export interface TraceView {
  /** Selected event id. */
  selected: number | null;
  /** Drag selection (aggregate). */
  range: RangeSelection | null;
  /** Timing mark. */
  timing: Span | null;
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
  /** Hosts shown together ([] = the page's host). */
  hosts: string[];
  tool: TraceTool;
}

export const VIEW_KEYS = {
  selected: 'sel',
  range: 'range',
  rangeTracks: 'range_tracks',
  timing: 'timing',
  search: 'q',
  searchArgs: 'q_args',
  collapsed: 'collapsed',
  collapsedHosts: 'collapsed_hosts',
  hidden: 'hidden_tracks',
  pinned: 'pinned',
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
    search: get(VIEW_KEYS.search),
    searchArgs: get(VIEW_KEYS.searchArgs) === '1',
    collapsed: new Set(parseIds(get(VIEW_KEYS.collapsed))),
    collapsedHosts: new Set(parseNames(get(VIEW_KEYS.collapsedHosts))),
    hidden: new Set(parseIds(get(VIEW_KEYS.hidden))),
    pinned: [...new Set(parseIds(get(VIEW_KEYS.pinned)))],
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
    [VIEW_KEYS.search]: view.search || null,
    [VIEW_KEYS.searchArgs]: view.searchArgs ? '1' : null,
    [VIEW_KEYS.collapsed]: view.collapsed.size ? [...view.collapsed].sort((a, b) => a - b).join(',') : null,
    [VIEW_KEYS.collapsedHosts]: view.collapsedHosts.size ? [...view.collapsedHosts].sort().join(',') : null,
    [VIEW_KEYS.hidden]: view.hidden.size ? [...view.hidden].sort((a, b) => a - b).join(',') : null,
    [VIEW_KEYS.pinned]: view.pinned.length ? view.pinned.join(',') : null,
    [VIEW_KEYS.hosts]: view.hosts.length ? view.hosts.join(',') : null,
    [VIEW_KEYS.tool]: view.tool === 'select' ? null : view.tool,
  };
}
