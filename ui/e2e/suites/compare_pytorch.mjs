// The compare view on two PyTorch runs (issue 16): torch-tb-profiler's step categories and
// ATen operators with host and device self times, every number checked against
// /oxprof/api/diff, links to the PyTorch operator view. The pair is the one of
// crates/oxprof/tests/diff.rs (`kineto_run`), written to a temporary logdir here:
//
//   CPU tid 7  |ProfilerStep#i ........................................................|
//              |enumerate(DataLoader)| |aten::mm ------------|  |aten::add_| |extra|
//              s+10            s+110  s+200  |launch| s+500  s+550   +50   s+620 +20
//   GPU stream 7                                |sm80_gemm: s+300, gemm[i] µs|
//
// A's GEMM takes ~400 µs a step, B's ~600 µs; `extra` is aten::relu in A, aten::gelu in B.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

function kinetoRun(gemmUs, extra) {
  const events = [];
  let s = 1000;
  gemmUs.forEach((gemm, i) => {
    const ext = 100 * i + 1;
    const corr = 1000 + i;
    events.push({ ph: 'X', cat: 'user_annotation', name: `ProfilerStep#${i}`, pid: 1, tid: 7, ts: s, dur: 400 + gemm });
    events.push({ ph: 'X', cat: 'cpu_op', name: 'enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__', pid: 1, tid: 7, ts: s + 10, dur: 100 });
    events.push({ ph: 'X', cat: 'cpu_op', name: 'aten::mm', pid: 1, tid: 7, ts: s + 200, dur: 300, args: { 'External id': ext } });
    events.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaLaunchKernel', pid: 1, tid: 7, ts: s + 250, dur: 20, args: { 'External id': ext, correlation: corr } });
    events.push({ ph: 'X', cat: 'kernel', name: 'sm80_gemm', pid: 0, tid: 7, ts: s + 300, dur: gemm, args: { device: 0, stream: 7, correlation: corr, 'External id': ext } });
    events.push({ ph: 'X', cat: 'cpu_op', name: 'aten::add_', pid: 1, tid: 7, ts: s + 550, dur: 50, args: { 'External id': ext + 1 } });
    events.push({ ph: 'X', cat: 'cpu_op', name: extra, pid: 1, tid: 7, ts: s + 620, dur: 20, args: { 'External id': ext + 2 } });
    s += 400 + gemm;
  });
  return JSON.stringify({ schemaVersion: 1, deviceProperties: [], traceEvents: events, baseTimeNanoseconds: 1700000000000000000 });
}

export async function register(ctx) {
  const { h } = ctx;
  const logdir = mkdtempSync(join(tmpdir(), 'oxprof-compare-pytorch-'));
  for (const [run, gemm, extra] of [
    ['before', [400, 410, 395, 405, 400, 390], 'aten::relu'],
    ['after', [600, 610, 590, 605, 600, 595], 'aten::gelu'],
  ]) {
    mkdirSync(join(logdir, run));
    writeFileSync(join(logdir, run, 'worker0.pt.trace.json'), kinetoRun(gemm, extra));
  }
  const server = await startServer(process.env.OXPROF_BIN, logdir);
  try {
    const base = server.url;
    const runs = await (await fetch(new URL('/data/plugin/profile/runs', base))).json();
    const before = runs.find((r) => r.startsWith('before'));
    const after = runs.find((r) => r.startsWith('after'));
    assert(before && after, `the two PyTorch runs: ${runs}`);
    const waitCompare = (page) =>
      page.waitForFunction(() => document.querySelector('[data-page="compare"]')?.dataset.state === 'ready' && [...document.querySelectorAll('[data-chart]')].every((c) => c.dataset.ready === 'true'), null, { timeout: 60_000 });
    const count = async (page, key) => Number(await page.getAttribute(`[data-table="${key}"] [data-role="count"]`, 'data-total'));
    const cell = (page, key, rowIndex, col) => page.locator(`[data-table="${key}"] tbody tr:not(.spacer-row)`).nth(rowIndex).locator(`td[data-col="${col}"]`);

    await h.test('compare (PyTorch): steps in torch-tb categories, ATen operators with device times', async ({ page, shot }) => {
      const r = await fetch(new URL(`/oxprof/api/diff?${new URLSearchParams({ run: before, run_b: after })}`, base));
      assert(r.ok, `/oxprof/api/diff: HTTP ${r.status}`);
      const diff = await r.json();
      assertEqual(diff.steps.source, 'pytorch', 'torch-tb-profiler steps');
      await page.goto(new URL(`/?${new URLSearchParams({ tool: 'compare', run: before, run_b: after })}`, base).toString());
      await waitCompare(page);
      // Steps: 0.8 → 1.0 ms, +25 %, beyond noise; the kernel category carries the change.
      const stepTime = diff.steps.metrics[0];
      assertEqual(await page.locator('[data-metric="step_time_change"] [data-role="value"]').innerText(), `+${(stepTime.change.relative * 100).toFixed(1)}%`, 'step time change');
      assertEqual(await cell(page, 'steps', 0, 'verdict').innerText(), 'beyond noise', 'step time verdict');
      const names = await page.locator('[data-table="steps"] tbody td[data-col="metric"]').allInnerTexts();
      assert(names.some((n) => /Kernel/.test(n)) && names.some((n) => /DataLoader/.test(n)), `torch-tb categories: ${names}`);
      assertEqual(await count(page, 'steps'), diff.steps.metrics.length + (diff.input ? 1 : 0), 'every step metric');
      // Operators: aten::mm regressed on the device (its GEMM), relu only in A, gelu only in B.
      const ops = diff.ops.find((o) => o.kind === 'framework_op');
      assertEqual(ops.tool, 'pytorch_op_stats', 'PyTorch operators');
      const summary = await page.locator('[data-role="framework_op-summary"]').innerText();
      assert(summary.includes('host self time') && summary.includes('device self time'), `host and device totals: ${summary}`);
      assertEqual(await cell(page, 'framework_op.only_in_a', 0, 'name').getAttribute('data-value'), 'aten::relu', 'only in A');
      assertEqual(await cell(page, 'framework_op.only_in_b', 0, 'name').getAttribute('data-value'), 'aten::gelu', 'only in B');
      const mm = ops.matched.find((o) => o.name === 'aten::mm');
      assert(mm && mm.device_self_time_us.delta > 0, 'aten::mm device self time up in the API');
      const regressions = await page.locator('[data-table="framework_op.regressions"] tbody td[data-col="name"]').evaluateAll((tds) => tds.map((td) => td.dataset.value));
      assert(regressions.includes('aten::mm'), `aten::mm among the regressions: ${regressions}`);
      const row = regressions.indexOf('aten::mm');
      assertEqual(Number(await cell(page, 'framework_op.regressions', row, 'device_self_delta_us').getAttribute('data-value')), mm.device_self_time_us.delta, 'device self change of aten::mm');
      // The op's link opens the PyTorch operator view filtered to it, in run B.
      const href = await cell(page, 'framework_op.regressions', row, 'links').locator('a[data-link="B"]').getAttribute('href');
      const params = new URL(href, base).searchParams;
      assertEqual([params.get('tool'), params.get('run'), params.get('by_name.q')], ['pytorch_op_stats', after, 'aten::mm'], 'link to the operator view');
      await shot();
    });
  } finally {
    await server.stop();
    rmSync(logdir, { recursive: true, force: true });
  }
}
