// Small widgets of the trace viewer: drag handles that resize (label column, panel), the
// hover tooltip (name, duration, key arguments), the hosts picker, the XLA links of an op,
// and the key of a keyboard event.

import { h, replaceChildren } from '../dom';
import { exactMicros, formatTime } from '../format';
import type { PageContext } from '../page';
import { type StepSpan, type TraceEvent, type TrackRow, spanToView, zoomSpan } from '../trace';
import type { TraceClient } from './client';
import type { TraceModel } from './model';
import { STEP_KEYS, type TraceView } from './view';

/** The key of an event, lower case ('?', '[', 'escape' …). */
export function keyOf(e: KeyboardEvent): string {
  return e.key.length === 1 ? e.key.toLowerCase() : e.key.toLowerCase();
}

function stored(key: string, fallback: number): number {
  try {
    const v = Number(localStorage.getItem(key));
    return Number.isFinite(v) && v > 0 ? v : fallback;
  } catch {
    return fallback;
  }
}

/**
 * Makes `handle` resize something along `axis` (dragging or arrow keys), between `min` and
 * `max` px, remembered in localStorage under `key`. `inverted`: dragging up grows it (a
 * panel docked at the bottom).
 */
export function resizer(
  handle: HTMLElement,
  axis: 'x' | 'y',
  key: string,
  initial: number,
  min: number,
  max: number,
  apply: (px: number) => void,
  changed: () => void,
  inverted = false,
): void {
  let size = Math.min(max, Math.max(min, stored(key, initial)));
  const set = (px: number) => {
    size = Math.round(Math.min(max, Math.max(min, px)));
    apply(size);
    handle.setAttribute('aria-valuenow', String(size));
    try {
      localStorage.setItem(key, String(size));
    } catch {
      // Private mode: not remembered.
    }
  };
  apply(size);
  handle.setAttribute('aria-valuemin', String(min));
  handle.setAttribute('aria-valuemax', String(max));
  handle.setAttribute('aria-valuenow', String(size));
  handle.addEventListener('mousedown', (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    const start = axis === 'x' ? e.clientX : e.clientY;
    const from = size;
    const move = (m: MouseEvent) => {
      const d = (axis === 'x' ? m.clientX : m.clientY) - start;
      set(from + (inverted ? -d : d));
      changed();
    };
    const up = () => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
    };
    window.addEventListener('mousemove', move);
    window.addEventListener('mouseup', up);
  });
  handle.addEventListener('keydown', (e) => {
    const grow = axis === 'x' ? ['ArrowRight'] : inverted ? ['ArrowUp'] : ['ArrowDown'];
    const shrink = axis === 'x' ? ['ArrowLeft'] : inverted ? ['ArrowDown'] : ['ArrowUp'];
    if (grow.includes(e.key)) set(size + 20);
    else if (shrink.includes(e.key)) set(size - 20);
    else return;
    e.preventDefault();
    changed();
  });
}

/** Arguments shown first in the tooltip when present. */
const KEY_ARGS = ['hlo_op', 'hlo_module', 'long_name', 'tf_op', 'shape_with_layout', 'kernel_details', 'group_id', 'step_name'];
let tooltipTimer: ReturnType<typeof setTimeout> | undefined;

/**
 * Shows (or hides, with `hit` null) the hover tooltip: name and duration at once, the key
 * arguments once the event's details are fetched (after a short pause on the slice;
 * cached).
 */
export function tooltipFor(
  tip: HTMLElement,
  hit: { id: number; row: TrackRow; i: number; names: readonly string[]; x: number; y: number } | null,
  cache: Map<number, TraceEvent>,
  client: TraceClient,
  current: () => number | null,
): void {
  clearTimeout(tooltipTimer);
  if (!hit) {
    tip.classList.add('hidden');
    delete tip.dataset.eventId;
    return;
  }
  const s = hit.row.slices;
  const name = hit.names[s.name[hit.i] ?? 0] ?? '';
  const dur = s.dur[hit.i] ?? 0;
  const render = (ev: TraceEvent | undefined) => {
    const args = ev ? Object.entries(ev.args ?? {}) : [];
    args.sort(([a], [b]) => rank(a) - rank(b));
    replaceChildren(
      tip,
      h('div', { class: 'trace-tooltip-name' }, name),
      h('div', null, formatTime(dur), h('span', { class: 'muted' }, ` (${exactMicros(dur)})`), ev?.self_ps !== undefined ? h('span', null, ` · self ${formatTime(ev.self_ps)}`) : null),
      args.slice(0, 4).map(([k, v]) => h('div', { class: 'trace-tooltip-arg' }, h('span', { class: 'muted' }, `${k}: `), clip(typeof v === 'string' ? v : JSON.stringify(v)))),
      args.length > 4 ? h('div', { class: 'muted' }, `… ${args.length - 4} more arguments (click for all)`) : null,
    );
  };
  render(cache.get(hit.id));
  tip.dataset.eventId = String(hit.id);
  tip.classList.remove('hidden');
  const vw = window.innerWidth;
  const vh = window.innerHeight;
  const rect = tip.getBoundingClientRect();
  const left = Math.min(hit.x + 14, vw - rect.width - 8);
  const top = hit.y + 16 + rect.height > vh ? hit.y - rect.height - 10 : hit.y + 16;
  tip.style.left = `${Math.max(4, left)}px`;
  tip.style.top = `${Math.max(4, top)}px`;
  if (!cache.has(hit.id) && hit.id >= 0) {
    tooltipTimer = setTimeout(() => {
      void client
        .event(hit.id)
        .then((ev) => {
          if (cache.size > 500) cache.clear();
          cache.set(hit.id, ev);
          if (current() === hit.id) render(ev);
        })
        .catch(() => undefined);
    }, 150);
  }
}

function rank(arg: string): number {
  const i = KEY_ARGS.indexOf(arg);
  return i < 0 ? KEY_ARGS.length : i;
}

function clip(text: string, n = 120): string {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/**
 * The hosts picker: a filter, checkboxes, applied together (the page reloads with those
 * hosts). A pod has hundreds of hosts: the filter narrows the list (a substring of the
 * name), "Listed" chooses what it shows, and at most `maxHosts` (the server's limit; 0:
 * none known) can be shown on one timeline.
 */
export function hostPicker(hosts: readonly string[], shown: readonly string[], maxHosts: number, apply: (chosen: string[]) => void): HTMLElement {
  const boxes = hosts.map((name) => {
    const box = h('input', { type: 'checkbox', value: name, 'data-host-choice': name, onchange: () => update() });
    box.checked = shown.includes(name);
    return { name, box, label: h('label', { class: 'trace-host-choice' }, box, ` ${name}`) };
  });
  const chosen = () => boxes.filter((b) => b.box.checked).map((b) => b.name);
  const status = h('span', { class: 'muted', 'data-role': 'hosts-status' });
  const count = h('span', { class: 'muted', 'data-role': 'hosts-count' });
  const filter = h('input', {
    type: 'search',
    class: 'trace-host-filter',
    placeholder: 'Filter hosts by name',
    'aria-label': 'Filter hosts by name',
    'data-role': 'hosts-filter',
    oninput: () => update(),
  });
  const applyButton = h(
    'button',
    {
      type: 'button',
      class: 'button primary',
      'data-role': 'hosts-apply',
      onclick: () => {
        const picked = chosen();
        if (!picked.length) return void (status.textContent = 'Choose at least one host.');
        if (maxHosts > 0 && picked.length > maxHosts) return;
        apply(picked);
      },
    },
    'Show',
  );
  const setListed = (checked: boolean) => () => {
    boxes.filter((b) => !b.label.hidden).forEach((b) => (b.box.checked = checked));
    update();
  };
  const listed = h('button', { type: 'button', class: 'button', 'data-role': 'hosts-choose-listed', title: 'Choose every host the filter lists', onclick: setListed(true) }, 'Listed');
  const none = h('button', { type: 'button', class: 'button', 'data-role': 'hosts-choose-none', title: 'Clear the listed hosts', onclick: setListed(false) }, 'None');
  function update(): void {
    const needle = (filter as HTMLInputElement).value.trim().toLowerCase();
    let listedCount = 0;
    for (const b of boxes) {
      b.label.hidden = needle !== '' && !b.name.toLowerCase().includes(needle);
      if (!b.label.hidden) listedCount++;
    }
    const n = chosen().length;
    count.textContent = `${n} chosen · ${listedCount} of ${hosts.length} listed`;
    const tooMany = maxHosts > 0 && n > maxHosts;
    (applyButton as HTMLButtonElement).disabled = tooMany;
    status.textContent = tooMany ? `One timeline shows at most ${maxHosts} hosts: choose ${n - maxHosts} fewer.` : '';
  }
  update();
  return h(
    'details',
    { class: 'trace-host-picker', 'data-role': 'hosts-picker' },
    h('summary', { class: 'button', title: 'Show several hosts of this run on one timeline' }, `Hosts (${shown.length} of ${hosts.length})`),
    h(
      'div',
      { class: 'trace-host-menu' },
      h('p', { class: 'muted' }, 'Hosts on one timeline, on their own clocks as XProf shows them:'),
      hosts.length > 8 ? filter : null,
      h('div', { class: 'trace-host-list' }, boxes.map((b) => b.label)),
      h('div', { class: 'dialog-buttons' }, count, status, listed, none, applyButton),
    ),
  );
}

/**
 * Links of an XLA op to the op profile and the graph viewer. The node is the `hlo_op`
 * argument (kernels) or the event's name on an "XLA Ops" track; the module is the event
 * of the section's "XLA Modules" track at the same time (its name carries the program
 * id, as the graph viewer lists modules), else the `hlo_module` argument.
 */
export async function linksOf(ev: TraceEvent, model: TraceModel, client: TraceClient, ctx: PageContext, box: HTMLElement, still: () => boolean): Promise<void> {
  const str = (k: string) => (typeof ev.args[k] === 'string' ? (ev.args[k] as string) : undefined);
  const trackName = model.info(ev.track)?.name ?? '';
  const node = str('hlo_op') ?? (/^XLA Ops/.test(trackName) ? ev.name : undefined);
  if (!node) return;
  let module: string | undefined;
  const section = model.sectionOf(ev.track);
  const modulesTrack = section?.tracks.find((t) => /^XLA Modules/.test(t.name));
  if (modulesTrack) {
    const at = ev.ts_ps + Math.floor(ev.dur_ps / 2);
    const w = await client.window(at, at, 1, String(modulesTrack.id));
    const hit = w.tracks[0]?.events?.find((e) => e.ts_ps <= ev.ts_ps + ev.dur_ps && e.ts_ps + e.dur_ps >= ev.ts_ps);
    if (hit) module = w.names[hit.name];
  }
  if (!module) {
    const name = str('hlo_module');
    const program = ev.args.program_id;
    module = name && program !== undefined ? `${name}(${String(program)})` : name;
  }
  if (!module || !still()) return;
  const graph = `${ctx.link('graph_viewer')}&${new URLSearchParams({ module_name: module, node_name: node }).toString()}`;
  box.dataset.module = module;
  box.dataset.node = node;
  replaceChildren(
    box,
    h('a', { href: `${ctx.link('op_profile')}&${new URLSearchParams({ op_name: node }).toString()}`, 'data-role': 'trace-link', 'data-link': 'op_profile' }, `Open ${node} in the op profile`),
    ' · ',
    h('a', { href: graph, 'data-role': 'trace-link', 'data-link': 'graph_viewer' }, `Open ${node} of ${module} in the graph viewer`),
  );
}

/**
 * Shows the hosts picker when the run has several hosts; choosing hosts writes them to the
 * URL (track and event ids change with the hosts: the view's ids are dropped) and calls
 * `reload`.
 */
export function mountHostPicker(ctx: PageContext, view: TraceView, holder: HTMLElement, reload: () => void): void {
  const maxHosts = ctx.api.traceViewMaxHosts ? ctx.api.traceViewMaxHosts(ctx.state.run).catch(() => 0) : Promise.resolve(0);
  void Promise.all([ctx.api.hosts(ctx.state.run, ctx.state.tool), maxHosts])
    .then(([hosts, max]) => {
      const real = hosts.filter((x) => x !== 'ALL_HOSTS');
      if (real.length < 2) return;
      const shown = view.hosts.includes('ALL_HOSTS') ? real : view.hosts.length ? view.hosts : [ctx.state.host || real[0] || ''];
      replaceChildren(
        holder,
        hostPicker(real, shown, max, (chosen) => {
          for (const key of ['sel', 'range', 'range_tracks', 'collapsed', 'collapsed_hosts', 'hidden_tracks', 'pinned']) ctx.view.set(key, null);
          ctx.view.set('hosts', chosen.length > 1 ? chosen.join(',') : null);
          reload();
        }),
      );
    })
    .catch(() => undefined);
}

/**
 * The span of a step the URL names (`step` or `step_name`, the overview's and pod viewer's
 * links): sets the model's view on it (5% margin) and replaces the step keys in the URL by
 * the window. An Error to show when the step is unknown.
 */
export async function stepSpan(ctx: PageContext, client: TraceClient, model: TraceModel, step: { number?: string; name?: string }): Promise<StepSpan | Error> {
  ctx.view.set(STEP_KEYS.step, null);
  ctx.view.set(STEP_KEYS.stepName, null);
  try {
    const s = await client.step(step);
    const pad = Math.max((s.end_ps - s.start_ps) * 0.05, 1000);
    model.span = zoomSpan({ start: s.start_ps - pad, end: s.end_ps + pad }, (s.start_ps + s.end_ps) / 2, 1, model.bounds);
    for (const [k, v] of Object.entries(spanToView(model.span, model.bounds))) ctx.view.set(k, v);
    return s;
  } catch (e) {
    return new Error(`Could not open step ${step.name ?? step.number}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
