// Op profile (XProf's hlo_op_profile): overall FLOPS and memory bandwidth utilisation, a
// control panel (group by program or category, ops per group, sort, name filter, idle,
// top 90%; all in the URL), the expandable op table (programs/categories → ops → fusion
// children, time %, wasted %, HBM %, FLOPS and HBM utilisation bars coloured red → green)
// and a details card for the selected op with a link to the graph viewer.

import { card } from '../components/common';
import {
  MEM_HBM,
  MEM_NAMES,
  type OpNode,
  bf16FlopsRate,
  bwColor,
  utilizationLegend,
  flameColor,
  flopsColor,
  flopsRate,
  flopsUtilization,
  formatPs,
  graphViewerHref,
  hbmFraction,
  instructionName,
  memoryBandwidth,
  memoryBandwidthUtilization,
  parseFrameworkOpType,
  percent,
  siText,
  timeFraction,
  timeWasted,
  utilBar,
} from '../components/xla';
import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import { timelineHref } from '../timeline';

/** XProf's op_profile response (proto JSON). */
export interface OpProfile {
  byProgram?: OpNode;
  byProgramExcludeIdle?: OpNode;
  byCategory?: OpNode;
  byCategoryExcludeIdle?: OpNode;
  deviceType?: string;
  aggDvfsTimeScaleMultiplier?: number;
}

export type GroupBy = 'program' | 'category';
export type SortKey = 'time' | 'wasted' | 'flops' | 'hbm' | 'name';

export interface TreeOptions {
  /** Ops shown per group (XProf's "Ops limit"). */
  limit: number;
  sort: SortKey;
  /** Only the children making up 90% of their parent's time (within the limit). */
  p90: boolean;
}

export const LIMITS = [10, 25, 50, 100];
const SORTS: [SortKey, string][] = [
  ['time', 'Time'],
  ['wasted', 'Wasted time'],
  ['flops', 'FLOPS utilization'],
  ['hbm', 'HBM bandwidth utilization'],
  ['name', 'Name'],
];
/** Separator of node names in a path (`op.sel`). */
const SEP = '|';

/** The tree of a grouping, with or without IDLE (falls back to whatever grouping exists). */
export function rootFor(profile: OpProfile | null, groupBy: GroupBy, excludeIdle: boolean): OpNode | undefined {
  if (!profile) return undefined;
  const wanted =
    groupBy === 'category'
      ? excludeIdle
        ? profile.byCategoryExcludeIdle
        : profile.byCategory
      : excludeIdle
        ? profile.byProgramExcludeIdle
        : profile.byProgram;
  return wanted ?? (excludeIdle ? (profile.byProgramExcludeIdle ?? profile.byCategoryExcludeIdle) : (profile.byProgram ?? profile.byCategory));
}

/** Sort key value of a node (larger first; name ascending). */
function sortValue(node: OpNode, root: OpNode, sort: SortKey): number {
  switch (sort) {
    case 'wasted':
      return timeWasted(node, root);
    case 'flops':
      return flopsUtilization(node, root);
    case 'hbm':
      return memoryBandwidthUtilization(node, MEM_HBM);
    default:
      return node.metrics?.rawTime ?? 0;
  }
}

/**
 * The children of `node` shown at `level` (level 0 = the root, whose children are all
 * shown): sorted (the server's order = time for `time`; NaN last; stable), cut to
 * `limit`, or fewer with `p90` (stop once 90% of the node's time is covered). `leftOut`
 * counts the children not shown (from `numChildren`, which includes those the server cut).
 */
export function visibleChildren(node: OpNode, root: OpNode, level: number, options: TreeOptions): { children: OpNode[]; leftOut: number } {
  const all = [...(node.children ?? [])];
  if (options.sort === 'name') {
    all.sort((a, b) => ((a.name ?? '') < (b.name ?? '') ? -1 : (a.name ?? '') > (b.name ?? '') ? 1 : 0));
  } else if (options.sort !== 'time') {
    const keyed = all.map((n, i) => ({ n, i, v: sortValue(n, root, options.sort) }));
    keyed.sort((a, b) => {
      const an = Number.isNaN(a.v);
      const bn = Number.isNaN(b.v);
      if (an || bn) return an && bn ? a.i - b.i : an ? 1 : -1;
      return b.v - a.v || a.i - b.i;
    });
    all.splice(0, all.length, ...keyed.map((k) => k.n));
  }
  if (level === 0) return { children: all, leftOut: 0 };
  let count = Math.min(options.limit, all.length);
  if (options.p90 && node.metrics?.rawTime) {
    const target = node.metrics.rawTime * 0.9;
    let total = 0;
    for (let i = 0; i < count; i++) {
      if (total >= target) {
        count = i;
        break;
      }
      total += all[i]?.metrics?.rawTime ?? 0;
    }
  }
  const children = all.slice(0, count);
  const known = Math.max(node.numChildren ?? 0, all.length);
  return { children, leftOut: Math.max(0, known - children.length) };
}

/** Whether `node` or a descendant's name contains `query` (case-insensitive); memoised in `memo`. */
export function matchesFilter(node: OpNode, query: string, memo = new Map<OpNode, boolean>()): boolean {
  const cached = memo.get(node);
  if (cached !== undefined) return cached;
  const q = query.trim().toLowerCase();
  const self = !q || (node.name ?? '').toLowerCase().includes(q);
  const result = self || (node.children ?? []).some((c) => matchesFilter(c, q, memo));
  memo.set(node, result);
  return result;
}

/** The nodes along `path` (names joined by `|`) from the root, or null when it does not resolve. */
export function nodeAtPath(root: OpNode, path: string): OpNode[] | null {
  if (!path) return null;
  const chain: OpNode[] = [];
  let node: OpNode | undefined = root;
  for (const name of path.split(SEP)) {
    node = node?.children?.find((c) => c.name === name);
    if (!node) return null;
    chain.push(node);
  }
  return chain;
}

/** The path of the first op named `name` (depth first, ops before groups), or '' when none. */
export function pathOfOp(root: OpNode, name: string): string {
  let found = '';
  const walk = (node: OpNode, path: string): boolean => {
    for (const c of node.children ?? []) {
      const p = path ? `${path}${SEP}${c.name ?? ''}` : (c.name ?? '');
      if (c.xla && (c.name === name || c.name === `${name} and its duplicate(s)`)) {
        found = p;
        return true;
      }
      if (walk(c, p)) return true;
    }
    return false;
  };
  walk(root, '');
  return found;
}

/** What kind of node this is, as XProf's details card words it. */
export function nodeKind(node: OpNode, level: number, groupBy: GroupBy): string {
  if (node.xla?.category) return `${node.xla.category} operation`;
  if (node.xla) return 'Operation';
  if (node.category) return 'Operation category';
  if (level === 1 && groupBy === 'program') return 'Program (HLO module)';
  return 'Operation category';
}

export function opProfilePage(ctx: PageContext): HTMLElement {
  const { run, host } = ctx.state;
  const view = ctx.view;
  const groupBy = (): GroupBy => (view.get('group_by') === 'category' ? 'category' : 'program');
  const limit = () => {
    const n = Number(view.get('op.limit'));
    return LIMITS.includes(n) ? n : 10;
  };
  const sort = (): SortKey => {
    const s = view.get('op.sort') as SortKey;
    return SORTS.some(([k]) => k === s) ? s : 'time';
  };
  const excludeIdle = () => view.get('op.idle') !== 'include';

  // The shell loaded the default grouping (by program); category is fetched on demand.
  const profiles: Partial<Record<GroupBy, OpProfile>> = { program: (ctx.data as OpProfile | null) ?? {} };
  const expanded = new Set<string>();
  let selected = view.get('op.sel');

  const page = h('div', { class: 'page op-profile', 'data-page': 'op_profile' });
  const summary = h('div', { class: 'op-summary', 'data-role': 'op-summary' });
  const tableHost = h('div', { class: 'op-tree-host', 'data-chart': 'op-profile', 'data-ready': 'false' });
  const details = h('div', { class: 'op-details', 'data-role': 'op-details' });

  // ---- controls ----
  const groupSelect = h('select', { 'data-role': 'group-by', 'aria-label': 'Group by' }, h('option', { value: 'program' }, 'Program'), h('option', { value: 'category' }, 'Category'));
  const limitSelect = h('select', { 'data-role': 'op-limit', 'aria-label': 'Ops per group' }, LIMITS.map((n) => h('option', { value: String(n) }, String(n))));
  const sortSelect = h('select', { 'data-role': 'op-sort', 'aria-label': 'Sort by' }, SORTS.map(([k, label]) => h('option', { value: k }, label)));
  const idleBox = h('input', { type: 'checkbox', 'data-role': 'exclude-idle', 'aria-label': 'Exclude IDLE' });
  const p90Box = h('input', { type: 'checkbox', 'data-role': 'top90', 'aria-label': 'Top 90%' });
  const filter = h('input', { type: 'search', class: 'filter', 'data-role': 'op-filter', placeholder: 'Filter by op name', 'aria-label': 'Filter by op name' });
  const syncControls = () => {
    groupSelect.value = groupBy();
    limitSelect.value = String(limit());
    sortSelect.value = sort();
    idleBox.checked = excludeIdle();
    p90Box.checked = view.get('op.p90') === 'yes';
    filter.value = view.get('op.q');
  };
  syncControls();
  const label = (text: string, control: HTMLElement) => h('label', { class: 'selector' }, h('span', null, text), control);
  const controls = h(
    'div',
    { class: 'controls op-controls' },
    label('Group by', groupSelect),
    label('Ops per group', limitSelect),
    label('Sort by', sortSelect),
    h('label', { class: 'selector', title: '"IDLE" is the time the device is idle.' }, idleBox, h('span', null, 'Exclude IDLE')),
    h('label', { class: 'selector', title: 'Only the ops making up 90% of each group\u2019s time (within the limit).' }, p90Box, h('span', null, 'Top 90%')),
    filter,
  );

  page.append(
    card(
      null,
      summary,
      h(
        'p',
        { class: 'description' },
        'Wasted time = time fraction × (1 − max(FLOPS utilization, HBM bandwidth utilization)). Click a row to expand it and see its details.',
      ),
      utilizationLegend(),
      controls,
    ),
    h('div', { class: 'op-layout' }, card('Ops', tableHost), card('Details', details)),
  );

  const currentRoot = () => rootFor(profiles[groupBy()] ?? null, groupBy(), excludeIdle());

  function renderSummary(root: OpNode | undefined, profile: OpProfile): void {
    const device = profile.deviceType || 'TPU';
    if (!root) return replaceChildren(summary, h('p', { class: 'muted' }, 'No op profile data.'));
    const flops = flopsUtilization(root, root);
    const bw = [0, 1, 2].map((k) => memoryBandwidthUtilization(root, k));
    replaceChildren(
      summary,
      h(
        'div',
        { class: 'op-headline' },
        'Overall ',
        h('span', { 'data-role': 'device-type' }, device),
        ' FLOPS utilization is ',
        h('span', { class: 'op-headline-value', 'data-role': 'overall-flops', 'data-value': Number.isNaN(flops) ? '' : String(flops), style: `color:${flopsColor(flops)}` }, percent(flops)),
      ),
      h(
        'div',
        { class: 'op-headline' },
        'Memory bandwidth utilization: ',
        bw.map((u, k) =>
          k === MEM_HBM || !Number.isNaN(u)
            ? h('span', { class: 'op-bw', 'data-role': `overall-bw-${k}`, 'data-value': Number.isNaN(u) ? '' : String(u) }, `${MEM_NAMES[k]} `, h('b', { style: `color:${bwColor(u)}` }, percent(u)), ' ')
            : null,
        ),
      ),
    );
  }

  function renderTree(): void {
    const profile = profiles[groupBy()] ?? {};
    const root = rootFor(profile, groupBy(), excludeIdle());
    renderSummary(root, profile);
    const rows: HTMLElement[] = [];
    const options: TreeOptions = { limit: limit(), sort: sort(), p90: view.get('op.p90') === 'yes' };
    const q = view.get('op.q').trim();
    const memo = new Map<OpNode, boolean>();
    const walk = (node: OpNode, level: number, path: string) => {
      const { children, leftOut } = visibleChildren(node, root ?? node, level, options);
      for (const child of children) {
        if (q && !matchesFilter(child, q, memo)) continue;
        const childPath = path ? `${path}${SEP}${child.name ?? ''}` : (child.name ?? '');
        const open = expanded.has(childPath) || (!!q && (child.children?.length ?? 0) > 0 && !(child.name ?? '').toLowerCase().includes(q.toLowerCase()));
        rows.push(row(child, root ?? node, level + 1, childPath, open));
        if (open) walk(child, level + 1, childPath);
      }
      if (level > 0 && leftOut > 0 && !q) {
        rows.push(
          h(
            'tr',
            { class: 'op-leftout', 'data-role': 'left-out', 'data-count': leftOut },
            h('td', { colspan: 7, style: `padding-left:${level + 1.5}em` }, `${leftOut} categories or ops have been left out.`),
          ),
        );
      }
    };
    if (root) walk(root, 0, '');
    const table = h(
      'table',
      { class: 'op-tree', 'data-role': 'op-tree' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          h('th', { class: 'num', title: 'Share of the total time' }, 'Time'),
          h('th', { class: 'num', title: 'Time fraction × (1 − max(FLOPS utilization, HBM bandwidth utilization))' }, 'Wasted'),
          h('th', { class: 'num', title: 'Share of the HBM bytes accessed' }, 'HBM %'),
          h('th', null, 'Name'),
          h('th', { title: 'Framework op type' }, 'Framework op'),
          h('th', { title: 'FLOPS utilization' }, 'FLOPS'),
          h('th', { title: 'HBM bandwidth utilization' }, 'HBM BW'),
        ),
      ),
      h('tbody', null, rows),
    );
    replaceChildren(tableHost, rows.length ? table : h('p', { class: 'empty-table', 'data-role': 'op-empty' }, q ? `No op name contains "${q}".` : 'No ops on the device in this profile (op profile needs device (GPU/TPU) ops).'));
    tableHost.dataset.rows = String(rows.filter((r) => r.dataset.path !== undefined).length);
    tableHost.dataset.ready = 'true';
    renderDetails();
  }

  function row(node: OpNode, root: OpNode, level: number, path: string, open: boolean): HTMLElement {
    const fraction = timeFraction(node, root);
    const flops = flopsUtilization(node, root);
    const hbm = memoryBandwidthUtilization(node, MEM_HBM);
    const hasChildren = (node.children?.length ?? 0) > 0;
    const tr = h(
      'tr',
      {
        class: `op-row level-${Math.min(level, 4)}${path === selected ? ' selected' : ''}`,
        'data-path': path,
        'data-name': node.name ?? '',
        'data-level': level,
        'data-time-fraction': String(fraction),
        tabindex: 0,
        'aria-expanded': hasChildren ? String(open) : null,
      },
      h('td', { class: 'num', 'data-col': 'time' }, h('span', { class: 'time-bar', style: `width:${Math.min(100, fraction * 100)}%` }), h('span', { class: 'time-text' }, node.metrics ? percent(fraction) : '')),
      h('td', { class: 'num', 'data-col': 'wasted' }, percent(timeWasted(node, root))),
      h('td', { class: 'num', 'data-col': 'hbm-fraction' }, percent(hbmFraction(node, root), '')),
      h(
        'td',
        { class: 'op-name', 'data-col': 'name', style: `padding-left:${level - 0.5}em`, title: node.name ?? '' },
        h('span', { class: 'disclosure' }, hasChildren ? (open ? '▼' : '►') : ''),
        h('span', { class: 'dot', style: `background:${flameColor(flops, 0.7, 1, Math.sqrt)}` }),
        node.name ?? '',
      ),
      h('td', { 'data-col': 'provenance', title: node.xla?.provenance ?? '' }, parseFrameworkOpType(node.xla?.provenance)),
      h('td', { 'data-col': 'flops' }, utilBar(flops, flopsColor(flops), 'flops-util')),
      h('td', { 'data-col': 'hbm' }, utilBar(hbm, bwColor(hbm), 'hbm-util')),
    );
    const activate = () => {
      if (hasChildren) {
        if (expanded.has(path)) expanded.delete(path);
        else expanded.add(path);
      }
      selected = path;
      view.set('op.sel', path);
      renderTree();
      [...tableHost.querySelectorAll<HTMLElement>('tr[data-path]')].find((r) => r.dataset.path === path)?.focus({ preventScroll: true });
    };
    tr.addEventListener('click', activate);
    tr.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        activate();
      }
    });
    return tr;
  }

  function renderDetails(): void {
    const root = currentRoot();
    const chain = root ? nodeAtPath(root, selected) : null;
    const node = chain?.[chain.length - 1];
    if (!root || !chain || !node) {
      details.removeAttribute('data-path');
      return replaceChildren(details, h('p', { class: 'muted' }, 'Click an op to see its details.'));
    }
    details.dataset.path = selected;
    const level = chain.length;
    const flops = flopsUtilization(node, root);
    const entries: [string, string, Node | string][] = [];
    const add = (key: string, title: string, value: Node | string | null | undefined) => {
      if (value !== null && value !== undefined && value !== '') entries.push([key, title, value]);
    };
    const m = node.metrics;
    const device = profiles[groupBy()]?.deviceType || 'TPU';
    const per = device === 'GPU' ? ' (per GPU)' : device === 'TPU' ? ' (per core)' : '';
    if (m?.flops) add('flops-utilization', 'FLOPS utilization', utilBar(flops, flopsColor(flops), 'detail-flops'));
    for (let k = 0; k < 3; k++) {
      const u = memoryBandwidthUtilization(node, k);
      if (!Number.isNaN(u)) add(`bw-utilization-${k}`, `${MEM_NAMES[k]} bandwidth utilization`, utilBar(u, bwColor(u), `detail-bw-${k}`));
    }
    const rate = flopsRate(node);
    if (!Number.isNaN(rate)) {
      add('flop-rate', `FLOP rate${per}`, siText(rate, 'FLOP/s'));
      if (device === 'TPU') add('bf16-flop-rate', 'bf16 normalized FLOP rate (per core)', siText(bf16FlopsRate(node), 'FLOP/s'));
    }
    for (let k = 0; k < 3; k++) {
      const bw = memoryBandwidth(node, k);
      if (bw) add(`bandwidth-${k}`, `${MEM_NAMES[k]} bandwidth${per}`, siText(bw, 'B/s'));
    }
    if (m?.rawTime) add('time', 'Total time', `${formatPs(m.rawTime)} (${percent(timeFraction(node, root))} of the total)`);
    if (m?.avgTimePs) add('avg-time', 'Average time', formatPs(m.avgTimePs));
    if (m?.occurrences) add('occurrences', 'Occurrences', String(m.occurrences));
    const x = node.xla;
    if (x?.expression) add('expression', 'XLA expression', h('code', { class: 'expression' }, x.expression));
    if (x?.provenance) add('provenance', 'Framework op (long name)', h('code', { class: 'expression' }, x.provenance));
    if (x?.provenance) add('framework-op-type', 'Framework op type', parseFrameworkOpType(x.provenance));
    if (x?.category) add('category', 'Category', x.category);
    if (x?.programId && x.programId !== '0') add('program-id', 'Program id', x.programId);
    if (x?.fingerprint && x.fingerprint !== '0') add('fingerprint', 'Fingerprint', x.fingerprint);
    if (x?.computationPrimitiveSize) add('computation-size', 'Hardware computation size', String(x.computationPrimitiveSize));
    const dims = x?.layout?.dimensions ?? [];
    if (dims.length) add('layout', 'Layout', layoutNode(dims));
    const src = x?.sourceInfo;
    if (src?.fileName) add('source', 'Source', `${src.fileName}:${src.lineNumber ?? ''}`);
    if (src?.stackFrame) add('source-stack', 'Source stack', h('pre', { class: 'expression' }, src.stackFrame));
    if (x?.xprofKernelMetadata) add('kernel-metadata', 'Kernel metadata', h('code', { class: 'expression' }, x.xprofKernelMetadata));

    const graph = h('div', { class: 'op-graph-link', 'data-role': 'graph-link-box' });
    const opName = instructionName(x?.expression) || (x ? (node.name ?? '').replace(/ and its duplicate\(s\)$/, '') : '');
    if (x && opName) {
      graph.append(
        h('a', { class: 'button', href: timelineHref(ctx.state, { name: opName, track: 'XLA Ops' }), 'data-role': 'show-in-timeline', title: 'Show this op in the trace viewer (its longest run, every run highlighted)' }, 'Show in timeline'),
        ' ',
      );
    }
    if (x && opName) {
      const programModule = groupBy() === 'program' ? (chain[0]?.name ?? '') : '';
      const programId = x.programId && x.programId !== '0' ? x.programId : '';
      const module = /\(\d+\)$/.test(programModule) ? programModule : '';
      if (module || programId) {
        graph.append(
          h(
            'a',
            { class: 'button', href: graphViewerHref(run, host, opName, { module, programId }), 'data-role': 'graph-link', 'data-module': module, 'data-program-id': programId, 'data-node': opName },
            `Graph viewer: ${opName}`,
          ),
        );
      }
    }
    const fused = !!x && !m?.rawTime && level > 2;
    replaceChildren(
      details,
      h(
        'div',
        { class: 'op-details-header' },
        h('span', { class: 'op-details-dot', style: `background:${flameColor(flops, 0.7, 1, Math.sqrt)}` }),
        h('div', null, h('div', { class: 'op-details-name', 'data-role': 'detail-name' }, node.name ?? ''), h('div', { class: 'muted', 'data-role': 'detail-kind' }, nodeKind(node, level, groupBy()))),
      ),
      graph,
      h('dl', { class: 'properties op-props', 'data-props': 'op-details' }, entries.map(([key, title, value]) => [h('dt', null, title), h('dd', { 'data-field': key }, value)])),
      fused ? h('p', { class: 'muted', 'data-role': 'fused-note' }, 'Performance information for individual fused operations is not available.') : null,
      !x ? h('p', { class: 'muted' }, 'Select items within this group for per-op details.') : null,
    );
  }

  async function ensureProfile(): Promise<void> {
    const g = groupBy();
    if (profiles[g]) return renderTree();
    tableHost.dataset.ready = 'false';
    replaceChildren(tableHost, h('div', { class: 'loading-inline' }, h('span', { class: 'spinner' }), 'Loading…'));
    try {
      profiles[g] = (await ctx.api.data(run, ctx.state.tool, host, { group_by: g })) as OpProfile;
      if (groupBy() === g) renderTree();
    } catch (e) {
      replaceChildren(tableHost, h('p', { class: 'error', 'data-role': 'op-error' }, `Could not load the op profile: ${e instanceof Error ? e.message : String(e)}`));
      tableHost.dataset.ready = 'true';
    }
  }

  groupSelect.addEventListener('change', () => {
    view.set('group_by', groupSelect.value === 'category' ? 'category' : null);
    view.set('op.sel', null);
    selected = '';
    expanded.clear();
    void ensureProfile();
  });
  limitSelect.addEventListener('change', () => {
    view.set('op.limit', limitSelect.value === '10' ? null : limitSelect.value);
    renderTree();
  });
  sortSelect.addEventListener('change', () => {
    view.set('op.sort', sortSelect.value === 'time' ? null : sortSelect.value);
    renderTree();
  });
  idleBox.addEventListener('change', () => {
    view.set('op.idle', idleBox.checked ? null : 'include');
    renderTree();
  });
  p90Box.addEventListener('change', () => {
    view.set('op.p90', p90Box.checked ? 'yes' : null);
    renderTree();
  });
  filter.addEventListener('input', () => {
    view.set('op.q', filter.value || null);
    renderTree();
  });

  // An op named by another page (`op_name`: the trace viewer's "Open in op profile") is
  // selected once the tree is there.
  const linked = view.get('op_name');
  if (linked) {
    view.set('op_name', null);
    const root = rootFor(profiles[groupBy()] ?? null, groupBy(), excludeIdle());
    const path = root ? pathOfOp(root, linked) : '';
    if (path) {
      selected = path;
      view.set('op.sel', path);
    }
  }
  // A deep-linked selection opens its ancestors.
  if (selected) {
    const parts = selected.split(SEP);
    for (let i = 1; i < parts.length; i++) expanded.add(parts.slice(0, i).join(SEP));
  }
  void ensureProfile();
  return page;
}

/** Layout dimensions with XProf's padding hints (`Exact fit` / `Pad to N`). */
function layoutNode(dims: { size?: number; alignment?: number; semantics?: string }[]): HTMLElement {
  return h(
    'div',
    { class: 'op-layout-dims' },
    dims.map((d, i) => {
      const size = d.size ?? 0;
      let hint = '';
      let color = '';
      if (d.alignment) {
        const mul = Math.ceil(size / d.alignment);
        const suffix = mul === 1 ? '' : `: ${mul} x ${d.alignment}`;
        hint = size % d.alignment === 0 ? `Exact fit${suffix}` : `Pad to ${mul * d.alignment}${suffix}`;
        const ratio = size / d.alignment;
        color = flameColor(ratio / Math.ceil(ratio || 1), 1, 0.25);
      }
      return h('div', { class: 'op-layout-dim' }, i ? '× ' : '', h('b', null, String(size)), d.semantics ? ` ${d.semantics}` : '', hint ? h('span', { class: 'op-pad', style: `background:${color}` }, ` ${hint}`) : null);
    }),
  );
}
