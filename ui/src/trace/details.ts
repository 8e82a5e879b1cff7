// The trace viewer's docked panel contents: one event's details (times in readable units
// with the exact values in titles, the track, the step, the flow's other ends as jump
// buttons, links to the XLA tools, arguments in readable units: bytes in KiB/MiB/GiB,
// FLOPs and counts grouped, ids as they are) and the search results list. Every profile
// string is set as text.

import { h } from '../dom';
import { exactMicros, formatBytes, formatCount, formatTime } from '../format';
import type { EventRef, SearchResult, TraceEvent } from '../trace';

/** Arguments that are identifiers: shown as recorded, never grouped in thousands. */
const ID_ARG = /(^|_)(id|ids|correlation|correlation_id|stream|device|pid|tid|external_id|seq|sequence_number|program_id|run_id|step_num|group_id|flow)$/i;

/**
 * An argument's value for people: bytes (`bytes_accessed`, `*_bytes`, `memory`) in binary
 * units, other large numbers (FLOPs, counts) with thousands separators, identifiers as
 * they are; the exact value (when it differs) in `title`.
 */
export function argText(key: string, value: unknown): { text: string; title?: string } {
  const raw = typeof value === 'string' ? value : JSON.stringify(value);
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(n) || ID_ARG.test(key)) return { text: raw };
  if (/bytes|(^|_)memory($|_)|(^|_)size_in_bytes/i.test(key)) return { text: formatBytes(n), title: `${formatCount(n)} bytes` };
  if (Number.isInteger(n) && Math.abs(n) >= 10_000) return { text: formatCount(n), title: raw };
  return { text: raw };
}

export interface EventPanelOptions {
  /** Start of the trace (times are shown from it). */
  origin: number;
  /** "section › track" of a track id. */
  trackLabel(track: number): string;
  /** The other events of the event's flow (null while loading, [] without a flow). */
  flowEvents: EventRef[] | null;
  /** Jump to an event (selects it, moves the view there). */
  jump(e: EventRef): void;
  /** Where links to the XLA tools go (filled in later). */
  links: HTMLElement;
  /** Shown after the arguments (the slices of the same name). */
  extra?: HTMLElement;
}

/** The details of one event. */
export function eventPanel(ev: TraceEvent, o: EventPanelOptions): HTMLElement {
  const prop = (key: string, label: string, value: Node | string, extra: Record<string, string | number> = {}) =>
    h('tr', null, h('th', { scope: 'row' }, label), h('td', { 'data-field': key, ...extra }, value));
  const args = Object.entries(ev.args ?? {});
  const rel = ev.ts_ps - o.origin;
  const flow = ev.flow
    ? h(
        'div',
        { class: 'trace-flow', 'data-role': 'trace-flow' },
        h('h3', null, `Flow ${ev.flow[0]} (${ev.flow[1]} of the flow)`),
        o.flowEvents === null
          ? h('p', { class: 'muted' }, 'Loading the flow…')
          : o.flowEvents.filter((f) => f.id !== ev.id).length === 0
            ? h('p', { class: 'muted' }, 'No other event of this flow.')
            : h(
                'ul',
                { class: 'trace-jumps' },
                o.flowEvents
                  .filter((f) => f.id !== ev.id)
                  .map((f) =>
                    h(
                      'li',
                      null,
                      h(
                        'button',
                        { type: 'button', class: 'link-button', 'data-role': 'flow-jump', 'data-event-id': f.id, onclick: () => o.jump(f) },
                        f.ts_ps < ev.ts_ps ? '← ' : '→ ',
                        f.name,
                      ),
                      h('span', { class: 'muted' }, ` · ${o.trackLabel(f.track)} · at ${formatTime(f.ts_ps - o.origin)} · ${formatTime(f.dur_ps)}`),
                    ),
                  ),
              ),
      )
    : null;
  return h(
    'div',
    { class: 'trace-event' },
    h('h3', { class: 'trace-event-name', 'data-role': 'event-title' }, ev.name),
    h(
      'table',
      { class: 'props trace-props' },
      h(
        'tbody',
        null,
        prop('name', 'Name', ev.name),
        prop('start', 'Start', `${formatTime(rel, 7)} from the trace start`, { 'data-ps': ev.ts_ps, title: exactMicros(rel) }),
        prop('duration', 'Duration', formatTime(ev.dur_ps), { 'data-ps': ev.dur_ps, title: exactMicros(ev.dur_ps) }),
        ev.self_ps !== undefined ? prop('self', 'Self time', formatTime(ev.self_ps), { 'data-ps': ev.self_ps, title: exactMicros(ev.self_ps) }) : null,
        prop('track', 'Track', o.trackLabel(ev.track)),
        ev.group_id !== undefined ? prop('group', 'Step (group id)', String(ev.group_id)) : null,
        ev.flow ? prop('flow', 'Flow', `${ev.flow[1]} of flow ${ev.flow[0]}`, { 'data-flow-id': ev.flow[0] }) : null,
      ),
    ),
    o.links,
    flow,
    h('h3', null, 'Arguments'),
    args.length
      ? h(
          'table',
          { class: 'props trace-args', 'data-role': 'trace-args' },
          h(
            'tbody',
            null,
            args.map(([k, v]) => {
              const shown = argText(k, v);
              return h('tr', { 'data-arg': k }, h('th', { scope: 'row' }, k), h('td', { title: shown.title ?? null, 'data-raw': typeof v === 'string' ? v : JSON.stringify(v) }, shown.text));
            }),
          ),
        )
      : h('p', { class: 'muted', 'data-role': 'trace-no-args' }, 'No arguments.'),
    o.extra ?? null,
  );
}

export interface SearchListOptions {
  origin: number;
  current: number;
  trackLabel(track: number): string;
  jump(index: number): void;
}

/** Most search results listed at once (the rest are a click away). */
const LIST_PAGE = 200;

/** The search results as a list of jump buttons. */
export function searchList(r: SearchResult, o: SearchListOptions): HTMLElement {
  const list = h('ol', { class: 'trace-results', 'data-role': 'search-results' });
  let shown = 0;
  const more = h('div');
  const add = () => {
    const next = Math.min(r.matches.length, shown + LIST_PAGE);
    for (let i = shown; i < next; i++) {
      const m = r.matches[i];
      if (!m) continue;
      list.append(
        h(
          'li',
          { 'data-result': i, class: i === o.current ? 'current' : null },
          h(
            'button',
            { type: 'button', class: 'link-button', 'data-event-id': m.id, 'aria-current': i === o.current ? 'true' : null, onclick: () => o.jump(i) },
            m.name,
          ),
          h(
            'span',
            { class: 'muted' },
            ` · ${o.trackLabel(m.track)} · at ${formatTime(m.ts_ps - o.origin, 6)} · ${formatTime(m.dur_ps)}${m.arg ? ` · matched in ${m.arg}` : ''}`,
          ),
        ),
      );
    }
    shown = next;
    more.replaceChildren();
    if (shown < r.matches.length) {
      more.append(h('button', { type: 'button', class: 'button', onclick: add }, `Show ${Math.min(LIST_PAGE, r.matches.length - shown)} more`));
    }
  };
  add();
  const note =
    r.total > r.matches.length
      ? h('p', { class: 'muted' }, `The first ${formatCount(r.matches.length)} of ${formatCount(r.total)} matches by time; refine the search to see the others.`)
      : null;
  return h('div', { class: 'trace-search-panel' }, note, list, more);
}
