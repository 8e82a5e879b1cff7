// What a page gets: the loaded data, the URL state and a store for its view keys.

import type { Api } from './api';
import type { ViewStore } from './components/table';
import type { ViewState } from './state';

export interface PageContext {
  api: Api;
  state: ViewState;
  /** The tool's `/data` body, parsed. */
  data: unknown;
  /** View keys kept in the URL (sort, filter, idle, step...). */
  view: ViewStore;
  /** `href` of another tool for the same run and host. */
  link(tool: string): string;
  /** The server's CSV of this tool (`/data_csv`). */
  csvUrl: string;
}

export type Page = (ctx: PageContext) => HTMLElement;

/** Human names of XProf's tools. */
export const TOOL_NAMES: Record<string, string> = {
  overview_page: 'Overview',
  input_pipeline_analyzer: 'Input pipeline analyzer',
  input_pipeline: 'Input pipeline analyzer',
  framework_op_stats: 'Framework op stats',
  tensorflow_stats: 'Framework op stats',
  kernel_stats: 'GPU kernel stats',
  pod_viewer: 'Pod viewer',
  trace_viewer: 'Trace viewer',
  'trace_viewer@': 'Trace viewer',
  op_profile: 'Op profile',
  hlo_op_profile: 'Op profile',
  hlo_stats: 'HLO op stats',
  hlo_op_stats: 'HLO op stats',
  roofline_model: 'Roofline model',
  memory_profile: 'Memory profile',
  memory_viewer: 'Memory viewer',
  graph_viewer: 'Graph viewer',
  tf_data_bottleneck_analysis: 'tf.data bottleneck analysis',
  perf_counters: 'Perf counters',
  inference_profile: 'Inference profile',
  megascale_stats: 'Megascale stats',
  utilization_viewer: 'Utilization viewer',
};

export function toolName(tool: string): string {
  return TOOL_NAMES[tool] ?? tool;
}
