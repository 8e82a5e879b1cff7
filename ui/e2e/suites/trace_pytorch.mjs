// The trace viewer on a real PyTorch GPU trace (the bundled demo's A100 DDP run, Kineto
// JSON from HolisticTraceAnalysis): sections and tracks named as PyTorch names them
// (`GPU 0 · <device>`, `stream 7`, `CPU · <process> (pid N)`, Python threads), the
// ProfilerStep markers, selecting a kernel by clicking it, following a CPU launch → GPU
// kernel flow, search, and drag-select totals over the GPU streams.
import { assert, assertEqual, startServer } from '../harness.mjs';
import { clippedFromSql, dragArea, sameRows, slicesTab, waitSelfClipped } from '../area.mjs';

const RUN = 'pytorch_a100_ddp';

export async function register(ctx) {
  const { h, open, waitReady, text } = ctx;
  const bin = process.env.OXPROF_BIN;
  const demo = await startServer(bin, null);
  try {
    const api = async (route, params = {}) => {
      const url = new URL(`/oxprof/api/trace/${route}`, demo.url);
      url.searchParams.set('run', RUN);
      for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
      const r = await fetch(url);
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
      return r.json();
    };
    const urlParam = (page, key) => new URL(page.url()).searchParams.get(key);
    const shown = async (page) => {
      const w = page.locator('[data-role="trace-window"]');
      return { start: Number(await w.getAttribute('data-start-ps')), end: Number(await w.getAttribute('data-end-ps')) };
    };
    const waitDetails = (page, id) =>
      page.waitForFunction((want) => document.querySelector('[data-role="trace-details"]')?.dataset.eventId === want, String(id), { timeout: 15_000 });

    const tracks = await api('tracks');
    const gpu = tracks.sections.find((s) => s.name.endsWith('/device:GPU:0'));
    const cpu = tracks.sections.find((s) => s.name.endsWith('/host:CPU'));
    assert(gpu && cpu, `a GPU and a CPU section: ${tracks.sections.map((s) => s.name)}`);
    const streams = gpu.tracks.filter((t) => t.kind === 'thread');
    const mainThread = cpu.tracks.find((t) => t.name.includes('pt_main_thread'));
    const all = await api('window', { exact_limit: 100000000 });
    const nameOf = (e) => all.names[e.name];
    const trackOf = (id) => all.tracks.find((t) => t.id === id)?.events ?? [];
    /** Nesting depth of each event of a track (its order), as the viewer lays them out. */
    const depths = (events) => {
      const ends = [];
      return events.map((e) => {
        while (ends.length && e.ts_ps >= ends[ends.length - 1]) ends.pop();
        const d = ends.length;
        if (e.dur_ps > 0) ends.push(e.ts_ps + e.dur_ps);
        return d;
      });
    };

    await h.test('pytorch trace: sections and tracks named as PyTorch users know them; ProfilerStep markers on the main thread', async ({ page, shot }) => {
      assertEqual(gpu.label, 'GPU 0 · NVIDIA A100-PG509-200', 'the GPU section: PyTorch device number and the device');
      assertEqual(cpu.label, 'CPU · python3.10 (pid 2910249)', 'the CPU section: the Python process');
      assertEqual(streams.map((t) => t.name), ['stream 7', 'stream 40'], 'GPU streams as PyTorch names them');
      assert(mainThread && cpu.tracks.some((t) => t.name === 'thread 2919752 (pt_autograd_0)'), `Python threads: ${cpu.tracks.map((t) => t.name)}`);
      await open(page, demo.url, { run: RUN, tool: 'trace_viewer' });
      const labels = await page.locator('[data-role="section-name"]').allInnerTexts();
      assert(labels.includes(gpu.label) && labels.includes(cpu.label), `section labels shown: ${labels}`);
      const trackTitles = await page.locator('[data-role="trace-labels"] [data-track]').evaluateAll((els) => els.map((e) => e.getAttribute('title') ?? e.textContent));
      for (const want of ['stream 7', 'stream 40', mainThread.name]) assert(trackTitles.some((t) => t.startsWith(want)), `a track "${want}": ${trackTitles}`);
      // Steps: ProfilerStep#4..6 on the main thread, as in the trace.
      const steps = await api('search', { q: 'ProfilerStep#', limit: 100 });
      assertEqual(steps.total, 3, 'three steps');
      assert(steps.matches.every((m) => m.track === mainThread.id), 'on the main thread');
      const stepNames = trackOf(mainThread.id).map(nameOf).filter((n) => n.startsWith('ProfilerStep#'));
      assertEqual(stepNames, ['ProfilerStep#4', 'ProfilerStep#5', 'ProfilerStep#6'], 'the step markers, in order');
      await shot();
    });

    await h.test('pytorch trace: clicking a kernel on a GPU stream selects it and shows its launch arguments', async ({ page, shot }) => {
      // The longest all-reduce kernel on the NCCL stream.
      const nccl = streams.find((t) => trackOf(t.id).some((e) => nameOf(e).startsWith('ncclKernel_AllReduce')));
      assert(nccl, 'a stream with NCCL all-reduce kernels');
      const kernel = trackOf(nccl.id).filter((e) => nameOf(e).startsWith('ncclKernel_AllReduce')).reduce((a, b) => (b.dur_ps > a.dur_ps ? b : a));
      const span = { start: kernel.ts_ps - kernel.dur_ps, end: kernel.ts_ps + 2 * kernel.dur_ps };
      await open(page, demo.url, { run: RUN, tool: 'trace_viewer', start_ps: String(span.start), end_ps: String(span.end) });
      const now = await shown(page);
      const label = page.locator(`[data-role="trace-labels"] [data-track="${nccl.id}"]`);
      await label.scrollIntoViewIfNeeded();
      const canvas = await page.locator('[data-role="trace-canvas"]').boundingBox();
      const row = await label.boundingBox();
      // Kernels nest under their gpu_user_annotation (`nccl:all_reduce`): one row lower.
      const events = trackOf(nccl.id);
      const ds = depths(events);
      const depth = ds[events.indexOf(kernel)];
      const rowHeight = row.height / (Math.max(...ds) + 1);
      assertEqual(depth, 1, 'the kernel is under its annotation');
      const x = canvas.x + ((kernel.ts_ps + kernel.dur_ps / 2 - now.start) / (now.end - now.start)) * canvas.width;
      await page.mouse.click(x, row.y + depth * rowHeight + rowHeight / 2);
      await waitDetails(page, kernel.id);
      await waitReady(page);
      const d = await api('event', { id: kernel.id });
      assertEqual(await text(page, '[data-role="trace-details"] [data-field="name"]'), d.name, 'the kernel name');
      assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="duration"]', 'data-ps'), String(d.dur_ps), 'duration');
      const args = await page.locator('[data-role="trace-details"] [data-arg]').evaluateAll((rows) => rows.map((r) => r.dataset.arg));
      for (const key of ['correlation_id', 'grid', 'block', 'stream']) assert(args.includes(key), `argument ${key}: ${args}`);
      assertEqual(urlParam(page, 'sel'), String(kernel.id), 'the selection is in the URL');
      await shot();
    });

    await h.test('pytorch trace: a CPU launch flows to its GPU kernel; following the flow jumps to the stream', async ({ page, shot }) => {
      const launches = trackOf(mainThread.id).filter((e) => e.flow && nameOf(e) === 'cudaLaunchKernel');
      assert(launches.length > 0, 'cudaLaunchKernel events with flows');
      let target = null;
      for (const launch of launches.slice(0, 50)) {
        const f = await api('flow', { id: launch.flow[0] });
        const other = f.events.find((x) => x.id !== launch.id);
        if (other && streams.some((s) => s.id === other.track)) {
          target = { launch, flow: f, kernel: other };
          break;
        }
      }
      assert(target, 'a launch whose flow ends on a GPU stream');
      await open(page, demo.url, { run: RUN, tool: 'trace_viewer', sel: String(target.launch.id) });
      await waitDetails(page, target.launch.id);
      assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="flow"]', 'data-flow-id'), target.launch.flow[0], 'the flow in the details');
      const jumps = page.locator('[data-role="flow-jump"]');
      await jumps.first().waitFor();
      assertEqual(await jumps.evaluateAll((bs) => bs.map((b) => Number(b.dataset.eventId))), [target.kernel.id], 'the other end: the kernel');
      await jumps.first().click();
      await waitDetails(page, target.kernel.id);
      await waitReady(page);
      const now = await shown(page);
      assert(now.start <= target.kernel.ts_ps && now.end >= target.kernel.ts_ps, `the view moved to the kernel: ${JSON.stringify(now)} vs ${target.kernel.ts_ps}`);
      const label = await page.locator(`[data-role="trace-labels"] [data-track="${target.kernel.track}"]`).boundingBox();
      const box = await page.locator('[data-role="trace-scroll"]').boundingBox();
      assert(label.y >= box.y - 1 && label.y < box.y + box.height, 'and to its stream, vertically');
      const kernel = await api('event', { id: target.kernel.id });
      const launch = await api('event', { id: target.launch.id });
      assertEqual(kernel.args.correlation_id, launch.args.correlation_id, 'launch and kernel share the correlation id');
      await shot();
    });

    await h.test('pytorch trace: search finds kernels by any part of the name, in any case', async ({ page, shot }) => {
      const needle = 'allreduce_ring';
      const expected = await api('search', { q: needle, limit: 1000 });
      assert(expected.total > 0, `the API finds "${needle}"`);
      await open(page, demo.url, { run: RUN, tool: 'trace_viewer' });
      await page.fill('[data-role="trace-search"]', needle);
      await page.press('[data-role="trace-search"]', 'Enter');
      await waitDetails(page, expected.matches[0].id);
      await waitReady(page);
      assertEqual(await page.getAttribute('[data-role="search-status"]', 'data-total'), String(expected.total), 'match count');
      assert((await text(page, '[data-role="trace-details"] [data-field="name"]')).startsWith('ncclKernel_AllReduce_RING'), 'a matching kernel selected');
      assert(Number(await page.getAttribute('[data-role="trace-canvas"]', 'data-highlights')) > 0, 'matches are highlighted');
      await page.click('[data-tab="results"]');
      assertEqual(await page.locator('[data-role="search-results"] li').count(), Math.min(expected.matches.length, 200), 'the results list');
      await shot();
    });

    await h.test('pytorch trace: drag-selecting the GPU streams totals kernels clipped to the area, self times as SQL computes them', async ({ page, shot }) => {
      // The second step: one ProfilerStep of GPU work.
      const step = trackOf(mainThread.id).find((e) => nameOf(e) === 'ProfilerStep#5');
      await open(page, demo.url, { run: RUN, tool: 'trace_viewer', start_ps: String(step.ts_ps), end_ps: String(step.ts_ps + step.dur_ps) });
      const canvas = await page.locator('[data-role="trace-canvas"]').boundingBox();
      const rows = await Promise.all(streams.map((s) => page.locator(`[data-role="trace-labels"] [data-track="${s.id}"]`).boundingBox()));
      await dragArea(page, canvas.x + canvas.width * 0.1, rows[0].y + 4, canvas.x + canvas.width * 0.9, rows.at(-1).y + rows.at(-1).height - 4);
      await waitReady(page);
      const chosen = urlParam(page, 'range_tracks').split(',').map(Number).sort((a, b) => a - b);
      assertEqual(chosen, streams.map((s) => s.id).sort((a, b) => a - b), 'the GPU streams chosen');
      const [start, end] = urlParam(page, 'range').split('_').map(Number);
      const plane = gpu.name.startsWith(`${tracks.host} `) ? gpu.name.slice(tracks.host.length + 1) : gpu.name;
      const sql = await clippedFromSql(demo.url, RUN, tracks.host, streams.map((s) => [plane, s.name]), start, end);
      assert([...sql.keys()].some((n) => n.startsWith('ncclKernel_AllReduce')), 'NCCL kernels in the totals');
      await waitSelfClipped(page, ['all']);
      const tab = await slicesTab(page);
      sameRows(tab.rows, sql, ['count', 'wall', 'self'], 'the Slices tab = SQL over the same range');
      await shot();
    });
  } finally {
    await demo.stop();
  }
}
