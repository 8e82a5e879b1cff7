// Shared pieces of the XLA pages (op profile, HLO stats, roofline, graph viewer): XProf's
// utilisation maths and colours (frontend/app/common/utils/utils.ts), number formats, the
// `source_info` cells XProf sends as HTML, and links to the graph viewer. Pure functions.

import { buildUrl, getText, PROFILE_PREFIX } from '../api';
import { runQuery } from '../sql';
import { formatState } from '../state';
import { h, replaceChildren } from '../dom';

/** Memory kinds of `bandwidthUtils` / `rawBytesAccessedArray` (XProf's MemBwType). */
export const MEM_HBM = 0;
export const MEM_SRAM_RD = 1;
export const MEM_SRAM_WR = 2;
export const MEM_NAMES = ['HBM', 'On-chip read', 'On-chip write'];

/** The metrics of an op profile node (op_profile.proto `Metrics`, proto JSON names). */
export interface OpMetrics {
  flops?: number;
  uncappedFlops?: number;
  bf16Flops?: number;
  rawFlops?: number;
  rawTime?: number;
  avgTimePs?: number;
  normalizedTimePs?: number;
  occurrences?: number;
  bandwidthUtils?: number[];
  rawBytesAccessedArray?: number[];
}

export interface LayoutDimension {
  size?: number;
  alignment?: number;
  semantics?: string;
}

export interface XlaInstruction {
  op?: string;
  expression?: string;
  provenance?: string;
  category?: string;
  layout?: { dimensions?: LayoutDimension[] };
  computationPrimitiveSize?: number;
  fingerprint?: string;
  programId?: string;
  sourceInfo?: { fileName?: string; lineNumber?: number; stackFrame?: string };
  xprofKernelMetadata?: string;
}

/** An op profile tree node (op_profile.proto `Node`). */
export interface OpNode {
  name?: string;
  metrics?: OpMetrics;
  children?: OpNode[];
  numChildren?: number;
  category?: Record<string, unknown>;
  xla?: XlaInstruction;
}

/** Fraction of the root's time spent in `node` (0 when unknown). */
export function timeFraction(node: OpNode | undefined, root: OpNode | undefined): number {
  const t = node?.metrics?.rawTime;
  const r = root?.metrics?.rawTime;
  if (!t || !r) return 0;
  return t / r;
}

/**
 * FLOPS utilisation of `node` as XProf's op table shows it: the uncapped FLOPS (a fraction
 * of the peak, weighted by the node's share of the root's time) divided by that share. NaN
 * when the node has no time (fused ops: not measurable inside a fusion).
 */
export function flopsUtilization(node: OpNode | undefined, root: OpNode | undefined): number {
  const fraction = timeFraction(node, root);
  if (!node?.metrics || !fraction) return NaN;
  return (node.metrics.uncappedFlops || 0) / fraction;
}

/** Memory bandwidth utilisation of `kind` (NaN when absent or zero, as XProf). */
export function memoryBandwidthUtilization(node: OpNode | undefined, kind: number): number {
  const v = node?.metrics?.bandwidthUtils?.[kind];
  return v ? v : NaN;
}

/** Time fraction × (1 − max(FLOPS utilisation, HBM utilisation)): XProf's "wasted time". */
export function timeWasted(node: OpNode | undefined, root: OpNode | undefined): number {
  if (!node?.metrics) return NaN;
  return (timeFraction(node, root) || 0) * (1 - Math.max(flopsUtilization(node, root), memoryBandwidthUtilization(node, MEM_HBM)));
}

/** Share of the root's HBM bytes accessed by `node` (NaN when the root has none). */
export function hbmFraction(node: OpNode | undefined, root: OpNode | undefined): number {
  const n = node?.metrics?.rawBytesAccessedArray?.[MEM_HBM];
  const r = root?.metrics?.rawBytesAccessedArray?.[MEM_HBM];
  if (n === undefined || !r) return NaN;
  return n / r;
}

/** FLOP/s of a node (raw FLOPs over its time in ps). */
export function flopsRate(node: OpNode | undefined): number {
  const t = node?.metrics?.rawTime;
  if (!t) return NaN;
  return ((node?.metrics?.rawFlops || 0) * 1e12) / t;
}

/** bf16-normalised FLOP/s of a node. */
export function bf16FlopsRate(node: OpNode | undefined): number {
  const t = node?.metrics?.rawTime;
  if (!t) return NaN;
  return ((node?.metrics?.bf16Flops || 0) * 1e12) / t;
}

/** Bytes/s of memory `kind` of a node. */
export function memoryBandwidth(node: OpNode | undefined, kind: number): number {
  const t = node?.metrics?.rawTime;
  const bytes = node?.metrics?.rawBytesAccessedArray;
  if (!t || !bytes) return NaN;
  return ((bytes[kind] || 0) * 1e12) / t;
}

/** A fraction as XProf prints it: `12.34%`, `0.0%` below 0.001%, `-` (or `fallback`) for NaN. */
export function percent(fraction: number, fallback = '-'): string {
  if (Number.isNaN(fraction)) return fallback;
  if (fraction < 0.00001) return '0.0%';
  return `${(fraction * 100).toFixed(2)}%`;
}

/**
 * XProf's flame colour: `fraction` in [0, 1] through `curve`, red (0) → yellow (0.5) →
 * green (1) at `brightness`; NaN is grey-white.
 */
export function flameColor(fraction: number, brightness = 1, opacity = 1, curve: (x: number) => number = (x) => 1 - Math.sqrt(1 - x)): string {
  const rgba = (r: number, g: number, b: number) =>
    `rgba(${Math.round(r * 255)},${Math.round(g * 255)},${Math.round(b * 255)},${opacity})`;
  if (Number.isNaN(fraction)) return rgba(brightness, brightness, brightness);
  const f = curve(fraction);
  return f < 0.5 ? rgba(brightness, 2 * f * brightness, 0) : rgba(2 * (1 - f) * brightness, brightness, 0);
}

/** Colour of a FLOPS utilisation: red when low, green when high (capped at 100%). */
export function flopsColor(fraction: number): string {
  return flameColor(Math.min(fraction, 1), 0.7, 1, Math.sqrt);
}

/**
 * Colour of a memory bandwidth utilisation: the same scale as FLOPS (red when low, green
 * when high). XProf inverts it (high use red), which read as "bad" next to green FLOPS
 * bars for the same good use of the hardware; the op profile explains the scale.
 */
export function bwColor(fraction: number): string {
  return flameColor(Math.min(Math.max(fraction, 0), 1), 0.7, 1, Math.sqrt);
}

/** The legend of the utilisation colours (FLOPS and bandwidth bars share it). */
export function utilizationLegend(): HTMLElement {
  const stops = [0, 0.25, 0.5, 0.75, 1].map((f) => `${flopsColor(f)} ${f * 100}%`).join(', ');
  return h(
    'div',
    { class: 'util-legend', 'data-role': 'util-legend' },
    h('span', null, 'Utilization of the device’s peak (FLOPS and memory bandwidth alike): '),
    h('span', { class: 'util-legend-scale' }, h('span', null, '0% low'), h('span', { class: 'util-legend-bar', style: `background:linear-gradient(to right, ${stops})`, 'aria-hidden': 'true' }), h('span', null, '100% high')),
    h('span', null, ' — an op is efficient when either bar is green (compute-bound: FLOPS; memory-bound: bandwidth).'),
  );
}

/** The framework op type of a provenance (`a/b/Einsum_1:Einsum` → `Einsum`), `-` when none. */
export function parseFrameworkOpType(provenance?: string): string {
  if (!provenance) return '-';
  let type = provenance.replace(/^.*:/, '').replace(/^.*\//, '');
  if (!type) type = (provenance.split(':')[0] || '').replace(/^.*\//, '');
  return type || '-';
}

/** `num` with SI prefixes and `dp` decimals (`1.23 GFLOP/s`), as XProf's humanReadableText({si: true}). */
export function siText(num: number, suffix: string, dp = 2): string {
  const units = ['', 'K', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
  if (!Number.isFinite(num)) return '-';
  const i = num <= 0 ? 0 : Math.min(units.length - 1, Math.max(0, Math.floor(Math.log(num) / Math.log(1000))));
  const n = num > 0 && num < 1 ? num.toExponential(dp) : (num / Math.pow(1000, i)).toFixed(dp);
  return `${n} ${units[i]}${suffix}`;
}

/** A duration in picoseconds with a readable unit. */
export function formatPs(ps: number): string {
  if (!Number.isFinite(ps)) return '-';
  const abs = Math.abs(ps);
  if (abs >= 1e12) return `${(ps / 1e12).toFixed(3)} s`;
  if (abs >= 1e9) return `${(ps / 1e9).toFixed(3)} ms`;
  if (abs >= 1e6) return `${(ps / 1e6).toFixed(3)} µs`;
  if (abs >= 1e3) return `${(ps / 1e3).toFixed(3)} ns`;
  return `${ps} ps`;
}

/** A horizontal utilisation bar (`data-util` holds the raw fraction). */
export function utilBar(fraction: number, color: string, role: string): HTMLElement {
  const text = percent(fraction);
  const bar = h('span', { class: 'util-bar', 'data-role': role, 'data-util': Number.isNaN(fraction) ? '' : String(fraction), title: text });
  const fill = h('span', { class: 'util-fill' });
  fill.style.width = Number.isNaN(fraction) ? '0' : `${Math.max(0, Math.min(1, fraction)) * 100}%`;
  fill.style.background = color;
  bar.append(fill, h('span', { class: 'util-text' }, text));
  return bar;
}

/** The parts of XProf's `source_info` cell (`<div class='source-info-cell' title='STACK'>file:line</div>`). */
export function parseSourceInfo(html: string): { text: string; stack: string } {
  if (!html) return { text: '', stack: '' };
  const m = /^<div[^>]*?title='([^']*)'[^>]*>([\s\S]*)<\/div>$/.exec(html.trim());
  const unescape = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
  if (m) return { text: unescape((m[2] ?? '').replace(/<[^>]*>/g, '')), stack: unescape(m[1] ?? '') };
  return { text: unescape(html.replace(/<[^>]*>/g, '')), stack: '' };
}

/** A source-info cell as text with the stack as its tooltip (never interpreted as HTML). */
export function sourceInfoNode(html: string): Node {
  const { text, stack } = parseSourceInfo(html);
  return h('span', { class: 'source-info', title: stack || null }, text);
}

/** The instruction name of an HLO expression (`%name = ...` or `name = ...`). */
export function instructionName(expression: string | undefined): string {
  const m = /^\s*(?:ROOT\s+)?%?([^\s=]+)\s*=/.exec(expression ?? '');
  return m?.[1] ?? '';
}

/**
 * A graph viewer deep link (same run and host) centred on `node`, in the module named
 * `module` (e.g. `jit_f(12)`) or, when the module is not known, the one of `programId`.
 */
export function graphViewerHref(run: string, host: string, node: string, where: { module?: string; programId?: string }): string {
  const view: Record<string, string> = { node_name: node };
  if (where.module) view.module_name = where.module;
  else if (where.programId) view.program_id = where.programId;
  return formatState({ run, tool: 'graph_viewer', host, view }) || '?';
}

/** The run's HLO modules (`/module_list`; empty for runs without HLO). */
export async function fetchModuleList(run: string): Promise<string[]> {
  const text = await getText(buildUrl(`${PROFILE_PREFIX}/module_list`, { run }));
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s && s !== 'NO_MODULE');
}

/** A module's device time: its node in op profile's by-program tree (`name(program_id)`). */
interface ProgramNode {
  name?: string;
  metrics?: { rawTime?: number | string };
  children?: ProgramNode[];
}

/**
 * The modules, costliest first: by their device time in op profile (the by-program tree
 * names each program as the module list does); when op profile holds no device time (a CPU
 * run: XLA's ops run on host threads), by the time of the trace's XLA op slices of each
 * program (`traceTime`, keyed like the module list). Modules with no time keep their order
 * after the others; the order as given when neither is available.
 */
export async function costliestFirst(modules: readonly string[], opProfile: () => Promise<unknown>, traceTime?: () => Promise<Map<string, number>>): Promise<string[]> {
  let time = new Map<string, number>();
  try {
    const p = (await opProfile()) as { byProgramExcludeIdle?: ProgramNode; byProgram?: ProgramNode } | null;
    const root = p?.byProgramExcludeIdle ?? p?.byProgram;
    time = new Map((root?.children ?? []).map((c) => [c.name ?? '', Number(c.metrics?.rawTime ?? 0)]));
  } catch {
    // No op profile: maybe the trace.
  }
  if (traceTime && !modules.some((m) => (time.get(m) ?? 0) > 0)) time = await traceTime().catch(() => new Map<string, number>());
  return modules
    .map((m, i) => ({ m, i, t: time.get(m) ?? -1 }))
    .sort((a, b) => b.t - a.t || a.i - b.i)
    .map((x) => x.m);
}

/**
 * The statement summing the time of the trace's XLA op slices per program: the slices that
 * carry `hlo_module` and `program_id` arguments (XLA's ops on a CPU run's host threads, a
 * GPU's or TPU's op lines), keyed `module(program_id)` as the module list names programs.
 */
export const PROGRAM_TIME_SQL = `SELECT m.string_value || '(' || COALESCE(CAST(p.int_value AS VARCHAR), p.string_value) || ')' AS module, SUM(s.dur_ps) AS ps
FROM slice s
JOIN args m ON m.arg_set_id = s.arg_set_id AND m.host = s.host AND m.key = 'hlo_module'
JOIN args p ON p.arg_set_id = s.arg_set_id AND p.host = s.host AND p.key = 'program_id'
GROUP BY 1`;

/** Time per program from PROGRAM_TIME_SQL's rows (`[module, ps]`). */
export function programTimes(rows: readonly unknown[][]): Map<string, number> {
  return new Map(rows.filter((r) => typeof r[0] === 'string').map((r) => [r[0] as string, Number(r[1] ?? 0)]));
}

/**
 * Time per program from the run's trace (PROGRAM_TIME_SQL); none after `timeoutMs` (a large
 * trace's first query builds its SQL tables: the page opens on the listed order instead).
 */
export function traceProgramTimes(run: string, timeoutMs = 5000): Promise<Map<string, number>> {
  const times = runQuery(run, PROGRAM_TIME_SQL).then((a) => programTimes(a.rows));
  const late = new Promise<Map<string, number>>((resolve) => setTimeout(() => resolve(new Map()), timeoutMs));
  return Promise.race([times, late]);
}

/** The module of `programId` in a module list (`name(program_id)` entries). */
export function moduleForProgram(modules: string[], programId: string): string {
  if (!programId) return '';
  return modules.find((m) => m.endsWith(`(${programId})`)) ?? '';
}

/**
 * Fills an HLO module selector and picks the module to show: the one the URL names, else
 * the one running `programId`, else the first (lists come costliest first: see
 * costliestFirst); a named module the run does not list is
 * still offered. Returns the chosen module ('' when there is none).
 */
export function fillModuleSelect(select: HTMLSelectElement, modules: string[], wanted: string, programId: string): string {
  let module = wanted;
  if (!module && programId) module = moduleForProgram(modules, programId);
  if (!module) module = modules[0] ?? '';
  const options = modules.map((m) => h('option', { value: m }, m));
  if (module && !modules.includes(module)) options.unshift(h('option', { value: module }, `${module} (not listed)`));
  replaceChildren(select, options.length ? options : [h('option', { value: '' }, 'No HLO modules')]);
  select.value = module;
  select.disabled = !modules.length;
  return module;
}
