// The area selection's Flows and Counters tabs: the area's slices that start or end
// flows, by name (with a jump to the first), and each counter of the area over the range
// (samples, first, last, min, max, time-weighted mean, change).

import { h, replaceChildren } from '../dom';
import { formatCount } from '../format';
import type { EventRef, Span } from '../trace';
import { type CounterStats, counterStats } from './area';
import type { TraceClient } from './client';
import { formatNumber } from './draw';

/**
 * Bins of the Flows tab's window: a track with at most 50,000 slices in the range comes
 * whole at any width; a larger one is merged (the tab says so), and at 16,384 bins a
 * 500,000-slice area came as 9.6 MB of JSON, parsed in 0.4 s for a handful of flows. About
 * two screens' width: the slices a user can tell apart at this zoom.
 */
const FLOW_BINS = 2048;

export async function flowsTab(body: HTMLElement, o: { client: TraceClient; range: Span; tracks: number[]; jump(e: EventRef): void }): Promise<void> {
  const threads = o.tracks;
  if (!threads.length) return void replaceChildren(body, h('p', { class: 'muted' }, 'No thread track in the selection.'));
  const url = `${o.client.windowUrl(o.range.start, o.range.end, FLOW_BINS, threads.join(','))}&exact_limit=50000`;
  const w = await o.client.windowJson(url);
  const exact = w.tracks.every((t) => t.exact);
  type Row = { name: string; leaving: number; arriving: number; through: number; first: EventRef };
  const byName = new Map<string, Row>();
  let n = 0;
  for (const t of w.tracks) {
    for (const e of t.events ?? []) {
      if (!e.flow || e.ts_ps > o.range.end || e.ts_ps + e.dur_ps < o.range.start) continue;
      n++;
      const name = w.names[e.name] ?? '';
      const row = byName.get(name) ?? { name, leaving: 0, arriving: 0, through: 0, first: { id: e.id, track: t.id, name, ts_ps: e.ts_ps, dur_ps: e.dur_ps } };
      if (e.flow[1] === 'start') row.leaving++;
      else if (e.flow[1] === 'end') row.arriving++;
      else row.through++;
      byName.set(name, row);
    }
  }
  const rows = [...byName.values()].sort((a, b) => b.leaving + b.arriving + b.through - (a.leaving + a.arriving + a.through) || (a.name < b.name ? -1 : 1));
  replaceChildren(
    body,
    h('p', { class: 'trace-summary', 'data-role': 'flows-summary', 'data-count': n }, n ? `${formatCount(n)} slices of the area are ends of flows${exact ? '' : ' (among the slices loaded at this zoom: select a shorter range to list them all)'}: click one to select it and draw its arrows.` : 'No flow starts or ends in the area.'),
    rows.length
      ? h(
          'table',
          { class: 'data-table', 'data-role': 'flows-table' },
          h('thead', null, h('tr', null, h('th', null, 'Slice name'), h('th', { class: 'num' }, 'Flows leaving'), h('th', { class: 'num' }, 'Flows arriving'), h('th', { class: 'num' }, 'Passing through'), h('th', null, ''))),
          h(
            'tbody',
            null,
            rows.slice(0, 500).map((r) =>
              h(
                'tr',
                { 'data-flow-name': r.name },
                h('td', { class: 'trace-name-cell', title: r.name }, r.name),
                h('td', { class: 'num' }, formatCount(r.leaving)),
                h('td', { class: 'num' }, formatCount(r.arriving)),
                h('td', { class: 'num' }, formatCount(r.through)),
                h('td', null, h('button', { type: 'button', class: 'link-button', 'data-role': 'flow-first', onclick: () => o.jump(r.first) }, 'Select the first')),
              ),
            ),
          ),
        )
      : null,
  );
}

export async function countersTab(body: HTMLElement, o: { client: TraceClient; range: Span; tracks: number[]; bounds: Span; label(track: number): string }): Promise<void> {
  const ids = o.tracks;
  if (!ids.length) return void replaceChildren(body, h('p', { class: 'muted', 'data-role': 'counters-none' }, 'No counter track in the selection: drag over a counter track to include it.'));
  const w = await o.client.windowJson(`${o.client.windowUrl(o.range.start, o.range.end, 16_384, ids.join(','))}&exact_limit=50000`);
  // The value in force at the range's start: the last sample before it.
  const before = await o.client.windowJson(`${o.client.windowUrl(o.bounds.start, o.range.start, 1, ids.join(','))}`).catch(() => null);
  const stats: CounterStats[] = [];
  for (const t of w.tracks) {
    const prior = before?.tracks.find((x) => x.id === t.id)?.samples ?? [];
    const last = prior.length ? [prior[prior.length - 1] as [number, number]] : [];
    const s = counterStats(t.id, [...last, ...(t.samples ?? [])], o.range);
    if (s) stats.push(s);
  }
  const num = (v: number) => h('td', { class: 'num', title: String(v) }, formatNumber(v));
  replaceChildren(
    body,
    h('p', { class: 'trace-summary', 'data-role': 'counters-summary' }, `${ids.length} counter${ids.length === 1 ? '' : 's'} over the range (time-weighted mean: each value holds until the next sample).`),
    h(
      'table',
      { class: 'data-table', 'data-role': 'counters-table' },
      h('thead', null, h('tr', null, ['Counter', 'Samples', 'First', 'Last', 'Min', 'Max', 'Mean', 'Change'].map((c, i) => h('th', { class: i ? 'num' : null }, c)))),
      h(
        'tbody',
        null,
        stats.map((s) =>
          h('tr', { 'data-counter': s.track }, h('td', null, o.label(s.track)), h('td', { class: 'num' }, formatCount(s.samples)), num(s.first), num(s.last), num(s.min), num(s.max), num(s.mean), num(s.last - s.first)),
        ),
      ),
    ),
  );
}
