// Which tools a run offers, how the Tools menu lists them and which page a run opens on:
// a PyTorch trace's own tools before XProf's TensorFlow/JAX ones (which say why they have
// little to show on it), XProf's legacy tool names mapped to the ones offered.

import { h } from './dom';
import { toolName } from './page';

/**
 * The page a run opens on when the URL names none: the one that fits its kind — a PyTorch
 * trace's PyTorch overview (XProf's overview of it is mostly empty), else the first tool
 * the server offers (XProf's order: the overview).
 */
export function defaultTool(offered: readonly string[]): string {
  if (offered.includes('pytorch_overview')) return 'pytorch_overview';
  return offered[0] ?? '';
}

/**
 * The tool the run offers for `tool`: XProf's links and older URLs name the legacy
 * `trace_viewer`, which opens the same page as the `trace_viewer@` the Tools menu lists.
 */
export function offeredAlias(tool: string, offered: string[]): string {
  if (tool === 'trace_viewer' && !offered.includes(tool) && offered.includes('trace_viewer@')) return 'trace_viewer@';
  return tool;
}

/**
 * XProf's tools made for TensorFlow and JAX (XLA programs, TF allocators, TF step markers):
 * on a PyTorch trace they have little or nothing to show (the PyTorch tools do).
 */
const XLA_TOOLS = new Set([
  'overview_page', 'op_profile', 'input_pipeline_analyzer', 'memory_profile', 'memory_viewer', 'roofline_model', 'pod_viewer',
  'framework_op_stats', 'hlo_stats', 'inference_profile', 'smart_suggestion', 'tf_data_bottleneck_analysis', 'graph_viewer',
]);

/** Whether a run is a PyTorch trace (the server offers the PyTorch tools for those only). */
export function isPytorchRun(offered: readonly string[]): boolean {
  return offered.includes('pytorch_overview');
}

/**
 * The Tools menu of a PyTorch run in groups: its own tools and the timeline first, XProf's
 * TensorFlow/JAX tools after them, named so (null: one flat list, other runs).
 */
export function toolGroups(offered: readonly string[]): [string, string[]][] | null {
  if (!isPytorchRun(offered)) return null;
  const xla = offered.filter((t) => XLA_TOOLS.has(t));
  return [
    ['PyTorch', offered.filter((t) => !XLA_TOOLS.has(t))],
    ['XProf (TensorFlow and JAX: little to show on PyTorch traces)', xla],
  ];
}

/** On a PyTorch run, a note atop XProf's TensorFlow/JAX pages saying why they are (nearly) empty and where to look. */
export function pytorchToolNote(offered: readonly string[], tool: string, link: (t: string) => string): HTMLElement | null {
  if (!isPytorchRun(offered) || !XLA_TOOLS.has(tool)) return null;
  return h(
    'aside',
    { class: 'notes', 'data-role': 'pytorch-tool-note', role: 'note' },
    h('strong', null, 'A PyTorch trace'),
    h(
      'p',
      null,
      `${toolName(tool)} is XProf's view of TensorFlow and JAX runs (XLA programs, TensorFlow step markers and allocators), which a PyTorch trace does not have: it shows little here. See `,
      h('a', { href: link('pytorch_overview'), class: 'tool-link' }, 'the PyTorch overview'),
      ', ',
      h('a', { href: link('pytorch_op_stats'), class: 'tool-link' }, 'operators'),
      ', ',
      h('a', { href: link('pytorch_kernel_stats'), class: 'tool-link' }, 'kernels'),
      ' and the trace viewer.',
    ),
  );
}

