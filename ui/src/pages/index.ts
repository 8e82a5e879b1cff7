// Which page shows which tool; tools without a dedicated page get the generic one.

import { pageIdOf, type Page } from '../page';
import { megascaleStatsPage, perfCountersPage, smartSuggestionPage, utilizationViewerPage } from './counters';
import { frameworkOpStatsPage } from './framework_op_stats';
import { genericPage, noDataPage, rawDataPage } from './generic';
import { graphViewerPage } from './graph_viewer';
import { hloStatsPage } from './hlo_stats';
import { htaDistributedPage, htaGpuIdlePage } from './hta';
import { inferenceProfilePage } from './inference_profile';
import { inputPipelinePage } from './input_pipeline';
import { kernelStatsPage } from './kernel_stats';
import { memoryProfilePage } from './memory_profile';
import { memoryViewerPage } from './memory_viewer';
import { opProfilePage } from './op_profile';
import { overviewPage } from './overview';
import { podViewerPage } from './pod_viewer';
import { pytorchMemoryPage, pytorchModulesPage, pytorchOpStatsPage, pytorchOverviewPage } from './pytorch';
import { QUERY_TOOL, queryPage } from './query';
import { rooflinePage } from './roofline';
import { tfDataPage } from './tf_data';
import { traceViewerPage } from './trace_viewer';

/** Pages by the registry's `page` id (XProf's legacy tool names kept for old links). */
const PAGES: Record<string, Page> = {
  overview_page: overviewPage,
  input_pipeline_analyzer: inputPipelinePage,
  input_pipeline: inputPipelinePage,
  framework_op_stats: frameworkOpStatsPage,
  tensorflow_stats: frameworkOpStatsPage,
  kernel_stats: kernelStatsPage,
  pod_viewer: podViewerPage,
  op_profile: opProfilePage,
  hlo_op_profile: opProfilePage,
  hlo_stats: hloStatsPage,
  hlo_op_stats: hloStatsPage,
  roofline_model: rooflinePage,
  memory_profile: memoryProfilePage,
  tf_data_bottleneck_analysis: tfDataPage,
  pytorch_overview: pytorchOverviewPage,
  pytorch_op_stats: pytorchOpStatsPage,
  pytorch_memory: pytorchMemoryPage,
  pytorch_modules: pytorchModulesPage,
  // Before the registry's rows are learned (tests that open a page directly).
  pytorch_kernel_stats: kernelStatsPage,
  hta_distributed: htaDistributedPage,
  hta_gpu_idle: htaGpuIdlePage,
  perf_counters: perfCountersPage,
  utilization_viewer: utilizationViewerPage,
  megascale_stats: megascaleStatsPage,
  smart_suggestion: smartSuggestionPage,
  inference_profile: inferenceProfilePage,
};

/** Pages that load their own data (no `/data` request by the shell). */
const SELF_LOADING: Record<string, Page> = {
  trace_viewer: traceViewerPage,
  'trace_viewer@': traceViewerPage,
  graph_viewer: graphViewerPage,
  memory_viewer: memoryViewerPage,
  [QUERY_TOOL]: queryPage,
  // Tools answering a binary body (the registry's `raw` page): a link that downloads it.
  raw: rawDataPage,
};

/** Tools whose data is not a table or summary (trace events, graphs): the shell does not fetch `/data` (the trace viewer reads oxprof's trace API; the others link to the raw data). */
const NO_DATA_TOOLS = new Set(['trace_viewer', 'trace_viewer@', 'graph_viewer', 'memory_viewer', QUERY_TOOL]);

export function toolNeedsNoData(tool: string): boolean {
  return NO_DATA_TOOLS.has(tool) || Object.hasOwn(SELF_LOADING, pageIdOf(tool));
}

/** The page of `tool`, by the registry's `page` column (legacy names and the query page by their own). */
export function pageFor(tool: string): Page {
  const id = pageIdOf(tool);
  if (SELF_LOADING[id]) return SELF_LOADING[id];
  if (NO_DATA_TOOLS.has(tool)) return noDataPage;
  return PAGES[id] ?? genericPage;
}
