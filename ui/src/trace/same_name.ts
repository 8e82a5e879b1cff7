// "Slices with the same name" under a selected event (Perfetto's): how many slices of the
// trace share its name, their total, min / median / max durations and a histogram, with
// the previous and next occurrence in time. Occurrences come from the search route (names
// starting with the event's, kept when equal; up to 10,000); beyond that the count, total,
// min and max come from the exact aggregate of the whole trace.

import { h, replaceChildren } from '../dom';
import { exactMicros, formatCount, formatTime } from '../format';
import type { EventRef, TraceEvent } from '../trace';
import { durationStats } from './area';
import type { TraceClient } from './client';
import type { TraceModel } from './model';

const LIMIT = 10_000;

export async function sameNamePanel(box: HTMLElement, ev: TraceEvent, model: TraceModel, client: TraceClient, jump: (e: EventRef) => void): Promise<void> {
  replaceChildren(box, h('h3', null, 'Slices with the same name'), h('p', { class: 'muted' }, 'Counting…'));
  const found = await client.search(ev.name, false, LIMIT, true);
  if (box.dataset.eventId !== String(ev.id)) return;
  const occurrences = found.matches.filter((m) => m.name === ev.name).sort((a, b) => a.ts_ps - b.ts_ps || a.id - b.id);
  const stats = durationStats(occurrences.map((m) => m.dur_ps));
  if (!stats) return replaceChildren(box, h('h3', null, 'Slices with the same name'), h('p', { class: 'muted' }, 'No other slice has this name.'));
  let count = stats.count;
  let total = stats.total_ps;
  let min = stats.min_ps;
  let max = stats.max_ps;
  const partial = found.truncated;
  if (partial && model.tracks) {
    // More than the search lists: the exact figures from the aggregate of the whole trace.
    const threads = model.tracks.sections.flatMap((s) => s.tracks.filter((t) => t.kind === 'thread').map((t) => t.id));
    const a = await client.aggregate(model.bounds.start, model.bounds.end, threads);
    const row = a.rows.find((r) => r.name === ev.name);
    if (row) ({ count, total_ps: total, min_ps: min, max_ps: max } = row);
  }
  if (box.dataset.eventId !== String(ev.id)) return;
  const at = occurrences.findIndex((m) => m.id === ev.id);
  const prev = at > 0 ? occurrences[at - 1] : undefined;
  const next = at >= 0 ? occurrences[at + 1] : undefined;
  const peak = Math.max(1, ...stats.bins.map((b) => b.count));
  const bar = (b: { from: number; to: number; count: number }) =>
    h(
      'div',
      { class: 'trace-histo-bar', title: `${formatTime(b.from)} – ${formatTime(b.to)}: ${formatCount(b.count)}`, 'data-count': b.count },
      h('span', { style: `height:${Math.round((b.count / peak) * 100)}%` }),
    );
  const value = (label: string, field: string, ps: number) => h('span', { class: 'trace-stat', 'data-field': field, 'data-ps': ps, title: exactMicros(ps) }, h('span', { class: 'muted' }, `${label} `), formatTime(ps));
  replaceChildren(
    box,
    h('h3', null, 'Slices with the same name'),
    h(
      'p',
      { class: 'trace-same-stats', 'data-role': 'same-name-stats', 'data-count': count, 'data-total-ps': total },
      h('span', { class: 'trace-stat', 'data-field': 'count' }, `${formatCount(count)} slice${count === 1 ? '' : 's'}`),
      value('total', 'total', total),
      value('min', 'min', min),
      value(partial ? `median (first ${formatCount(stats.count)})` : 'median', 'median', stats.median_ps),
      value('max', 'max', max),
    ),
    h('div', { class: 'trace-histo', 'data-role': 'same-name-histogram', role: 'img', 'aria-label': `Histogram of the durations, ${formatTime(stats.min_ps)} to ${formatTime(stats.max_ps)}` }, stats.bins.map(bar)),
    h('div', { class: 'trace-histo-axis muted' }, h('span', null, formatTime(stats.min_ps)), h('span', null, formatTime(stats.max_ps))),
    h(
      'p',
      { class: 'trace-same-nav' },
      h('button', { type: 'button', class: 'button', 'data-role': 'same-prev', disabled: !prev, onclick: () => prev && jump(prev) }, '◀ Previous'),
      ' ',
      h('span', { class: 'muted', 'data-role': 'same-position' }, at >= 0 ? `${formatCount(at + 1)} of ${formatCount(occurrences.length)}${partial ? '+' : ''} by time` : ''),
      ' ',
      h('button', { type: 'button', class: 'button', 'data-role': 'same-next', disabled: !next, onclick: () => next && jump(next) }, 'Next ▶'),
    ),
  );
}
