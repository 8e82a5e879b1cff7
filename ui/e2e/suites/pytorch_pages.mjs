// Browser tests of the PyTorch pages (pytorch_overview, pytorch_op_stats, pytorch_memory,
// pytorch_modules, and pytorch_kernel_stats on the kernel stats page): on the committed CPU traces
// (testdata/kineto: a training loop with steps, a 2-rank DDP run) and on a GPU trace from
// the shared external test data (TraceLens's H100 BERT trace) when present. Shown numbers
// and row counts are checked against the API's answers.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

const byName = (data, name) => (Array.isArray(data) ? data : []).find((t) => t.p?.name === name);

export async function register(ctx) {
  const { h, api, open, checkTable, text, repo, external } = ctx;
  const bin = process.env.OXPROF_BIN;
  const servers = [];
  try {
    const cpu = await startServer(bin, join(repo, 'testdata/kineto'));
    servers.push(cpu);
    const runs = await api(cpu.url, 'runs');
    const run = runs.includes('train') ? 'train' : runs[0];
    const host = (await api(cpu.url, 'hosts', { run, tag: 'pytorch_overview' }))[0]?.hostname;

    await h.test('pytorch pages (CPU trace): the Tools menu offers them; overview shows steps, no GPU, recommendations', async ({ page, shot }) => {
      const data = await api(cpu.url, 'data', { run, tag: 'pytorch_overview', host });
      const steps = byName(data, 'step_breakdown');
      assert(steps && steps.rows.length >= 2, 'steps and their average');
      await open(page, cpu.url, { run, tool: 'pytorch_overview', host });
      await page.locator('[data-page="pytorch_overview"]').waitFor();
      const tools = await page.locator('[data-role="tool"] option').evaluateAll((os) => os.map((o) => o.value));
      for (const t of ['pytorch_overview', 'pytorch_op_stats', 'pytorch_kernel_stats']) assert(tools.includes(t), `${t} in the Tools menu`);
      await page.locator('[data-chart="pytorch-steps"]').waitFor();
      await checkTable(page, 'steps', steps, 'total');
      assert((await text(page, '[data-role="no-gpu"]')).includes('CPU-only'), 'no GPU summary on a CPU trace');
      await page.locator('[data-role="recommendations"]').waitFor();
      await shot();
    });

    await h.test('pytorch pages (CPU trace): operators by name and input shape, sort and filter', async ({ page, shot }) => {
      const data = await api(cpu.url, 'data', { run, tag: 'pytorch_op_stats', host });
      const ops = byName(data, 'by_name');
      assert(ops && ops.rows.length > 0, 'operators');
      await open(page, cpu.url, { run, tool: 'pytorch_op_stats', host });
      await page.locator('[data-page="pytorch_op_stats"]').waitFor();
      await page.locator('[data-chart="pytorch-ops"]').waitFor();
      await checkTable(page, 'by_name', ops, 'host_self_us');
      await checkTable(page, 'by_name_input', byName(data, 'by_name_input'), 'name');
      await page.fill('[data-table="by_name"] [data-role="filter"]', 'aten::addmm');
      const expected = ops.rows.filter((r) => String(r.c[0]?.v ?? '').toLowerCase().includes('aten::addmm')).length;
      assertEqual(await page.locator('[data-table="by_name"] [data-role="count"]').getAttribute('data-shown'), String(expected), 'filtered operators');
      await shot();
    });

    await h.test('pytorch pages (CPU trace): memory curve, allocation events and memory by operator', async ({ page, shot }) => {
      const data = await api(cpu.url, 'data', { run, tag: 'pytorch_memory', host });
      const devices = byName(data, 'devices');
      assert(devices && devices.rows.length === 1 && devices.rows[0].c[0].v === 'CPU', 'one device, the CPU');
      await open(page, cpu.url, { run, tool: 'pytorch_memory', host });
      await page.locator('[data-page="pytorch_memory"]').waitFor();
      const tools = await page.locator('[data-role="tool"] option').evaluateAll((os) => os.map((o) => o.value));
      assert(tools.includes('pytorch_memory'), 'pytorch_memory in the Tools menu');
      await page.locator('[data-chart="pytorch-memory-CPU"][data-ready="true"]').waitFor();
      await checkTable(page, 'devices', devices, 'peak_allocated_bytes');
      await checkTable(page, 'events', byName(data, 'events'), 'size_bytes');
      const ops = byName(data, 'operators');
      await checkTable(page, 'operators', ops, 'self_size_increase_bytes');
      await page.fill('[data-table="operators"] [data-role="filter"]', 'aten::mm');
      const expected = ops.rows.filter((r) => r.c.some((c) => String(c?.v ?? '').toLowerCase().includes('aten::mm'))).length;
      assertEqual(await page.locator('[data-table="operators"] [data-role="count"]').getAttribute('data-shown'), String(expected), 'filtered operators');
      await shot();
    });

    await h.test('pytorch pages (CPU trace): an allocation opens its operator at that time in the timeline', async ({ page }) => {
      const data = await api(cpu.url, 'data', { run, tag: 'pytorch_memory', host });
      const events = byName(data, 'events');
      const col = (id) => events.cols.findIndex((c) => c.id === id);
      await open(page, cpu.url, { run, tool: 'pytorch_memory', host });
      const row = page.locator('[data-table="events"] tbody tr:not(.spacer-row)').first();
      const op = await row.locator('[data-col="operator"]').getAttribute('data-value');
      const at = Number(await row.locator('[data-col="allocation_us"]').getAttribute('data-value'));
      assert(op && events.rows.some((r) => r.c[col('operator')]?.v === op), 'an allocation row with its operator');
      await row.locator('[data-role="show-in-timeline"]').click();
      await page.waitForFunction(() => document.querySelector('[data-chart="trace"]')?.dataset.reveal, null, { timeout: 60_000 });
      await page.waitForFunction(() => document.querySelector('[data-chart="trace"]')?.dataset.ready === 'true', null, { timeout: 60_000 });
      assertEqual(await page.locator('[data-role="event-title"]').innerText(), op, 'the allocating operator selected');
      // Its run nearest the allocation (µs from the profiler's start: the trace's start here).
      const start = Number(await page.locator('[data-role="trace-details"] [data-field="start"]').getAttribute('data-ps'));
      const dur = Number(await page.locator('[data-role="trace-details"] [data-field="duration"]').getAttribute('data-ps'));
      const tracks = await (await fetch(new URL(`/oxprof/api/trace/tracks?run=${encodeURIComponent(run)}&host=${host}`, cpu.url))).json();
      const when = tracks.start_ps + at * 1e6;
      const found = await (await fetch(new URL(`/oxprof/api/trace/search?run=${encodeURIComponent(run)}&host=${host}&prefix=${encodeURIComponent(op)}&limit=10000`, cpu.url))).json();
      const dist = (m) => (when < m.ts_ps ? m.ts_ps - when : when > m.ts_ps + m.dur_ps ? when - m.ts_ps - m.dur_ps : 0);
      const best = Math.min(...found.matches.filter((m) => m.name === op).map(dist));
      assertEqual(dist({ ts_ps: start, dur_ps: dur }), best, 'the run nearest the allocation');
    });

    await h.test('pytorch pages (CPU trace): memory says how to record it when a trace has none', async ({ page }) => {
      const ddp = runs.find((r) => r.includes('ddp'));
      if (!ddp) return;
      const ddpHost = (await api(cpu.url, 'hosts', { run: ddp, tag: 'pytorch_memory' }))[0]?.hostname;
      await open(page, cpu.url, { run: ddp, tool: 'pytorch_memory', host: ddpHost });
      await page.locator('[data-page="pytorch_memory"]').waitFor();
      assert((await text(page, '[data-role="no-memory"]')).includes('profile_memory=True'), 'no memory message');
    });

    await h.test('pytorch pages (CPU trace): the module hierarchy, indented under its parents, equals the API', async ({ page, shot }) => {
      const data = await api(cpu.url, 'data', { run, tag: 'pytorch_modules', host });
      const modules = byName(data, 'modules');
      assert(modules && modules.rows.length === 4, 'Sequential_0 and its three children');
      await open(page, cpu.url, { run, tool: 'pytorch_modules', host });
      await page.locator('[data-page="pytorch_modules"]').waitFor();
      const tools = await page.locator('[data-role="tool"] option').evaluateAll((os) => os.map((o) => o.value));
      assert(tools.includes('pytorch_modules'), 'pytorch_modules in the Tools menu');
      await page.locator('[data-chart="pytorch-modules"]').waitFor();
      // Hierarchy order before any sort: the root first, its children indented.
      const names = await page.locator('[data-table="modules"] tbody td[data-col="name"]').evaluateAll((tds) => tds.map((td) => td.textContent));
      assertEqual(names, modules.rows.map((r) => r.c[2].v), 'modules in hierarchy order');
      const pad = await page.locator('[data-table="modules"] tbody .module-name').evaluateAll((els) => els.map((e) => parseFloat(getComputedStyle(e).paddingLeft)));
      assert(pad[0] === 0 && pad.slice(1).every((p) => p > 0), `children indented (${pad})`);
      await checkTable(page, 'modules', modules, 'host_total_us');
      await page.fill('[data-table="modules"] [data-role="filter"]', 'linear');
      assertEqual(await page.locator('[data-table="modules"] [data-role="count"]').getAttribute('data-shown'), '2', 'filtered modules');
      await shot();
    });

    await h.test('pytorch pages (CPU trace): modules say how to record them when a trace has none', async ({ page }) => {
      const ddp = runs.find((r) => r.includes('ddp'));
      if (!ddp) return;
      const ddpHost = (await api(cpu.url, 'hosts', { run: ddp, tag: 'pytorch_modules' }))[0]?.hostname;
      await open(page, cpu.url, { run: ddp, tool: 'pytorch_modules', host: ddpHost });
      await page.locator('[data-page="pytorch_modules"]').waitFor();
      assert((await text(page, '[data-role="no-modules"]')).includes('with_stack=True'), 'no modules message');
    });

    await h.test('pytorch pages (CPU trace): kernels say there are none', async ({ page, shot }) => {
      await open(page, cpu.url, { run, tool: 'pytorch_kernel_stats', host });
      await page.locator('[data-page="pytorch_kernel_stats"]').waitFor();
      assert((await text(page, '[data-role="no-kernels"]')).includes('No GPU kernels'), 'no kernels message');
      await shot();
    });

    // One profile file served by itself (its name is not a `*.pt.trace.json`: its content decides).
    const gpuDir = join(external, 'AMD-AGI-TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz');
    if (!existsSync(gpuDir)) h.skip('pytorch pages (GPU trace)', `no GPU PyTorch trace at ${gpuDir}`);
    else {
      const gpu = await startServer(bin, gpuDir);
      servers.push(gpu);
      const gpuRuns = await api(gpu.url, 'runs');
      const gpuRun = gpuRuns[0];
      const gpuHosts = (await api(gpu.url, 'hosts', { run: gpuRun, tag: 'pytorch_overview' })).map((x) => x.hostname);
      const gpuHost = gpuHosts.find((x) => x.includes('bert')) ?? gpuHosts[0];

      await h.test('pytorch pages (GPU trace): overview GPU summary equals the API', async ({ page, shot }) => {
        const data = await api(gpu.url, 'data', { run: gpuRun, tag: 'pytorch_overview', host: gpuHost });
        const gpus = byName(data, 'gpus');
        assert(gpus && gpus.rows.length > 0, 'a GPU summary');
        await open(page, gpu.url, { run: gpuRun, tool: 'pytorch_overview', host: gpuHost });
        await page.locator('[data-page="pytorch_overview"]').waitFor();
        await checkTable(page, 'gpus', gpus, 'utilization');
        await checkTable(page, 'steps', byName(data, 'step_breakdown'), 'kernel');
        await shot();
      });

      await h.test('pytorch pages (GPU trace): kernels by name and by operator on the kernel stats page', async ({ page, shot }) => {
        const data = await api(gpu.url, 'data', { run: gpuRun, tag: 'pytorch_kernel_stats', host: gpuHost });
        const kernels = byName(data, 'by_name');
        assert(kernels && kernels.rows.length > 0, 'kernels');
        await open(page, gpu.url, { run: gpuRun, tool: 'pytorch_kernel_stats', host: gpuHost });
        await page.locator('[data-page="pytorch_kernel_stats"]').waitFor();
        await page.locator('[data-chart="pytorch-kernels"]').waitFor();
        await checkTable(page, 'by_name', kernels, 'total_us');
        await checkTable(page, 'by_name_op', byName(data, 'by_name_op'), 'operator');
        await shot();
      });

      await h.test('pytorch pages (GPU trace): memory curves of CPU and GPU0', async ({ page, shot }) => {
        const data = await api(gpu.url, 'data', { run: gpuRun, tag: 'pytorch_memory', host: gpuHost });
        const devices = byName(data, 'devices');
        assertEqual(devices.rows.map((r) => r.c[0].v).join(','), 'CPU,GPU0', 'devices');
        await open(page, gpu.url, { run: gpuRun, tool: 'pytorch_memory', host: gpuHost });
        await page.locator('[data-page="pytorch_memory"]').waitFor();
        await page.locator('[data-chart="pytorch-memory-GPU0"][data-ready="true"]').waitFor();
        await checkTable(page, 'devices', devices, 'peak_allocated_bytes');
        await checkTable(page, 'operators', byName(data, 'operators'), 'allocation_bytes');
        await shot();
      });

      await h.test('pytorch pages (GPU trace): modules with device time', async ({ page, shot }) => {
        const data = await api(gpu.url, 'data', { run: gpuRun, tag: 'pytorch_modules', host: gpuHost });
        const modules = byName(data, 'modules');
        assert(modules && modules.rows.length > 10, 'a module hierarchy');
        await open(page, gpu.url, { run: gpuRun, tool: 'pytorch_modules', host: gpuHost });
        await page.locator('[data-page="pytorch_modules"]').waitFor();
        assert((await text(page, '[data-page="pytorch_modules"]')).includes('Top modules by device self time'), 'device time charted');
        await checkTable(page, 'modules', modules, 'device_total_us');
        await shot();
      });

      await h.test('pytorch pages (GPU trace): operators with device time', async ({ page, shot }) => {
        const data = await api(gpu.url, 'data', { run: gpuRun, tag: 'pytorch_op_stats', host: gpuHost });
        const ops = byName(data, 'by_name');
        await open(page, gpu.url, { run: gpuRun, tool: 'pytorch_op_stats', host: gpuHost });
        await page.locator('[data-page="pytorch_op_stats"]').waitFor();
        await checkTable(page, 'by_name', ops, 'device_self_us');
        await shot();
      });
    }

    // The whole folder of third-party traces (issue 41: `oxprof serve` listed 3 of its ~20
    // profiles with `skipped` empty): PyTorch traces of any .json[.gz] name are found by
    // content, loose .xplane.pb folders are runs, TensorBoard's older per-tool sessions are
    // listed as skipped with the reason.
    if (!existsSync(join(external, 'facebookresearch-HolisticTraceAnalysis'))) h.skip('pytorch pages: a folder of mixed traces', `no external test data at ${external}`);
    else {
      const mixed = await startServer(bin, external);
      servers.push(mixed);
      await h.test('pytorch pages: a folder of mixed traces lists every profile, says what it skips, and a trace found by content opens on its PyTorch overview', async ({ page, shot }) => {
        const listing = await (await fetch(new URL('/oxprof/api/runs', mixed.url))).json();
        const names = listing.runs.map((r) => r.name);
        assert(names.length >= 20, `every profile listed (${names.length}): ${names.join(', ')}`);
        const filter = listing.runs.find((r) => r.name === 'facebookresearch-HolisticTraceAnalysis/tests/data/trace_filter');
        assertEqual(filter?.hosts.map((x) => x.name), ['sampled_rank-0', 'sampled_rank-1'], 'two ranks named *.json.gz, found by content');
        for (const run of ['AMD-AGI-TraceLens/tests/traces/b200', 'openxla-xprof/xprof/convert/test_xplanes', 'openxla-xprof/demo/GPU-multi-worker']) assert(names.includes(run), `${run} listed`);
        assert(listing.skipped.some((s) => s.startsWith('openxla-xprof/demo/plugins/profile/GPU-input-bound: no profile oxprof reads')), `the per-tool session skipped with why: ${listing.skipped}`);
        await open(page, mixed.url, { run: 'AMD-AGI-TraceLens/tests/traces/b200' });
        assertEqual(await page.locator('[data-role="tool"]').inputValue(), 'pytorch_overview', 'opens on the PyTorch overview');
        await page.locator('[data-page="pytorch_overview"] [data-table="steps"]').waitFor();
        assertEqual((await page.locator('[data-role="run"] option').evaluateAll((os) => os.map((o) => o.value))).length, names.length, 'the Runs selector lists them all');
        await shot();
      });
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}
