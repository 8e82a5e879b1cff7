// The compare view: run A (the baseline: the header's run and host) against run B (picked
// here, with its host), from `/oxprof/api/diff`. Sections as `oxprof diff` prints them:
// steps (each category's mean, absolute and relative change, Welch's p-value, Hedges' g and
// the noise verdict, with a side-by-side breakdown chart), the input pipeline, each kind of
// op (regressions, then improvements, then ops only in A or only in B; each row links to
// the op in both runs' pages and traces), memory, and oxprof's notes. The view is in the
// URL (`tool=compare&run=A&host=H&run_b=B&host_b=HB`), so a comparison is a link.
//
// The table builders are pure (unit tested): a `RunDiff` in, DataTables out.

import { type Api, buildUrl } from '../api';
import { chartElement } from '../components/chart';
import { card, metric, notesBox } from '../components/common';
import { type ViewStore, renderTable } from '../components/table';
import type { CellValue, Column, DataTable } from '../datatable';
import { h, replaceChildren } from '../dom';
import { formatBytes, formatMicros, formatMillis } from '../format';
import type { PageContext } from '../page';
import { type ViewState, formatState } from '../state';

/** The compare view's tool name in the URL (not a registry tool: the shell handles it). */
export const COMPARE_TOOL = 'compare';
/** Every host of a run (the diff combines their OpStats as XProf does). */
export const ALL_HOSTS = 'ALL_HOSTS';
/** The diff route. */
export const DIFF_ROUTE = '/oxprof/api/diff';

// ---- the server's RunDiff (oxprof_diff::RunDiff, format 1) ------------------------------------

export interface Change {
  a: number;
  b: number;
  delta: number;
  relative: number | null;
  beyond_noise: boolean | null;
}

export interface TwoSampleTest {
  n_a: number;
  n_b: number;
  p_value: number;
  hedges_g: number | null;
}

export interface StepMetric {
  name: string;
  label: string;
  unit: 'ms' | 'percent' | string;
  change: Change;
  test: TwoSampleTest | null;
}

export interface OpChange {
  name: string;
  category: string;
  context: string;
  names: string[];
  time_us: Change;
  self_time_us: Change;
  count: Change;
  mean_us: Change;
  /** PyTorch operators only: device time of all it launched, and of its own launches. */
  device_time_us?: Change;
  device_self_time_us?: Change;
}

export type OpKind = 'framework_op' | 'kernel' | 'hlo_op';

export interface OpsDiff {
  kind: OpKind;
  basis: { kind: 'per_step'; steps_a: number; steps_b: number } | { kind: 'whole_profile' };
  total_self_time_us: Change;
  /** `pytorch_op_stats` when the framework ops are PyTorch operators. */
  tool?: string;
  total_device_self_time_us?: Change;
  matched: OpChange[];
  only_in_a: OpChange[];
  only_in_b: OpChange[];
  counts: { matched: number; only_in_a: number; only_in_b: number };
}

export interface SideInfo {
  source: { path: string; run: string; host: string; hosts: string[] };
  label: string;
  device_type: string;
  steps: number;
}

export interface AllocatorDiff {
  allocator: string;
  presence: 'both' | 'only_a' | 'only_b';
  peak_bytes: Change;
  lifetime_peak_bytes: Change;
  fragmentation: Change;
}

export interface RunDiff {
  oxprof_diff: number;
  a: SideInfo;
  b: SideInfo;
  /** `source`: `pytorch` for torch-tb-profiler's steps (absent: XProf's). */
  steps: { steps_a: number; steps_b: number; metrics: StepMetric[]; source?: 'pytorch' } | null;
  input: { share: StepMetric; classification_a: string; classification_b: string; statement_a: string; statement_b: string } | null;
  ops: OpsDiff[];
  memory: { allocators: AllocatorDiff[] } | null;
  notes: string[];
}

// ---- readable numbers ---------------------------------------------------------------------

/** A relative change as a signed percentage (`+12.3%`, `−4.56%`); `new` when A was 0. */
export function formatRelative(relative: number | null): string {
  if (relative === null) return 'new';
  if (!Number.isFinite(relative)) return String(relative);
  const pct = relative * 100;
  const digits = Math.abs(pct) >= 100 ? 0 : Math.abs(pct) >= 10 ? 1 : 2;
  const text = Math.abs(pct).toFixed(digits);
  if (Number(text) === 0) return '0%';
  return `${pct > 0 ? '+' : '−'}${text}%`;
}

/** A p-value people can read: two significant digits, `< 0.0001` below that. */
export function formatPValue(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return 'n/a';
  if (p < 1e-4) return '< 0.0001';
  return Number(p.toPrecision(2)).toString();
}

/** Hedges' g with two decimals; `∞` when both samples are constant and differ. */
export function formatEffect(g: number | null | undefined, hasTest: boolean): string {
  if (!hasTest) return 'n/a';
  if (g === null || g === undefined) return '∞';
  return (g > 0 ? '+' : g < 0 ? '−' : '') + Math.abs(g).toFixed(2);
}

/** The noise verdict: `beyond noise`, `within noise` or `no verdict` (too few steps). */
export function verdictText(beyond: boolean | null): string {
  return beyond === null ? 'no verdict' : beyond ? 'beyond noise' : 'within noise';
}

/** A signed value in a unit (`+1.2 ms`). */
function signed(value: number, format: (v: number) => string): string {
  if (value === 0) return '0';
  return `${value > 0 ? '+' : '−'}${format(Math.abs(value))}`;
}

/** What a step metric's values are. */
function metricFormat(unit: string): (v: number) => string {
  return unit === 'percent' ? (v) => `${v.toFixed(2)}%` : (v) => formatMillis(v);
}

// ---- tables ---------------------------------------------------------------------------------

const col = (id: string, label: string, type: 'string' | 'number' = 'number'): Column => ({ id, label, type });
const row = (values: CellValue[]) => ({ c: values.map((v) => ({ v })) });

/** The step metrics (and the input share) as a table: values, changes, test, verdict. */
export function stepsTable(diff: RunDiff): DataTable {
  const metrics = [...(diff.steps?.metrics ?? []), ...(diff.input ? [diff.input.share] : [])];
  return {
    cols: [
      col('metric', 'Metric', 'string'),
      col('unit', 'Unit', 'string'),
      col('a', 'A'),
      col('b', 'B'),
      col('delta', 'Change'),
      col('relative', 'Change (%)'),
      col('p_value', 'p-value'),
      col('hedges_g', "Hedges' g"),
      col('verdict', 'Noise', 'string'),
    ],
    rows: metrics.map((m) =>
      row([m.label, m.unit, m.change.a, m.change.b, m.change.delta, m.change.relative, m.test?.p_value ?? null, m.test?.hedges_g ?? null, verdictText(m.change.beyond_noise)]),
    ),
  };
}

/** Which list of an op kind a table shows. */
export type OpList = 'regressions' | 'improvements' | 'unchanged' | 'only_in_a' | 'only_in_b';

/** An op's change of its own time: self time, plus device self time for PyTorch operators. */
export function ownDelta(o: OpChange): number {
  return o.self_time_us.delta + (o.device_self_time_us?.delta ?? 0);
}

/** The ops of one list: regressions (own time up) and improvements (down), largest change first. */
export function opsOf(ops: OpsDiff, list: OpList): OpChange[] {
  switch (list) {
    case 'regressions':
      return ops.matched.filter((o) => ownDelta(o) > 0);
    case 'improvements':
      return ops.matched.filter((o) => ownDelta(o) < 0);
    case 'unchanged':
      return ops.matched.filter((o) => ownDelta(o) === 0);
    case 'only_in_a':
      return ops.only_in_a;
    case 'only_in_b':
      return ops.only_in_b;
  }
}

/** One list of ops as a table (times in µs, counts and means; device times of PyTorch operators). */
export function opsTable(ops: OpChange[]): DataTable {
  const table = xprofOpsTable(ops);
  if (!ops.some((o) => o.device_self_time_us)) return table;
  // PyTorch operators: device self and total times before the verdict and links.
  const zero: Change = { a: 0, b: 0, delta: 0, relative: 0, beyond_noise: null };
  const cols = table.cols ?? [];
  const rows = table.rows ?? [];
  const at = cols.length - 2;
  cols.splice(at, 0, col('device_self_a_us', 'Device self A (us)'), col('device_self_b_us', 'Device self B (us)'), col('device_self_delta_us', 'Device self change (us)'), col('device_a_us', 'Device time A (us)'), col('device_b_us', 'Device time B (us)'));
  table.rows = ops.map((o, i) => {
    const ds = o.device_self_time_us ?? zero;
    const dt = o.device_time_us ?? zero;
    const cells = (rows[i]?.c ?? []).slice();
    cells.splice(at, 0, ...row([ds.a, ds.b, ds.delta, dt.a, dt.b]).c);
    // Beyond noise in either host or device self time.
    if (ds.beyond_noise) cells[cells.length - 2] = { v: verdictText(true) };
    return { c: cells };
  });
  return table;
}

function xprofOpsTable(ops: OpChange[]): DataTable {
  return {
    cols: [
      col('name', 'Name', 'string'),
      col('category', 'Category', 'string'),
      col('context', 'Context', 'string'),
      col('self_a_us', 'Self time A (us)'),
      col('self_b_us', 'Self time B (us)'),
      col('self_delta_us', 'Self time change (us)'),
      col('self_relative', 'Self time change (%)'),
      col('time_a_us', 'Time A (us)'),
      col('time_b_us', 'Time B (us)'),
      col('count_a', 'Count A'),
      col('count_b', 'Count B'),
      col('mean_a_us', 'Mean A (us)'),
      col('mean_b_us', 'Mean B (us)'),
      col('verdict', 'Noise', 'string'),
      col('links', 'Open', 'string'),
    ],
    rows: ops.map((o) =>
      row([
        o.name,
        o.category,
        o.context,
        o.self_time_us.a,
        o.self_time_us.b,
        o.self_time_us.delta,
        o.self_time_us.relative,
        o.time_us.a,
        o.time_us.b,
        o.count.a,
        o.count.b,
        o.mean_us.a,
        o.mean_us.b,
        verdictText(o.self_time_us.beyond_noise),
        // What the links search for: the first original name (normalised names such as
        // `fusion.N` are nowhere in the runs' own tables).
        o.names[0] ?? o.name,
      ]),
    ),
  };
}

/** Allocators as a table. */
export function memoryTable(diff: RunDiff): DataTable {
  return {
    cols: [
      col('allocator', 'Allocator', 'string'),
      col('presence', 'In', 'string'),
      col('peak_a', 'Peak A (bytes)'),
      col('peak_b', 'Peak B (bytes)'),
      col('peak_delta', 'Peak change (bytes)'),
      col('peak_relative', 'Peak change (%)'),
      col('lifetime_a', 'Lifetime peak A (bytes)'),
      col('lifetime_b', 'Lifetime peak B (bytes)'),
      col('frag_a', 'Fragmentation A'),
      col('frag_b', 'Fragmentation B'),
      col('verdict', 'Noise (peak)', 'string'),
    ],
    rows: (diff.memory?.allocators ?? []).map((m) =>
      row([
        m.allocator,
        m.presence === 'both' ? 'both' : m.presence === 'only_a' ? 'A only' : 'B only',
        m.peak_bytes.a,
        m.peak_bytes.b,
        m.peak_bytes.delta,
        m.peak_bytes.relative,
        m.lifetime_peak_bytes.a,
        m.lifetime_peak_bytes.b,
        m.fragmentation.a,
        m.fragmentation.b,
        verdictText(m.peak_bytes.beyond_noise),
      ]),
    ),
  };
}

/** The tool, table filter key and host rule of each op kind's own page. */
const OP_PAGES: Record<OpKind, { tool: string; filterKey: string; title: string }> = {
  framework_op: { tool: 'framework_op_stats', filterKey: 'ops.q', title: 'Framework ops' },
  kernel: { tool: 'kernel_stats', filterKey: 'kernels.q', title: 'GPU kernels' },
  hlo_op: { tool: 'hlo_stats', filterKey: 'hlo.q', title: 'HLO ops' },
};

/** PyTorch operators open torch-tb-profiler's operator view, filtered by name. */
const PYTORCH_OPS_PAGE = { tool: 'pytorch_op_stats', filterKey: 'by_name.q', title: 'PyTorch operators' };

/** The host a side's per-host pages open: its host, or its only host, or every host. */
export function pageHost(side: SideInfo): string {
  const host = side.source.host;
  if (host && host !== ALL_HOSTS) return host;
  return side.source.hosts.length === 1 ? (side.source.hosts[0] ?? '') : ALL_HOSTS;
}

/** The trace viewer shows one host: the side's, or its first. */
function traceHost(side: SideInfo): string {
  const host = side.source.host;
  return host && host !== ALL_HOSTS ? host : (side.source.hosts[0] ?? '');
}

/** Links of one op to its table in both runs and to its search in both traces. */
export function opLinks(kind: OpKind, name: string, diff: RunDiff, tool?: string): { label: string; href: string }[] {
  const page = tool === 'pytorch_op_stats' ? PYTORCH_OPS_PAGE : OP_PAGES[kind];
  const links: { label: string; href: string }[] = [];
  for (const [letter, side] of [['A', diff.a], ['B', diff.b]] as const) {
    links.push({ label: letter, href: formatState({ run: side.source.run, tool: page.tool, host: pageHost(side), view: { [page.filterKey]: name } }) });
  }
  for (const [letter, side] of [['A', diff.a], ['B', diff.b]] as const) {
    links.push({ label: `trace ${letter}`, href: formatState({ run: side.source.run, tool: 'trace_viewer@', host: traceHost(side), view: { q: name } }) });
  }
  return links;
}

/** The side-by-side step-time breakdown: one stacked bar per run, one series per category. */
export function breakdownOption(diff: RunDiff): Record<string, unknown> | null {
  const categories = (diff.steps?.metrics ?? []).filter((m) => m.name !== 'step_time' && m.unit === 'ms' && (m.change.a > 0 || m.change.b > 0));
  if (!categories.length) return null;
  return {
    title: { text: 'Mean step time by category (ms)', left: 'center', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
    legend: { bottom: 0, type: 'scroll' },
    grid: { left: 80, right: 24, top: 36, bottom: 48 },
    xAxis: { type: 'value', name: 'ms' },
    yAxis: { type: 'category', data: ['B', 'A (baseline)'] },
    series: categories.map((m) => ({
      name: m.label,
      type: 'bar',
      stack: 'steps',
      data: [Number(m.change.b.toFixed(4)), Number(m.change.a.toFixed(4))],
    })),
  };
}

// ---- the page -------------------------------------------------------------------------------

/** What the compare page needs besides the shell's context. */
export interface CompareDeps {
  api: Api;
  /** The runs the server has (newest first). */
  runs: string[];
  /** Host selections of a run (`ALL_HOSTS` first when it has several hosts). */
  hostsOf(run: string): Promise<string[]>;
  /** The diff's JSON. */
  diff(params: Record<string, string>): Promise<unknown>;
  /** Opens another view (a new history entry). */
  navigate(state: ViewState): void;
}

/** The run to compare with when the URL names none: the next one in the list. */
export function defaultRunB(runs: string[], runA: string): string {
  const i = runs.indexOf(runA);
  return runs[i + 1] ?? runs.find((r) => r !== runA) ?? runA;
}

function diffParams(ctx: PageContext, runB: string, hostB: string, format?: string): Record<string, string> {
  const params: Record<string, string> = { run: ctx.state.run, run_b: runB };
  if (ctx.state.host) params.host = ctx.state.host;
  if (hostB) params.host_b = hostB;
  if (format) params.format = format;
  return params;
}

/** The compare page: pickers at once, the comparison when the server answers. */
export function comparePage(ctx: PageContext, deps: CompareDeps): HTMLElement {
  const page = h('div', { class: 'page compare', 'data-page': 'compare', 'data-state': 'loading' });
  const runB = ctx.view.get('run_b') || defaultRunB(deps.runs, ctx.state.run);
  const hostB = ctx.view.get('host_b');
  const runSelect = h('select', { 'data-role': 'run-b', 'aria-label': 'Run B' });
  for (const r of deps.runs) runSelect.append(h('option', { value: r, title: r }, r));
  runSelect.value = runB;
  const hostSelect = h('select', { 'data-role': 'host-b', 'aria-label': 'Host of run B' });
  const swap = h('button', { type: 'button', class: 'button', 'data-role': 'swap', title: 'Make B the baseline' }, '⇄ Swap A and B');
  const downloads = h('span', { class: 'compare-downloads' });
  const result = h('div', { 'data-role': 'compare-result' }, h('div', { class: 'loading', 'data-role': 'loading' }, h('span', { class: 'spinner' }), `Comparing ${runB} with ${ctx.state.run}…`));
  const go = (view: Record<string, string>, run = ctx.state.run, host = ctx.state.host) => deps.navigate({ run, tool: COMPARE_TOOL, host, view });
  runSelect.addEventListener('change', () => go({ run_b: runSelect.value }));
  hostSelect.addEventListener('change', () => go({ run_b: runB, host_b: hostSelect.value }));
  swap.addEventListener('click', () => go({ run_b: ctx.state.run, host_b: ctx.state.host }, runB, hostB));
  page.append(
    card(
      null,
      h(
        'div',
        { class: 'controls compare-pickers' },
        h('span', { class: 'selector' }, h('span', null, 'A (baseline)'), h('strong', { 'data-role': 'run-a', title: ctx.state.run }, ctx.state.run), ctx.state.host ? h('span', { class: 'muted' }, ` · ${ctx.state.host}`) : null),
        h('span', { 'aria-hidden': 'true' }, '→'),
        h('label', { class: 'selector' }, h('span', null, 'B'), runSelect),
        h('label', { class: 'selector' }, h('span', null, 'Host of B'), hostSelect),
        swap,
        h('div', { class: 'spacer' }),
        downloads,
      ),
      h('p', { class: 'description' }, 'Changes are B − A. Step metrics are tested step by step (Welch\'s t-test; no verdict with fewer than 5 steps a side); ops and memory by thresholds (5% and 0.1% of the total for ops, 1 MiB and 1% for peaks). Op times are per step when both runs have steps.'),
    ),
    result,
  );
  void (async () => {
    try {
      const hosts = await deps.hostsOf(runB);
      for (const x of hosts) hostSelect.append(h('option', { value: x }, x));
      // B's host: the URL's, else A's when B has it (rank 0 against rank 0), else B's first.
      const effectiveHostB = hostB && hosts.includes(hostB) ? hostB : hosts.includes(ctx.state.host) ? ctx.state.host : (hosts[0] ?? '');
      hostSelect.value = effectiveHostB;
      const params = diffParams(ctx, runB, effectiveHostB);
      const diff = (await deps.diff(params)) as RunDiff;
      replaceChildren(
        downloads,
        h('a', { class: 'button', href: buildUrl(DIFF_ROUTE, { ...params, format: 'csv' }), download: '', 'data-role': 'diff-csv' }, 'CSV'),
        h('a', { class: 'button', href: buildUrl(DIFF_ROUTE, { ...params, format: 'md' }), target: '_blank', 'data-role': 'diff-md' }, 'Markdown'),
      );
      replaceChildren(result, ...renderDiff(diff, ctx.view));
      page.dataset.state = 'ready';
    } catch (e) {
      replaceChildren(
        result,
        h('div', { class: 'error', 'data-role': 'error', role: 'alert' }, h('h2', null, 'Could not compare these runs'), h('p', { 'data-role': 'error-message' }, e instanceof Error ? e.message : String(e))),
      );
      page.dataset.state = 'error';
    }
  })();
  return page;
}

/** Links to a side's overview and trace. */
function sideLinks(letter: string, side: SideInfo): HTMLElement {
  const link = (tool: string, host: string, label: string) => h('a', { href: formatState({ run: side.source.run, tool, host, view: {} }), 'data-role': `open-${letter.toLowerCase()}-${tool}` }, label);
  return h(
    'span',
    { class: 'side-links' },
    h('strong', null, `${letter}: `),
    h('span', { title: side.label }, side.source.run),
    side.device_type ? h('span', { class: 'muted' }, ` (${side.device_type}, ${side.steps} steps)`) : null,
    ' · ',
    link('overview_page', pageHost(side), 'overview'),
    ' · ',
    link('trace_viewer@', traceHost(side), 'trace'),
  );
}

/** A changed value with its sign and the verdict's class. */
function changeCell(text: string, beyond: boolean | null, delta: number): HTMLElement {
  const direction = delta > 0 ? 'up' : delta < 0 ? 'down' : 'same';
  return h('span', { class: `change change-${direction}${beyond ? ' beyond' : ''}` }, text);
}

/** A verdict as a badge (`beyond noise` stands out). */
function verdictBadge(value: CellValue): HTMLElement {
  const text = String(value ?? '');
  return h('span', { class: `verdict verdict-${text.replace(/ /g, '-')}` }, text);
}

/** The sections of a comparison. */
export function renderDiff(diff: RunDiff, view: ViewStore): HTMLElement[] {
  const out: HTMLElement[] = [];
  const notes = notesBox(diff.notes);
  if (notes) out.push(notes);
  out.push(card(null, h('p', { class: 'compare-sides' }, sideLinks('A', diff.a), h('br'), sideLinks('B', diff.b))));

  // Steps.
  if (diff.steps) {
    const stepTime = diff.steps.metrics.find((m) => m.name === 'step_time');
    const headline = h('div', { class: 'metrics' });
    if (stepTime) {
      const c = stepTime.change;
      headline.append(
        metric('Step time A', formatMillis(c.a), 'step_time_a'),
        metric('Step time B', formatMillis(c.b), 'step_time_b'),
        metric('Change', `${formatRelative(c.relative)}`, 'step_time_change', `${signed(c.delta, formatMillis)} · ${verdictText(c.beyond_noise)} · p ${formatPValue(stepTime.test?.p_value)}`),
      );
    }
    if (diff.input) {
      const c = diff.input.share.change;
      headline.append(metric('Input share', `${c.a.toFixed(1)}% → ${c.b.toFixed(1)}%`, 'input_share', verdictText(c.beyond_noise)));
    }
    const option = breakdownOption(diff);
    out.push(
      card(
        `Steps (${diff.steps.steps_a} in A, ${diff.steps.steps_b} in B)`,
        headline,
        option ? chartElement('compare-breakdown', option, undefined, 220) : null,
      ),
    );
    out.push(
      renderTable(
        stepsTable(diff),
        {
          key: 'steps',
          title: 'Step time and its breakdown',
          csvName: 'compare_steps',
          filterColumns: ['metric'],
          filterPlaceholder: 'Filter by metric',
          renderCell: (id, value, r) => {
            const unit = String(r[1] ?? 'ms');
            if (typeof value !== 'number') return id === 'verdict' ? verdictBadge(value) : id === 'p_value' || id === 'hedges_g' ? 'n/a' : null;
            const fmt = metricFormat(unit);
            const beyond = r[8] === 'beyond noise' ? true : r[8] === 'within noise' ? false : null;
            switch (id) {
              case 'a':
              case 'b':
                return fmt(value);
              case 'delta':
                return changeCell(signed(value, fmt), beyond, value);
              case 'relative':
                return changeCell(formatRelative(value), beyond, Number(r[4] ?? 0));
              case 'p_value':
                return formatPValue(value);
              case 'hedges_g':
                return formatEffect(value, true);
              default:
                return null;
            }
          },
          hidden: ['unit'],
        },
        view,
      ),
    );
  }
  if (diff.input) {
    const i = diff.input;
    const pytorch = diff.steps?.source === 'pytorch';
    out.push(
      card(
        'Input pipeline',
        h(
          'dl',
          { class: 'properties', 'data-section': 'input' },
          h('dt', null, 'A'),
          h('dd', { 'data-role': 'input-a' }, inputText(i.share.change.a, i.classification_a, i.statement_a, pytorch)),
          h('dt', null, 'B'),
          h('dd', { 'data-role': 'input-b' }, inputText(i.share.change.b, i.classification_b, i.statement_b, pytorch)),
        ),
      ),
    );
  }

  // Ops.
  for (const ops of diff.ops) {
    const page = ops.tool === 'pytorch_op_stats' ? PYTORCH_OPS_PAGE : OP_PAGES[ops.kind];
    const t = ops.total_self_time_us;
    const d = ops.total_device_self_time_us;
    const basis = ops.basis.kind === 'per_step' ? `per step (A ${ops.basis.steps_a} steps, B ${ops.basis.steps_b})` : 'over each whole profile';
    const cut = ops.counts.matched > ops.matched.length || ops.counts.only_in_a > ops.only_in_a.length || ops.counts.only_in_b > ops.only_in_b.length;
    out.push(
      card(
        page.title,
        h(
          'p',
          { 'data-role': `${ops.kind}-summary` },
          `Total ${d ? 'host ' : ''}self time ${formatMicros(t.a)} → ${formatMicros(t.b)} (${formatRelative(t.relative)})${d ? `, device self time ${formatMicros(d.a)} → ${formatMicros(d.b)} (${formatRelative(d.relative)})` : ''}, ${basis}. `,
          `${ops.counts.matched} in both runs, ${ops.counts.only_in_a} only in A, ${ops.counts.only_in_b} only in B.`,
          cut ? ' Only the largest changes are listed (see the CSV for all).' : '',
        ),
      ),
    );
    const lists: [OpList, string][] = [
      ['regressions', 'Regressions (self time up in B), largest first'],
      ['improvements', 'Improvements (self time down in B), largest first'],
      ['only_in_a', 'Only in A'],
      ['only_in_b', 'Only in B'],
      ['unchanged', 'Unchanged'],
    ];
    for (const [list, title] of lists) {
      const rows = opsOf(ops, list);
      if (!rows.length && list === 'unchanged') continue;
      out.push(
        renderTable(
          opsTable(rows),
          {
            key: `${ops.kind}.${list}`,
            title: `${page.title}: ${title}`,
            csvName: `compare_${ops.kind}_${list}`,
            keyColumns: ['name', 'self_a_us', 'self_b_us', 'self_delta_us', 'self_relative', 'verdict'],
            filterColumns: ['name', 'category', 'context'],
            filterPlaceholder: 'Filter by name, category or context',
            emptyText: list.startsWith('only') ? `No ${page.title.toLowerCase()} only in ${list === 'only_in_a' ? 'A' : 'B'}.` : 'None.',
            formats: { count_a: 'plain', count_b: 'plain' },
            optional: ['time_a_us', 'time_b_us', 'mean_a_us', 'mean_b_us', 'context'],
            renderCell: (id, value, r) => {
              const beyond = r[13] === 'beyond noise' ? true : r[13] === 'within noise' ? false : null;
              if (id === 'self_delta_us' && typeof value === 'number') return changeCell(signed(value, formatMicros), beyond, value);
              if (id === 'self_relative') return changeCell(formatRelative(typeof value === 'number' ? value : null), beyond, Number(r[5] ?? 0));
              if (id === 'verdict') return verdictBadge(value);
              if (id === 'links') {
                const links = opLinks(ops.kind, String(value ?? ''), diff, ops.tool);
                return h('span', { class: 'op-links' }, links.flatMap((l, i) => [i ? ' ' : '', h('a', { href: l.href, 'data-link': l.label }, l.label)]));
              }
              return null;
            },
          },
          view,
        ),
      );
    }
  }

  // Memory.
  if (diff.memory) {
    out.push(
      renderTable(
        memoryTable(diff),
        {
          key: 'memory',
          title: 'Memory: peak per allocator, fragmentation at the peak',
          csvName: 'compare_memory',
          formats: { frag_a: 'fraction-percent', frag_b: 'fraction-percent' },
          renderCell: (id, value, r) => {
            const beyond = r[10] === 'beyond noise' ? true : r[10] === 'within noise' ? false : null;
            if (id === 'peak_delta' && typeof value === 'number') return changeCell(signed(value, formatBytes), beyond, value);
            if (id === 'peak_relative') return changeCell(formatRelative(typeof value === 'number' ? value : null), beyond, Number(r[4] ?? 0));
            if (id === 'verdict') return verdictBadge(value);
            return null;
          },
        },
        view,
      ),
    );
  }
  return out;
}

/** One side's input share: XProf's classification and statement, or PyTorch's DataLoader share. */
function inputText(percent: number, classification: string, statement: string, pytorch: boolean): string {
  if (pytorch) return `${percent.toFixed(1)}% of step time in the DataLoader (torch-tb-profiler's DataLoader category).`;
  return `${percent.toFixed(1)}% of step time waiting for input (${classification}). ${statement}`;
}
