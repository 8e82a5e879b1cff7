// Small shared page pieces: cards, notes/diagnostics boxes, safe rendering of the few
// HTML anchors XProf puts in its recommendation strings, tool-name links.

import { type DataTable, cellValue, columnIndex } from '../datatable';
import { h } from '../dom';

export function card(title: string | null, ...children: (Node | string | null | false)[]): HTMLElement {
  return h('section', { class: 'card' }, title ? h('h2', null, title) : null, ...children);
}

/** oxprof's own notes (why no steps were found, what was skipped...), `code` spans shown as code and tool names as links. */
export function notesBox(notes: string[], link?: (tool: string) => string): HTMLElement | null {
  if (!notes.length) return null;
  return h(
    'aside',
    { class: 'notes', 'data-role': 'notes', role: 'note' },
    h('strong', null, notes.length === 1 ? 'Note from oxprof' : 'Notes from oxprof'),
    h('ul', null, notes.map((n) => h('li', null, inlineText(n, link)))),
  );
}

/**
 * Text with Markdown's inline code (`` `x` ``) as `<code>` (never the backticks) and tool
 * names as links to those tools (in code spans too).
 */
export function inlineText(text: string, link?: (tool: string) => string): Node[] {
  const nodes: Node[] = [];
  const parts = text.split('`');
  // An odd number of backticks: the last one is literal.
  const paired = parts.length % 2 === 1 ? parts : [...parts.slice(0, -2), `${parts[parts.length - 2] ?? ''}\`${parts[parts.length - 1] ?? ''}`];
  paired.forEach((part, i) => {
    if (i % 2 === 0) nodes.push(...toolLinks(part, link));
    else if (link && TOOL_NAME.test(part)) nodes.push(h('code', null, ...toolLinks(part, link)));
    else nodes.push(h('code', null, part));
  });
  return nodes;
}

/** XProf's diagnostics that say a profile has no steps (oxprof's note says it once, with the fix). */
export const NO_STEP_DIAGNOSTIC = /no step marker observed/i;

/** The diagnostics table (`severity`, `message`) as warning/error boxes, without the messages `skip` matches. */
export function diagnosticsBox(table: DataTable | null, skip?: RegExp): HTMLElement | null {
  if (!table?.rows?.length) return null;
  const sev = columnIndex(table, 'severity');
  const msg = columnIndex(table, 'message');
  const items = table.rows
    .map((r) => ({
      severity: String(cellValue(r, sev) ?? 'INFO'),
      message: String(cellValue(r, msg) ?? ''),
    }))
    .filter((d) => !skip || !skip.test(d.message));
  if (!items.length) return null;
  return h(
    'aside',
    { class: 'diagnostics', 'data-role': 'diagnostics' },
    items.map((d) =>
      h('p', { class: `diag diag-${d.severity.toLowerCase()}` }, h('strong', null, `${d.severity}: `), d.message),
    ),
  );
}

/** XProf's diagnostics object (`{info, warnings, errors}`) as boxes, without the messages `skip` matches. */
export function diagnosticsObjectBox(diag: unknown, skip?: RegExp): HTMLElement | null {
  if (!diag || typeof diag !== 'object') return null;
  const d = diag as Record<string, unknown>;
  const list = (key: string, severity: string) =>
    (Array.isArray(d[key]) ? (d[key] as unknown[]) : []).map((m) => ({ severity, message: String(m) }));
  const items = [...list('errors', 'ERROR'), ...list('warnings', 'WARNING'), ...list('info', 'INFO')].filter((i) => !skip || !skip.test(i.message));
  if (!items.length) return null;
  return h(
    'aside',
    { class: 'diagnostics', 'data-role': 'diagnostics' },
    items.map((i) => h('p', { class: `diag diag-${i.severity.toLowerCase()}` }, h('strong', null, `${i.severity}: `), i.message)),
  );
}

const ANCHOR = /<a\s+[^>]*href\s*=\s*"([^"]*)"[^>]*>(.*?)<\/a>/gi;

/**
 * Text that may hold `<a href="...">label</a>` anchors (XProf's recommendations) as DOM
 * nodes: anchors with http(s) targets become links opening a new tab; any other markup
 * is shown as text, never interpreted.
 */
export function richText(text: string, link?: (tool: string) => string): Node[] {
  const nodes: Node[] = [];
  let last = 0;
  for (const m of text.matchAll(ANCHOR)) {
    const index = m.index ?? 0;
    if (index > last) nodes.push(...toolLinks(text.slice(last, index), link));
    const href = m[1] ?? '';
    const label = (m[2] ?? '').replace(/<[^>]*>/g, '');
    if (/^https?:\/\//i.test(href)) {
      nodes.push(h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, label));
    } else {
      nodes.push(document.createTextNode(label));
    }
    last = index + m[0].length;
  }
  if (last < text.length) nodes.push(...toolLinks(text.slice(last), link));
  return nodes;
}

/**
 * Tool names XProf's own texts mention (recommendations, notes): the vocabulary of XProf's
 * strings, recognised to link them, not the list of tools (that is the server's registry).
 */
const XPROF_TEXT_TOOL_NAMES = [
  'overview_page', 'input_pipeline_analyzer', 'input_pipeline', 'framework_op_stats', 'tensorflow_stats',
  'kernel_stats', 'pod_viewer', 'trace_viewer', 'trace_viewer@', 'op_profile', 'hlo_op_profile', 'hlo_stats',
  'hlo_op_stats', 'roofline_model', 'memory_profile', 'memory_viewer', 'graph_viewer',
  'tf_data_bottleneck_analysis', 'perf_counters', 'inference_profile', 'megascale_stats', 'utilization_viewer',
  // oxprof's own tools, which its notes name.
  'pytorch_overview', 'pytorch_op_stats', 'pytorch_kernel_stats', 'pytorch_memory', 'pytorch_modules', 'hta_distributed', 'hta_gpu_idle',
  'smart_suggestion', 'trace_viewer',
];
const TOOL_NAME = new RegExp(`^(${XPROF_TEXT_TOOL_NAMES.map((n) => n.replace(/[@^]/g, '\\$&')).join('|')})$`);

/** Plain text with XProf tool names (e.g. `input_pipeline_analyzer`) turned into links to those tools. */
export function toolLinks(text: string, link?: (tool: string) => string): Node[] {
  if (!link) return [document.createTextNode(text)];
  const names = [...XPROF_TEXT_TOOL_NAMES].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(`\\b(${names.map((n) => n.replace(/[@^]/g, '\\$&')).join('|')})\\b`, 'g');
  const nodes: Node[] = [];
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    const index = m.index ?? 0;
    if (index > last) nodes.push(document.createTextNode(text.slice(last, index)));
    const tool = m[1] ?? '';
    nodes.push(h('a', { href: link(tool), class: 'tool-link', 'data-tool': tool }, tool));
    last = index + m[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/** A big metric: title, value (with its spread), optional sub-lines. */
export function metric(title: string, value: string, key: string, detail?: string): HTMLElement {
  return h(
    'div',
    { class: 'metric', 'data-metric': key },
    h('div', { class: 'metric-title' }, title),
    h('div', { class: 'metric-value', 'data-role': 'value' }, value),
    detail ? h('div', { class: 'metric-detail' }, detail) : null,
  );
}
