#!/usr/bin/env node
// Takes the screenshots of docs/ui/ (the trace viewer, an area selection, a table row opened
// in the timeline, an SQL result as a timeline track, and every tool's page under tools/)
// from the bundled demo, in Debian's chromium at 1440×900 (the e2e harness's flags):
//
//   OXPROF_BIN=target/release/oxprof node scripts/dev/ui-screenshots.mjs [OUT_DIR]
//
// OUT_DIR defaults to docs/ui. OXPROF_UI_DIR=dir serves a UI build from dir instead of the
// embedded one (as the browser tests' OXPROF_E2E_DEV_DIST).
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from '../../ui/node_modules/playwright-core/index.mjs';
import { CHROMIUM, CHROMIUM_ARGS, startServer } from '../../ui/e2e/harness.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = process.env.OXPROF_BIN || join(repo, 'target/release/oxprof');
if (!existsSync(bin)) throw new Error(`no oxprof binary at ${bin} (set OXPROF_BIN)`);
if (process.env.OXPROF_UI_DIR) process.env.OXPROF_E2E_DEV_DIST = process.env.OXPROF_UI_DIR;
const out = resolve(process.argv[2] || join(repo, 'docs/ui'));
mkdirSync(out, { recursive: true });
const RUN = 'pytorch_a100_ddp';

const ready = (page) => page.waitForFunction(() => document.body.dataset.state === 'ready' && [...document.querySelectorAll('[data-chart]')].every((c) => c.dataset.ready === 'true'), null, { timeout: 120_000 });

const server = await startServer(bin, null);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
try {
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  const go = async (params) => {
    const url = new URL('/', server.url);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    await page.goto(url.toString());
    await ready(page);
  };
  const api = async (route, params) => (await fetch(new URL(`/oxprof/api/trace/${route}?${new URLSearchParams({ run: RUN, ...params })}`, server.url))).json();
  const tracks = await api('tracks', {});
  const cpu = tracks.sections.find((s) => s.name.endsWith('/host:CPU'));
  const gpu = tracks.sections.find((s) => s.name.endsWith('/device:GPU:0'));
  const main = cpu.tracks.find((t) => t.name.includes('pt_main_thread'));
  const steps = (await api('search', { prefix: 'ProfilerStep#', limit: 10 })).matches;
  const step = steps[1] ?? steps[0];

  // 1. The trace viewer: one step, the main thread pinned, a kernel selected, two flags.
  const kernels = await api('search', { q: 'ncclKernel_AllReduce', limit: 100 });
  const inStep = kernels.matches.filter((m) => m.ts_ps >= step.ts_ps && m.ts_ps <= step.ts_ps + step.dur_ps).sort((a, b) => b.dur_ps - a.dur_ps)[0];
  const flags = [`${Math.round(step.ts_ps)}~${encodeURIComponent(step.name)} starts`, `${Math.round(step.ts_ps + step.dur_ps)}~${encodeURIComponent(step.name)} ends`].join(',');
  await go({ run: RUN, tool: 'trace_viewer', start_ps: String(step.ts_ps - step.dur_ps * 0.05), end_ps: String(step.ts_ps + step.dur_ps * 1.05), pinned: String(main.id), flags, ...(inStep ? { sel: String(inStep.id) } : {}) });
  await page.waitForSelector('[data-role="same-name-stats"]', { timeout: 30_000 }).catch(() => undefined);
  await page.screenshot({ path: join(out, 'trace-viewer.png') });

  // 2. An area selection over the GPU streams of that step: the pivot by name and track
  //    (a taller panel: its edge's height is remembered in localStorage).
  await page.evaluate(() => localStorage.setItem('oxprof.trace.panel', '400'));
  const streams = gpu.tracks.filter((t) => t.kind === 'thread').map((t) => t.id);
  await go({ run: RUN, tool: 'trace_viewer', start_ps: String(step.ts_ps), end_ps: String(step.ts_ps + step.dur_ps), range: `${Math.round(step.ts_ps + step.dur_ps * 0.2)}_${Math.round(step.ts_ps + step.dur_ps * 0.8)}`, range_tracks: streams.join(','), area_tab: 'pivot', pivot: 'name,track' });
  await page.waitForSelector('[data-area-body="pivot"][data-ready="true"] [data-role="pivot-table"]', { timeout: 60_000 });
  await page.screenshot({ path: join(out, 'area-selection.png') });

  // 3. A table row opened in the timeline: the kernels' table, then its "Timeline" link.
  await go({ run: RUN, tool: 'pytorch_kernel_stats' });
  const link = page.locator('[data-table="by_name"] [data-role="show-in-timeline"]').first();
  await link.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(out, 'table-to-timeline-1-table.png') });
  await link.click();
  await page.waitForFunction(() => document.querySelector('[data-chart="trace"]')?.dataset.reveal, null, { timeout: 60_000 });
  await ready(page);
  await page.screenshot({ path: join(out, 'table-to-timeline-2-trace.png') });

  // 4. An SQL result as a debug track at the top of the timeline.
  const sql = "SELECT name, ts_ps, dur_ps FROM slice WHERE name LIKE 'ncclKernel%' ORDER BY dur_ps DESC LIMIT 50";
  await go({ run: RUN, tool: 'query', sql });
  await page.locator('[data-role="sql-status"]', { hasText: 'rows' }).waitFor();
  await page.click('[data-role="sql-debug-track"]');
  await ready(page);
  await page.waitForFunction(() => Number(document.querySelector('[data-chart="trace"]')?.dataset.debugRows) > 0, null, { timeout: 60_000 });
  await page.screenshot({ path: join(out, 'sql-debug-track.png') });
  // 5. Every tool's page on the demo (the manual's tool pages show them), each on the demo
  //    run that shows it best: PyTorch's and HTA's on the PyTorch run, the step and input
  //    tools on the TensorFlow loop (it has steps), the XLA and kernel tools on the MI300X
  //    GEMM; the page's first screen, as JPEG to keep the repository small.
  const toolsDir = join(out, 'tools');
  mkdirSync(toolsDir, { recursive: true });
  const runs = (await (await fetch(new URL('/oxprof/api/runs', server.url))).json()).runs.map((r) => r.name);
  const offered = new Map();
  for (const run of runs) {
    const info = await (await fetch(new URL(`/oxprof/api/run?run=${encodeURIComponent(run)}`, server.url))).json();
    offered.set(run, info.offered.map((t) => t.name.replace(/@$/, '')));
  }
  const STEPS = ['overview_page', 'input_pipeline_analyzer', 'tf_data_bottleneck_analysis', 'pod_viewer', 'smart_suggestion', 'framework_op_stats', 'memory_profile'];
  const prefix = (tool) => (/^(pytorch_|hta_)/.test(tool) ? 'pytorch_a100_ddp' : STEPS.includes(tool) ? 'tf_custom_loop' : 'mi300x_jax_gemm');
  const pages = [...new Set([...offered.values()].flat())].filter((t) => t !== 'trace_viewer');
  for (const tool of pages) {
    const candidates = runs.filter((r) => offered.get(r).includes(tool));
    const run = candidates.find((r) => r.startsWith(prefix(tool))) ?? candidates[0];
    await go({ run, tool });
    await page.screenshot({ path: join(toolsDir, `${tool}.jpg`), type: 'jpeg', quality: 70 });
  }
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
  await server.stop();
}
