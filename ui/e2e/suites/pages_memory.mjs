// Browser tests of the memory pages (memory profile, memory viewer) and of the tf.data
// bottleneck analysis, against the main server (testdata/profiles: tf_memory,
// tf_custom_loop, jax_train) and, for the memory ID selector, a server of its own over the
// GPU-multi-worker profile (four allocators) when the shared external test data is present.
// Shown numbers are checked against the API's answers.
//
// The tf.data graph is drawn by Graphviz in WebAssembly, which the page's
// Content-Security-Policy must allow ('wasm-unsafe-eval'); when the server's policy does
// not, the graph test runs in a browser context that ignores the policy (and says so), and
// another test checks the page explains the refusal and still lists the iterators.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';
import { assertTime } from '../units.mjs';

// ---- the page's data shaping, re-done here from the API's JSON ----

const num = (v) => (Number.isFinite(Number(v)) ? Number(v) : 0);
function humanBytes(bytes) {
  const units = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'Zi', 'Yi'];
  const sign = bytes < 0 ? '-' : '';
  const abs = Math.abs(bytes);
  const i = abs === 0 ? 0 : Math.min(units.length - 1, Math.max(0, Math.floor(Math.log(abs) / Math.log(1024))));
  const n = abs > 0 && abs < 1 ? abs.toExponential(2) : (abs / Math.pow(1024, i)).toFixed(2);
  return `${sign}${n} ${units[i]}B`;
}
const snapshotsOf = (data, id) => (data.version === 1 ? data.memoryProfilePerAllocator[id].sampledTimelineSnapshots : data.memoryProfilePerAllocator[id].memoryProfileSnapshots) || [];
const timelinePoints = (data, id) =>
  [...snapshotsOf(data, id)].sort((a, b) => num(a.timeOffsetPs) - num(b.timeOffsetPs)).filter((s) => s.aggregationStats && num(s.timeOffsetPs));
function breakdown(data, id) {
  const a = data.memoryProfilePerAllocator[id];
  const rows = [];
  for (const act of a.activeAllocations || []) {
    const i = num(act.snapshotIndex);
    const m = i >= 0 ? a.memoryProfileSnapshots?.[i]?.activityMetadata : a.specialAllocations?.[num(act.specialIndex)];
    if (!m) continue;
    rows.push({ c: [m.tfOpName ?? '', num(m.allocationBytes) / 1048576, num(m.requestedBytes) / 1048576, num(act.numOccurrences), m.regionType ?? '', m.dataType ?? '', m.tensorShape ?? ''].map((v) => ({ v })) });
  }
  return {
    cols: ['op_name:Op name:string', 'allocation_mib:Allocation size (MiB):number', 'requested_mib:Requested size (MiB):number', 'occurrences:Occurrences:number', 'region_type:Region type:string', 'data_type:Data type:string', 'shape:Shape:string'].map((s) => {
      const [id, label, type] = s.split(':');
      return { id, label, type };
    }),
    rows,
  };
}

/**
 * Sizes are shown in adaptive binary units with four significant digits (`1019 KiB`,
 * `16 B`): the text read back as bytes equals `mib` MiB to that precision.
 */
function sameBytes(shown, mib, what) {
  const m = /^(-?[\d,.]+) (B|KiB|MiB|GiB|TiB)$/.exec(String(shown).trim());
  assert(m, `${what}: "${shown}" is a size in binary units`);
  const bytes = Number(m[1].replace(/,/g, '')) * 1024 ** ['B', 'KiB', 'MiB', 'GiB', 'TiB'].indexOf(m[2]);
  const want = mib * 1024 * 1024;
  assert(Math.abs(bytes - want) <= Math.max(1, Math.abs(want) * 1e-3), `${what}: "${shown}" = ${bytes} bytes, expected ${want}`);
}

export async function register(ctx) {
  const { h, base, runs, api, open, waitReady, checkTable, text, external, artifacts } = ctx;
  const bin = process.env.OXPROF_BIN;
  const servers = [];
  const props = (page, key) =>
    page.locator(`[data-props="${key}"] dd`).evaluateAll((dds) => Object.fromEntries(dds.map((d) => [d.dataset.prop, d.textContent])));
  const metricValue = (page, key) => text(page, `[data-metric="${key}"] [data-role="value"]`);
  const dataText = async (srv, params) => {
    const url = new URL('/data/plugin/profile/data', srv);
    for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
    return r.text();
  };

  /** Checks the summary and the peak list of the memory profile page for allocator `id`. */
  const checkMemorySummary = async (page, data, id) => {
    const a = data.memoryProfilePerAllocator[id];
    const snaps = snapshotsOf(data, id);
    assertEqual(await metricValue(page, 'allocations'), String(snaps.filter((s) => s.activityMetadata?.memoryActivity === 'ALLOCATION').length), '#allocations');
    assertEqual(await metricValue(page, 'deallocations'), String(snaps.filter((s) => s.activityMetadata?.memoryActivity === 'DEALLOCATION').length), '#deallocations');
    assertEqual(await metricValue(page, 'capacity'), humanBytes(num(a.profileSummary.memoryCapacity)), 'capacity');
    assertEqual(await metricValue(page, 'peak-heap'), humanBytes(num(a.profileSummary.peakBytesUsageLifetime)), 'lifetime peak heap');
    const peak = a.profileSummary.peakStats;
    assertEqual(await metricValue(page, 'peak-usage'), humanBytes(num(peak.peakBytesInUse)), 'peak usage');
    const frag = Number(peak.fragmentation);
    // The peak's time in adaptive units (was "2774.9 ms"; now "2.775 s").
    const shownPeak = (await props(page, 'mp-peak'))['Time of the peak'];
    assertTime(shownPeak, num(a.profileSummary.peakStatsTimePs), 'time of the peak');
    assertEqual(
      await props(page, 'mp-peak'),
      {
        'Time of the peak': shownPeak,
        'Stack reservation': humanBytes(num(peak.stackReservedBytes)),
        'Heap allocation': humanBytes(num(peak.heapAllocatedBytes)),
        'Free memory': humanBytes(num(peak.freeMemoryBytes)),
        Fragmentation: Number.isFinite(frag) ? `${(frag * 100).toFixed(2)}%` : '-',
      },
      'values at the peak',
    );
  };

  /** Hovers the timeline at `fraction` of its width and checks the details card shows that event. */
  const hoverTimeline = async (page, data, id, fraction) => {
    const chart = page.locator('[data-chart="memory-timeline"]');
    // The header may wrap (more buttons at narrower widths): bring the chart into view first.
    await chart.scrollIntoViewIfNeeded();
    const box = await chart.boundingBox();
    const before = await page.locator('[data-role="mp-details"]').getAttribute('data-index');
    // The grid spans 70 px from the left to 60 px from the right.
    await page.mouse.move(box.x + 70 + (box.width - 130) * fraction, box.y + box.height / 2);
    await page.waitForFunction((b) => {
      const i = document.querySelector('[data-role="mp-details"]')?.dataset.index;
      return i !== undefined && i !== b;
    }, before, { timeout: 10_000 });
    const index = Number(await page.locator('[data-role="mp-details"]').getAttribute('data-index'));
    const s = timelinePoints(data, id)[index];
    assert(s, `a timeline point at ${index}`);
    const m = s.activityMetadata;
    const shown = await props(page, 'mp-event');
    const sign = m.memoryActivity === 'DEALLOCATION' ? -1 : 1;
    assertTime(shown.Time, num(s.timeOffsetPs), 'hovered event time');
    assertEqual(shown.Event, m.memoryActivity.toLowerCase(), 'allocation or deallocation');
    assertEqual(shown['Allocation size'], humanBytes(sign * num(m.allocationBytes)), 'allocation size');
    if (m.tfOpName) assertEqual(shown['TF op'], m.tfOpName, 'TF op');
    if (m.tensorShape) assertEqual(shown.Shape, m.tensorShape, 'shape');
    assertEqual(shown['Memory in use'], humanBytes(num(s.aggregationStats.stackReservedBytes) + num(s.aggregationStats.heapAllocatedBytes)), 'memory in use');
    return index;
  };

  try {
    // ---- memory profile ----
    const memRun = runs.find((r) => r.includes('tf_memory') && !r.includes('nobfc'));
    if (!memRun) h.skip('memory pages: memory profile', 'no tf_memory run');
    else {
      const host = (await api(base, 'hosts', { run: memRun, tag: 'memory_profile' }))[0]?.hostname;
      const data = await api(base, 'data', { run: memRun, tag: 'memory_profile', host });
      const id = data.memoryIds[0];
      await h.test('memory pages: memory profile summary equals the API, hover shows the event, breakdown sort/filter/CSV', async ({ page, shot }) => {
        await open(page, base, { run: memRun, tool: 'memory_profile', host });
        assertEqual(await page.locator('[data-role="mp-memory-id"] option').evaluateAll((os) => os.map((o) => o.value)), data.memoryIds, 'memory IDs');
        await checkMemorySummary(page, data, id);
        const first = await hoverTimeline(page, data, id, 0.3);
        const second = await hoverTimeline(page, data, id, 0.8);
        assert(second > first, 'a later time shows a later event');
        const table = breakdown(data, id);
        assert(table.rows.length > 0, 'allocations active at the peak');
        // Filter by op name (kept in the URL).
        const op = String(table.rows[0].c[0].v);
        await page.fill('[data-table="mp-breakdown"] [data-role="filter"]', op);
        const matching = table.rows.filter((r) => String(r.c[0].v).toLowerCase().includes(op.toLowerCase())).length;
        assertEqual(await page.locator('[data-table="mp-breakdown"] [data-role="count"]').getAttribute('data-shown'), String(matching), 'filtered rows');
        assert(new URL(page.url()).searchParams.get('mp-breakdown.q') === op, 'filter in the URL');
        await page.fill('[data-table="mp-breakdown"] [data-role="filter"]', '');
        await shot();
        await checkTable(page, 'mp-breakdown', table, 'requested_mib');
      });
      await h.test('memory pages: memory profile deep link keeps the memory ID; an unknown one falls back', async ({ page }) => {
        await open(page, base, { run: memRun, tool: 'memory_profile', host, memory_id: id });
        assertEqual(await page.inputValue('[data-role="mp-memory-id"]'), id, 'memory ID from the URL');
        await open(page, base, { run: memRun, tool: 'memory_profile', host, memory_id: 'no_such_allocator' });
        assertEqual(await page.inputValue('[data-role="mp-memory-id"]'), data.memoryIds[0], 'first memory ID');
        await checkMemorySummary(page, data, data.memoryIds[0]);
      });
    }
    const jaxRun = runs.find((r) => r.includes('jax_train'));
    if (jaxRun) {
      await h.test('memory pages: memory profile of a JAX profile explains there is no memory activity', async ({ page, shot }) => {
        const host = (await api(base, 'hosts', { run: jaxRun, tag: 'memory_profile' }))[0]?.hostname;
        await open(page, base, { run: jaxRun, tool: 'memory_profile', host });
        await page.locator('[data-role="mp-empty"]').waitFor();
        await page.locator('[data-role="notes"]').waitFor();
        await shot();
      });
    }

    // Several allocators: the GPU-multi-worker profile (external test data).
    const gpuDir = join(external, 'openxla-xprof/demo/plugins/profile/GPU-multi-worker');
    if (!existsSync(gpuDir)) h.skip('memory pages: memory ID selector', `no GPU test profile at ${gpuDir}`);
    else {
      const srv = await startServer(bin, gpuDir);
      servers.push(srv);
      const run = (await api(srv.url, 'runs'))[0];
      const host = (await api(srv.url, 'hosts', { run, tag: 'memory_profile' }))[0]?.hostname;
      await h.test('memory pages: memory ID selector changes the view and is kept in the URL (GPU-multi-worker)', async ({ page, shot }) => {
        const data = await api(srv.url, 'data', { run, tag: 'memory_profile', host });
        assert(data.memoryIds.length > 1, 'several allocators');
        await open(page, srv.url, { run, tool: 'memory_profile', host });
        await checkMemorySummary(page, data, data.memoryIds[0]);
        const other = data.memoryIds.find((m) => (data.memoryProfilePerAllocator[m].sampledTimelineSnapshots || []).length > 100) ?? data.memoryIds[1];
        await page.selectOption('[data-role="mp-memory-id"]', other);
        await waitReady(page);
        assertEqual(new URL(page.url()).searchParams.get('memory_id'), other, 'memory ID in the URL');
        await checkMemorySummary(page, data, other);
        await hoverTimeline(page, data, other, 0.5);
        const table = breakdown(data, other);
        assertEqual(await page.locator('[data-table="mp-breakdown"] [data-role="count"]').getAttribute('data-total'), String(table.rows.length), 'breakdown rows');
        await shot();
        // Deep link.
        await page.reload();
        await waitReady(page);
        assertEqual(await page.inputValue('[data-role="mp-memory-id"]'), other, 'memory ID after reload');
        await checkMemorySummary(page, data, other);
      });
    }

    // ---- memory viewer ----
    if (!jaxRun) h.skip('memory pages: memory viewer', 'no jax_train run');
    else {
      const host = (await api(base, 'hosts', { run: jaxRun, tag: 'memory_viewer' }))[0]?.hostname;
      const modules = (await dataText(base, { run: jaxRun, tag: 'module_list' })).split(',').filter((m) => m && m !== 'NO_MODULE');
      const viewerData = async (module) => JSON.parse(await dataText(base, { run: jaxRun, tag: 'memory_viewer', module_name: module, memory_space: '0' }));
      const checkOverview = async (page, d) => {
        const total = d.totalBufferAllocationMib ?? 0;
        const peak = d.peakHeapMib ?? 0;
        sameBytes(await metricValue(page, 'peak'), peak, 'peak memory allocation');
        const detail = (await text(page, '[data-metric="peak"] .metric-detail')).replace(/ with fragmentation$/, '');
        sameBytes(detail, total, 'with fragmentation');
        sameBytes(await metricValue(page, 'peak-unpadded'), d.peakUnpaddedHeapMib ?? 0, 'unpadded peak');
        sameBytes(await metricValue(page, 'arguments'), d.entryComputationParametersMib ?? 0, 'arguments');
        sameBytes(await metricValue(page, 'temporaries'), peak - (d.indefiniteBufferAllocationMib ?? 0), 'temporaries');
      };
      const train = modules.find((m) => m.startsWith('jit_train_step')) ?? modules[0];
      await h.test('memory pages: memory viewer overview equals the API; hovering a buffer shows its details and lifetime', async ({ page, shot }) => {
        const d = await viewerData(train);
        await open(page, base, { run: jaxRun, tool: 'memory_viewer', host, module_name: train });
        // Every module of /module_list (costliest first: suites/layout_units.mjs checks the order).
        assertEqual((await page.locator('[data-role="mv-module"] option').evaluateAll((os) => os.map((o) => o.value))).sort(), [...modules].sort(), 'module selector lists /module_list');
        await checkOverview(page, d);
        assert(d.maxHeap.length > 0, 'buffers at the peak');
        // Hover the largest buffer in the by-size chart (its first column).
        await page.locator('[data-chart="mv-by-size"]').scrollIntoViewIfNeeded();
        const chart = await page.locator('[data-chart="mv-by-size"]').boundingBox();
        const n = d.maxHeap.length;
        const plotW = chart.width - 60 - 16;
        const sizes = d.maxHeap.map((o, i) => ({ o, i })).sort((a, b) => (b.o.logicalBufferSizeMib ?? 0) - (a.o.logicalBufferSizeMib ?? 0) || a.i - b.i);
        await page.mouse.move(chart.x + 60 + plotW / n / 2, chart.y + chart.height - 26);
        await page.waitForFunction(() => document.querySelector('[data-role="mv-details"]')?.dataset.index !== undefined, null, { timeout: 10_000 });
        const index = Number(await page.getAttribute('[data-role="mv-details"]', 'data-index'));
        assertEqual(index, sizes[0].i, 'the largest buffer');
        const o = d.maxHeap[index];
        const shown = await props(page, 'mv-buffer');
        assertEqual(shown.Name, o.instructionName || o.label, 'name');
        sameBytes(shown.Size, o.logicalBufferSizeMib ?? 0, 'size');
        if (o.shapeString) assertEqual(shown.Shape, o.shapeString, 'shape');
        if (o.tfOpName) assertEqual(shown['Framework op'], o.tfOpName, 'framework op');
        if (o.groupName) assertEqual(shown['Allocation type'], o.groupName, 'allocation type');
        if (o.opCode) assertEqual(shown.Category, `${o.opCode} operation`, 'category');
        const span = d.logicalBufferSpans?.[String(o.logicalBufferId)];
        const last = d.heapSizes.length - 1;
        const expected = span ? [span.start ?? 0, (span.limit ?? 0) < 0 ? last : span.limit ?? 0] : [0, last];
        assertEqual(await page.getAttribute('[data-role="mv-details"]', 'data-span'), expected.join(','), 'lifetime drawn on the working-space chart');
        await page.locator('[data-role="mv-graph-link"]').waitFor();
        // Hover a column of the program-order chart: the buffer in that order.
        await page.locator('[data-chart="mv-by-order"]').scrollIntoViewIfNeeded();
        const byOrder = await page.locator('[data-chart="mv-by-order"]').boundingBox();
        const k = n - 1;
        await page.mouse.move(byOrder.x + 60 + (plotW / n) * (k + 0.5), byOrder.y + byOrder.height - 26);
        await page.waitForFunction((want) => document.querySelector('[data-role="mv-details"]')?.dataset.index === want, String(k), { timeout: 10_000 });
        // A block of the allocation timeline: its own step range.
        const blocks = (d.bufferBlocks ?? []).map((b, i) => ({ b, i })).filter(({ b }) => (b.size ?? 0) > 0);
        const target = blocks.find(({ b }) => b.logicalBufferId !== undefined && b.logicalBufferId !== -1 && !(b.category || '').startsWith('Allocation'));
        if (target) {
          const rect = page.locator(`[data-role="mv-timeline"] rect[data-block="${blocks.indexOf(target)}"]`);
          await rect.scrollIntoViewIfNeeded();
          await rect.hover({ force: true });
          await page.waitForFunction((k) => document.querySelector('[data-role="mv-details"]')?.dataset.selected === k, `block-${blocks.indexOf(target)}`, { timeout: 10_000 });
          assertEqual(await page.getAttribute('[data-role="mv-details"]', 'data-span'), `${target.b.startStep ?? 0},${target.b.endStep ?? 0}`, 'block lifetime');
          assertEqual((await props(page, 'mv-buffer')).Name, target.b.name, 'block name');
        }
        await shot();
        const table = { cols: [{ id: 'order', type: 'number' }, { id: 'name', type: 'string' }, { id: 'size_mib', type: 'number' }], rows: d.maxHeap.map((x, i) => ({ c: [{ v: i }, { v: x.instructionName ?? '' }, { v: x.logicalBufferSizeMib ?? 0 }] })) };
        assertEqual(await page.locator('[data-table="mv-buffers"] [data-role="count"]').getAttribute('data-total'), String(table.rows.length), 'buffer table rows');
      });
      await h.test('memory pages: memory viewer module selector is kept in the URL and restored by a deep link', async ({ page, shot }) => {
        await open(page, base, { run: jaxRun, tool: 'memory_viewer', host });
        // The first listed (the costliest) by default, in the URL; then another one.
        const first = await page.locator('[data-role="mv-module"] option').first().getAttribute('value');
        assertEqual(new URL(page.url()).searchParams.get('module_name'), first, 'first module by default, in the URL');
        const other = modules.find((m) => m !== first && m.startsWith('jit_stage')) ?? modules.find((m) => m !== first);
        await page.selectOption('[data-role="mv-module"]', other);
        await page.waitForFunction((m) => document.querySelector('[data-chart="memory-viewer"]')?.dataset.module === m && document.querySelector('[data-chart="memory-viewer"]')?.dataset.ready === 'true', other);
        await waitReady(page);
        assertEqual(new URL(page.url()).searchParams.get('module_name'), other, 'module in the URL');
        await checkOverview(page, await viewerData(other));
        await page.reload();
        await waitReady(page);
        assertEqual(await page.inputValue('[data-role="mv-module"]'), other, 'module after reload');
        await checkOverview(page, await viewerData(other));
        await shot();
      });
    }
    const noHloRun = runs.find((r) => r.includes('tf_custom_loop'));
    if (noHloRun) {
      await h.test('memory pages: memory viewer on a run without HLO says so', async ({ page }) => {
        await open(page, base, { run: noHloRun, tool: 'memory_viewer' });
        await page.locator('[data-role="mv-no-module"], [data-role="mv-empty"]').first().waitFor();
      });
    }

    // ---- tf.data bottleneck analysis ----
    const csp = (await fetch(base)).headers.get('content-security-policy') || '';
    const wasmAllowed = /'wasm-unsafe-eval'|'unsafe-eval'/.test(csp);
    if (!wasmAllowed) console.log("NOTE memory pages: the server's Content-Security-Policy forbids WebAssembly ('wasm-unsafe-eval' missing): the tf.data graph is tested with the policy bypassed");
    const tfRun = runs.find((r) => r.includes('tf_custom_loop'));
    if (!tfRun) h.skip('memory pages: tf.data', 'no tf_custom_loop run');
    else {
      const tool = 'tf_data_bottleneck_analysis';
      const data = await api(base, 'data', { run: tfRun, tag: tool });
      const find = (id) => data.find((t) => t.cols.some((c) => c.id === id));
      const graph = find('parent');
      const summary = find('num_slow_calls');
      const analysis = find('bottleneck');
      const calls = [...new Set(graph.rows.map((r) => `${r.c[0].v}/${r.c[1].v}#${r.c[2].v}`))];
      const nodesOf = (key) => graph.rows.filter((r) => `${r.c[0].v}/${r.c[1].v}#${r.c[2].v}` === key);
      await h.test('memory pages: tf.data summary, tables and pipeline graph (critical path bold, bottleneck red), rank in the URL', async ({ page, consoleErrors, shot }) => {
        let p = page;
        let close = async () => undefined;
        if (!wasmAllowed) {
          const context = await h.browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true, acceptDownloads: true });
          p = await context.newPage();
          p.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
          p.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
          close = () => context.close();
        }
        try {
          await open(p, base, { run: tfRun, tool });
          assertEqual(await p.getAttribute('[data-role="tfd-input-bound"]', 'data-value'), analysis.p.is_input_bound, 'input bound');
          assertEqual(await text(p, '[data-role="tfd-message"]'), analysis.p.summary_message, 'summary message');
          assertEqual(await p.locator('[data-table="tfd-pipelines"] [data-role="count"]').getAttribute('data-total'), String(summary.rows.length), 'pipelines');
          assertEqual(await p.locator('[data-table="tfd-bottlenecks"] [data-role="count"]').getAttribute('data-total'), String(analysis.rows.length), 'bottlenecks');
          const svg = p.locator('[data-role="tfd-svg"]');
          await svg.waitFor();
          const key0 = calls[0];
          const rows = nodesOf(key0);
          assertEqual(await svg.locator('g.node').count(), rows.length, 'one node per iterator');
          const bottleneck = rows.find((r) => r.c[5].v === 2);
          assert(bottleneck, 'a bottleneck in the slowest call');
          const red = await svg.locator(`g.node[id="iter-${bottleneck.c[3].v}"] path, g.node[id="iter-${bottleneck.c[3].v}"] polygon`).first().getAttribute('stroke');
          assertEqual(red, '#d62728', 'bottleneck drawn red');
          const critical = rows.filter((r) => r.c[5].v === 1);
          for (const r of critical.slice(0, 3)) {
            const w = await svg.locator(`g.node[id="iter-${r.c[3].v}"] path, g.node[id="iter-${r.c[3].v}"] polygon`).first().getAttribute('stroke-width');
            assertEqual(w, '2.5', `critical iterator ${r.c[3].v} in bold`);
          }
          assertEqual(await p.locator('[data-table="tfd-iterators"] [data-role="count"]').getAttribute('data-total'), String(rows.length), 'iterator table');
          await shot();
          await p.screenshot({ path: join(artifacts, 'memory_pages_tf.data_graph.png'), fullPage: true });
          // Another call rank: URL, graph and table follow; a deep link restores it.
          if (calls.length > 1) {
            const rank = String(graph.rows.find((r) => `${r.c[0].v}/${r.c[1].v}#${r.c[2].v}` === calls[1]).c[2].v);
            await p.selectOption('[data-role="tfd-rank"]', rank);
            await p.waitForFunction((r) => document.querySelector('[data-chart="tfd-graph"]')?.dataset.rank === r && document.querySelector('[data-chart="tfd-graph"]')?.dataset.ready === 'true', rank);
            assertEqual(new URL(p.url()).searchParams.get('tfd.rank'), rank, 'rank in the URL');
            assertEqual(await svg.locator('g.node').count(), nodesOf(calls[1]).length, 'nodes of that call');
            await p.reload();
            await waitReady(p);
            assertEqual(await p.inputValue('[data-role="tfd-rank"]'), rank, 'rank after reload');
            await svg.waitFor();
            assertEqual(await p.locator('[data-table="tfd-iterators"] [data-role="count"]').getAttribute('data-total'), String(nodesOf(calls[1]).length), 'iterators after reload');
          }
          await checkTable(p, 'tfd-pipelines', summary, 'max');
        } finally {
          await close();
        }
      });
      if (!wasmAllowed) {
        await h.test('memory pages: tf.data graph refused by the page policy is explained, iterators still listed', async ({ page }) => {
          await open(page, base, { run: tfRun, tool });
          await page.locator('[data-role="tfd-graph-error"]').waitFor();
          assert((await text(page, '[data-role="tfd-graph-error"]')).includes('WebAssembly'), 'explains WebAssembly is refused');
          assertEqual(await page.locator('[data-table="tfd-iterators"] [data-role="count"]').getAttribute('data-total'), String(nodesOf(calls[0]).length), 'iterator table');
        }, { allowConsole: /WebAssembly|wasm|Content Security Policy|unsafe-eval/i });
      }
    }
    if (jaxRun) {
      await h.test('memory pages: tf.data on a profile without tf.data events shows the message', async ({ page, shot }) => {
        const data = await api(base, 'data', { run: jaxRun, tag: 'tf_data_bottleneck_analysis' });
        const analysis = data.find((t) => t.cols.some((c) => c.id === 'bottleneck'));
        await open(page, base, { run: jaxRun, tool: 'tf_data_bottleneck_analysis' });
        assertEqual(await text(page, '[data-role="tfd-empty"]'), analysis.p.summary_message, "the tool's message");
        await page.locator('[data-role="notes"]').waitFor();
        await shot();
      });
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}
