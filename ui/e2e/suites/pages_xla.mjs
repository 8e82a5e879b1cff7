// Browser tests of the XLA pages: op profile, HLO stats, roofline model, graph viewer.
// On jax_train (main server; CPU only, so mostly empty device data) and, when the shared
// external test data is present, on servers of their own over third-party profiles with
// device data: JAX on MI300X with HLO (jax08_gemm), TF on V100 (GPU-multi-worker) and TPU
// v6e (tpu_inference_2). Shown numbers are checked against the API's answers.
//
// The graph is drawn by Graphviz in WebAssembly, which the page's Content-Security-Policy
// must allow ('wasm-unsafe-eval'); when the server's policy does not, the graph tests run
// in a browser context that ignores the policy (and say so), and one test checks the page
// explains the refusal.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { assert, assertEqual, startServer } from '../harness.mjs';

const percent = (f) => (Number.isNaN(f) ? '-' : f < 0.00001 ? '0.0%' : `${(f * 100).toFixed(2)}%`);
const rowsOf = (table) => table?.rows ?? [];
const col = (table, id) => (table.cols ?? []).findIndex((c) => c.id === id);
const val = (row, i) => row.c[i]?.v ?? null;

export async function register(ctx) {
  const { h, base, runs, api, open, waitReady, checkTable, text, external, artifacts } = ctx;
  const bin = process.env.OXPROF_BIN;
  const servers = [];
  try {
    const csp = (await fetch(base)).headers.get('content-security-policy') || '';
    const wasmAllowed = /'wasm-unsafe-eval'|'unsafe-eval'/.test(csp);
    if (!wasmAllowed) console.log("NOTE xla pages: the server's Content-Security-Policy forbids WebAssembly ('wasm-unsafe-eval' missing): graph rendering is tested with the policy bypassed");

    /** A page for graph rendering: the test's own, or one in a context that ignores the CSP. */
    const graphPage = async (page, consoleErrors) => {
      if (wasmAllowed) return { p: page, close: async () => undefined };
      const context = await h.browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
      const p = await context.newPage();
      p.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
      p.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
      return { p, close: () => context.close() };
    };
    const shotOf = async (p, name) => (await p.evaluate(() => window.scrollTo(0, 0)), p.screenshot({ path: join(artifacts, `${name.replace(/[^A-Za-z0-9_-]+/g, '_')}.png`), fullPage: true }));

    /** Whether the server answers graph_viewer type=dot. */
    const dotSupported = async (srv, run, module, node) => {
      const url = new URL('/data/plugin/profile/data', srv);
      for (const [k, v] of Object.entries({ run, tag: 'graph_viewer', module_name: module, node_name: node, type: 'dot' })) url.searchParams.set(k, v);
      const r = await fetch(url);
      const body = await r.text();
      return { ok: r.ok && body.includes('digraph'), why: `HTTP ${r.status}: ${body.slice(0, 160)}` };
    };
    const dataText = async (srv, params) => {
      const url = new URL('/data/plugin/profile/data', srv);
      for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
      const r = await fetch(url);
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
      return r.text();
    };
    const moduleList = async (srv, run) => (await dataText(srv, { run, tag: 'module_list' }).catch(() => '')).split(',').filter((m) => m && m !== 'NO_MODULE');

    // ---- op profile ----
    const checkOpProfile = async (page, srv, run, host, data) => {
      await open(page, srv, { run, tool: 'op_profile', host });
      await page.locator('[data-page="op_profile"]').waitFor();
      const root = data.byProgramExcludeIdle ?? data.byProgram;
      assertEqual(await text(page, '[data-role="device-type"]'), data.deviceType || 'TPU', 'device type');
      const flops = root?.metrics?.rawTime ? (root.metrics.uncappedFlops || 0) : NaN;
      assertEqual(await text(page, '[data-role="overall-flops"]'), percent(flops), 'overall FLOPS utilization');
      const hbm = root?.metrics?.bandwidthUtils?.[0] || NaN;
      assert((await text(page, '[data-role="overall-bw-0"]')).includes(percent(hbm)), `HBM utilization ${percent(hbm)}`);
      const names = await page.locator('tr[data-level="1"]').evaluateAll((rs) => rs.map((r) => r.dataset.name));
      assertEqual(names, (root?.children ?? []).map((c) => c.name), 'programs in the API order');
      const fractions = await page.locator('tr[data-level="1"]').evaluateAll((rs) => rs.map((r) => Number(r.dataset.timeFraction)));
      assertEqual(fractions, (root?.children ?? []).map((c) => (c.metrics?.rawTime && root.metrics?.rawTime ? c.metrics.rawTime / root.metrics.rawTime : 0)), 'time fractions');
      return root;
    };

    // jax_train (main server).
    const jaxRun = runs.find((r) => r.includes('jax_train'));
    if (jaxRun) {
      const host = (await api(base, 'hosts', { run: jaxRun, tag: 'op_profile' }))[0]?.hostname;
      await h.test('xla pages: op profile on jax_train (CPU only: empty device tree explained)', async ({ page, shot }) => {
        const data = await api(base, 'data', { run: jaxRun, tag: 'op_profile', host });
        const root = await checkOpProfile(page, base, jaxRun, host, data);
        if (!(root?.children ?? []).length) await page.locator('[data-role="op-empty"]').waitFor();
        await shot();
      });
      await h.test('xla pages: HLO stats on jax_train', async ({ page, shot }) => {
        const data = await api(base, 'data', { run: jaxRun, tag: 'hlo_stats', host });
        const table = Array.isArray(data) ? data[0] : data;
        await open(page, base, { run: jaxRun, tool: 'hlo_stats', host });
        assertEqual(await page.locator('[data-table="hlo"] [data-role="count"]').getAttribute('data-total'), String(rowsOf(table).length), 'rows');
        await shot();
      });
      await h.test('xla pages: roofline on jax_train (no device peaks)', async ({ page, shot }) => {
        const data = await api(base, 'data', { run: jaxRun, tag: 'roofline_model', host });
        await open(page, base, { run: jaxRun, tool: 'roofline_model', host });
        assertEqual(await text(page, '[data-props="device-info"] [data-prop="Device type"]'), data[0].p.device_type || 'unknown', 'device type');
        if (!Number(data[0].p.peak_flop_rate)) await page.locator('[data-role="no-peaks"]').waitFor();
        await shot();
      });
      const modules = await moduleList(base, jaxRun);
      const module = modules.find((m) => m.startsWith('jit_train_step')) ?? modules[0];
      await h.test('xla pages: graph viewer on jax_train: modules, text views in the URL', async ({ page, shot }) => {
        await open(page, base, { run: jaxRun, tool: 'graph_viewer', host, module_name: module, 'gv.view': 'short_txt' });
        const options = await page.locator('[data-role="gv-module"] option').evaluateAll((os) => os.map((o) => o.value));
        assertEqual([...options].sort(), [...modules].sort(), 'module selector lists /module_list');
        const expected = await dataText(base, { run: jaxRun, tag: 'graph_viewer', module_name: module, type: 'short_txt' });
        assertEqual((await page.locator('[data-role="gv-text"]').innerText()).trim(), expected.trim(), 'short text equals the API');
        await page.selectOption('[data-role="gv-view"]', 'long_txt');
        await waitReady(page);
        assertEqual(new URL(page.url()).searchParams.get('gv.view'), 'long_txt', 'view in the URL');
        const long = await dataText(base, { run: jaxRun, tag: 'graph_viewer', module_name: module, type: 'long_txt' });
        assertEqual((await page.locator('[data-role="gv-text"]').innerText()).trim(), long.trim(), 'long text equals the API');
        await shot();
      });
      // The page's drawing (Graphviz in the browser, centre, pan/zoom, click to re-centre) on
      // XProf's own DOT for jax_train (from its type=graph HTML), whatever the server answers.
      const xprofHtml = join(ctx.repo, 'testdata/profiles/jax_train/xprof_out/graph_viewer.jit__normal(16).graph.html.gz');
      if (existsSync(xprofHtml) && modules.includes('jit__normal(16)')) {
        const xprofDot = /const data = `([\s\S]*?)`;/.exec(gunzipSync(readFileSync(xprofHtml)).toString('utf8'))?.[1] ?? '';
        await h.test('xla pages: graph viewer draws XProf\'s DOT: centre node, zoom, pan, click re-centres', async ({ page, consoleErrors }) => {
          const { p, close } = await graphPage(page, consoleErrors);
          const asked = [];
          try {
            await p.route(/type=dot/, (route) => {
              asked.push(new URL(route.request().url()).searchParams.get('node_name'));
              return route.fulfill({ status: 200, contentType: 'text/plain', body: xprofDot });
            });
            await open(p, base, { run: jaxRun, tool: 'graph_viewer', host, module_name: 'jit__normal(16)', node_name: 'broadcast_multiply_fusion' });
            await p.locator('[data-role="gv-svg"]').waitFor();
            assertEqual(await p.locator('[data-center]').getAttribute('data-node-name'), 'broadcast_multiply_fusion', 'centre (a fusion cluster)');
            assert(Number(await p.locator('[data-role="gv-summary"]').getAttribute('data-nodes')) > 100, 'nodes drawn');
            const svg = p.locator('[data-role="gv-svg"]');
            const start = await svg.getAttribute('viewBox');
            await p.click('[data-role="gv-fit"]');
            const fitted = await svg.getAttribute('viewBox');
            assert(fitted !== start, 'the first view zooms on the centre of a large graph');
            await p.click('[data-role="gv-zoom-in"]');
            const zoomed = (await svg.getAttribute('viewBox')).split(' ').map(Number);
            assert(zoomed[2] < Number(fitted.split(' ')[2]), 'zoom in narrows the view box');
            const stage = await p.locator('[data-role="gv-stage"]').boundingBox();
            await p.mouse.move(stage.x + 300, stage.y + 300);
            await p.mouse.down();
            await p.mouse.move(stage.x + 400, stage.y + 350, { steps: 4 });
            await p.mouse.up();
            const panned = (await svg.getAttribute('viewBox')).split(' ').map(Number);
            assert(panned[0] < zoomed[0] && panned[1] < zoomed[1], `drag pans (${zoomed} → ${panned})`);
            await p.mouse.move(stage.x + 300, stage.y + 300);
            await p.mouse.wheel(0, -400);
            assert(Number((await svg.getAttribute('viewBox')).split(' ')[2]) < panned[2], 'wheel zooms in');
            await p.click('[data-role="gv-fit"]');
            await p.locator('g.node[data-node-name="copy.9"]').click();
            await p.waitForFunction(() => document.querySelector('[data-center]')?.getAttribute('data-node-name') === 'copy.9');
            assertEqual(asked, ['broadcast_multiply_fusion', 'copy.9'], 'DOT requests');
            assertEqual(new URL(p.url()).searchParams.get('node_name'), 'copy.9', 'clicked node in the URL');
            await shotOf(p, 'xla pages graph viewer draws XProf DOT');
          } finally {
            await close();
          }
        });
      }
      const node = 'dot.1';
      const dot = await dotSupported(base, jaxRun, module, node);
      if (dot.ok) {
        await h.test('xla pages: graph viewer on jax_train renders the neighbourhood SVG of the requested node', async ({ page, consoleErrors }) => {
          const { p, close } = await graphPage(page, consoleErrors);
          try {
            await open(p, base, { run: jaxRun, tool: 'graph_viewer', host, module_name: module, node_name: node });
            await p.locator('[data-role="gv-svg"]').waitFor();
            assertEqual(await p.locator('[data-center]').first().getAttribute('data-node-name'), node, 'centre node drawn');
            await shotOf(p, 'xla pages graph viewer on jax_train');
          } finally {
            await close();
          }
        });
      } else h.skip('xla pages: graph viewer on jax_train renders the neighbourhood SVG of the requested node', `the server has no type=dot graph yet (${dot.why})`);
      if (!wasmAllowed && dot.ok) {
        await h.test('xla pages: graph viewer explains a Content-Security-Policy that forbids WebAssembly', async ({ page }) => {
          await open(page, base, { run: jaxRun, tool: 'graph_viewer', host, module_name: module, node_name: node });
          assert((await text(page, '[data-role="gv-error"]')).includes('WebAssembly'), 'error explains WebAssembly');
        }, { allowConsole: /WebAssembly|wasm|Aborted/i });
      }
    } else h.skip('xla pages: jax_train', 'no jax_train run in the served logdir');

    // Third-party profiles with device data.
    const gemmDir = join(external, 'AMD-AGI-TraceLens/tests/traces/mi300/jax08_gemm');
    if (bin && existsSync(gemmDir)) {
      const srv = await startServer(bin, gemmDir);
      servers.push(srv);
      const run = (await api(srv.url, 'runs'))[0];
      const host = (await api(srv.url, 'hosts', { run, tag: 'op_profile' }))[0]?.hostname;
      const data = await api(srv.url, 'data', { run, tag: 'op_profile', host });
      const byCategory = await api(srv.url, 'data', { run, tag: 'op_profile', host, group_by: 'category' });
      await h.test('xla pages: op profile on a GPU profile (MI300X): numbers, tree, details, controls in the URL', async ({ page, shot }) => {
        const root = await checkOpProfile(page, srv.url, run, host, data);
        // Expand the first program and its first category, select its first op.
        const program = root.children[0];
        const category = program.children[0];
        const op = category.children[0];
        await page.locator('tr[data-level="1"]').first().click();
        await page.locator('tr[data-level="2"]').first().click();
        assertEqual(await page.locator('tr[data-level="2"]').evaluateAll((rs) => rs.map((r) => r.dataset.name)), program.children.slice(0, 10).map((c) => c.name), 'categories of the program');
        await page.locator('tr[data-level="3"]').first().click();
        const path = `${program.name}|${category.name}|${op.name}`;
        assertEqual(new URL(page.url()).searchParams.get('op.sel'), path, 'selection in the URL');
        assertEqual(await text(page, '[data-role="detail-name"]'), op.name, 'details card: name');
        assertEqual(await text(page, '[data-field="expression"]'), op.xla.expression, 'details card: expression');
        assertEqual(await text(page, '[data-field="provenance"]'), op.xla.provenance, 'details card: provenance');
        assertEqual(await text(page, '[data-field="occurrences"]'), String(op.metrics.occurrences), 'details card: occurrences');
        const link = page.locator('[data-role="graph-link"]');
        assertEqual(await link.getAttribute('data-module'), program.name, 'graph link module');
        await shot();
        // Controls: ops per group, filter, group by category; all in the URL; a reload restores them.
        await page.selectOption('[data-role="op-limit"]', '25');
        await page.fill('[data-role="op-filter"]', 'broadcast');
        const filtered = await page.locator('tr[data-level="1"]').evaluateAll((rs) => rs.map((r) => r.dataset.name));
        assert(filtered.length > 0 && filtered.every((n) => n.startsWith('jit_broadcast_in_dim')), `filtered programs: ${filtered}`);
        await page.selectOption('[data-role="group-by"]', 'category');
        await page.waitForFunction(() => document.querySelector('[data-chart="op-profile"]')?.dataset.ready === 'true');
        const url = new URL(page.url());
        assertEqual([url.searchParams.get('group_by'), url.searchParams.get('op.limit'), url.searchParams.get('op.q')], ['category', '25', 'broadcast'], 'controls in the URL');
        await page.fill('[data-role="op-filter"]', '');
        const catRoot = byCategory.byCategoryExcludeIdle ?? byCategory.byCategory;
        assertEqual(await page.locator('tr[data-level="1"]').evaluateAll((rs) => rs.map((r) => r.dataset.name)), catRoot.children.map((c) => c.name), 'categories in the API order');
        await page.selectOption('[data-role="op-sort"]', 'wasted');
        await page.reload();
        await waitReady(page);
        assertEqual(await page.locator('[data-role="group-by"]').inputValue(), 'category', 'group by restored');
        assertEqual(await page.locator('[data-role="op-sort"]').inputValue(), 'wasted', 'sort restored');
        assertEqual(await page.locator('[data-role="op-limit"]').inputValue(), '25', 'limit restored');
        await shot('.by_category');
      });
      await h.test('xla pages: op profile deep link restores the selected op and links to the graph viewer', async ({ page }) => {
        const program = data.byProgramExcludeIdle.children[0];
        const path = `${program.name}|${program.children[0].name}|${program.children[0].children[0].name}`;
        await open(page, srv.url, { run, tool: 'op_profile', host, 'op.sel': path });
        assertEqual(await text(page, '[data-role="detail-name"]'), program.children[0].children[0].name, 'details restored');
        await page.locator('[data-role="graph-link"]').click();
        await waitReady(page);
        const url = new URL(page.url());
        assertEqual([url.searchParams.get('tool'), url.searchParams.get('module_name'), url.searchParams.get('node_name')], ['graph_viewer', program.name, 'custom-call.1'], 'graph viewer link');
        assertEqual(await page.locator('[data-role="gv-module"]').inputValue(), program.name, 'module selected');
        // (The graph itself is tested below; here it may fail to draw: no type=dot yet, or WebAssembly refused.)
      }, { allowConsole: /WebAssembly|wasm|Aborted|400 \(Bad Request\)/i });

      await h.test('xla pages: HLO stats on a GPU profile: charts, table, sort, filters in the URL, CSV', async ({ page, shot }) => {
        const table = await api(srv.url, 'data', { run, tag: 'hlo_stats', host });
        await open(page, srv.url, { run, tool: 'hlo_stats', host });
        for (const key of ['hlo-category', 'hlo-op', 'hlo-remat', 'hlo-outside', 'hlo-flop-rate']) await page.locator(`[data-chart="${key}"]`).waitFor();
        const shown = await page.locator('[data-table="hlo"] thead th').evaluateAll((ths) => ths.map((t) => t.dataset.col));
        await checkTable(page, 'hlo', table, 'total_self_time', { hidden: table.cols.map((c) => c.id).filter((id) => !shown.includes(id)) });
        await page.selectOption('[data-role="hlo-category"]', 'loop fusion');
        const ci = col(table, 'category');
        assertEqual(await page.locator('[data-table="hlo"] [data-role="count"]').getAttribute('data-total'), String(rowsOf(table).filter((r) => val(r, ci) === 'loop fusion').length), 'category filter');
        assertEqual(new URL(page.url()).searchParams.get('hlo.cat'), 'loop fusion', 'category filter in the URL');
        await page.reload();
        await waitReady(page);
        assertEqual(await page.locator('[data-role="hlo-category"]').inputValue(), 'loop fusion', 'filter restored');
        await shot();
      });

      await h.test('xla pages: roofline on a GPU profile: device info, rooflines and ridge points, points, filters', async ({ page, shot }) => {
        const tables = await api(srv.url, 'data', { run, tag: 'roofline_model', host });
        const table = tables[0];
        const p = table.p;
        await open(page, srv.url, { run, tool: 'roofline_model', host });
        assertEqual(await text(page, '[data-props="device-info"] [data-prop="Device type"]'), p.device_type, 'device type');
        assertEqual(await text(page, '[data-props="device-info"] [data-prop="Peak HBM bandwidth per GPU"]'), `${p.peak_hbm_bw} GiB/s`, 'peak HBM');
        assertEqual(await text(page, '[data-props="device-info"] [data-prop="HBM ridge point"]'), `${Number(p.hbm_ridge_point).toLocaleString('en-US', { maximumFractionDigits: 3 })} FLOP/byte`, 'HBM ridge point');
        await page.locator('[data-chart="roofline-ops"]').waitFor();
        // Points: op rows (step Total, with infeed) with FLOPs and a known bound.
        const idx = (id) => col(table, id);
        const opRows = rowsOf(table).filter((r) => val(r, idx('step')) === 'Total' && val(r, idx('include_infeed_outfeed')) === true);
        const placed = opRows.filter((r) => val(r, idx('bottleneck_operational_intensity')) > 0 && val(r, idx('measured_flop_rate')) > 0 && val(r, idx('bound_by')) !== 'Unknown');
        const info = page.locator('[data-role="roof-point-count"]');
        assertEqual([await info.getAttribute('data-points'), await info.getAttribute('data-rows')], [String(placed.length), String(opRows.length)], 'points placed');
        // A click on an op's point selects that op (filter and URL); the chart says where it drew its points.
        const target = placed.find((r) => val(r, idx('category')) !== 'Program');
        if (target) {
          const chart = page.locator('[data-chart="roofline-ops"]');
          const pixels = JSON.parse(await chart.getAttribute('data-point-pixels'));
          const [, px, py] = pixels.find(([n]) => n === String(val(target, idx('operation'))));
          await chart.click({ position: { x: px, y: py } });
          const name = String(val(target, idx('operation')));
          await page.waitForFunction((n) => document.querySelector('[data-role="roof-op"]')?.value === n, name, { timeout: 5000 });
          assertEqual(new URL(page.url()).searchParams.get('roofline_op_name'), name, 'clicked op in the URL');
          await page.fill('[data-role="roof-op"]', '');
          await page.locator('[data-role="roof-op"]').dispatchEvent('input');
        }
        await page.selectOption('[data-role="roof-category"]', 'custom-call');
        assertEqual(await page.locator('[data-table="roof-ops"] [data-role="count"]').getAttribute('data-total'), String(opRows.filter((r) => val(r, idx('category')) === 'custom-call').length), 'category filter');
        await page.fill('[data-role="roof-op"]', 'gemm_fusion_dot_general.1');
        await page.locator('[data-role="roof-op"]').dispatchEvent('change');
        assertEqual(new URL(page.url()).searchParams.get('roofline_op_name'), 'gemm_fusion_dot_general.1', 'op in the URL');
        await page.reload();
        await waitReady(page);
        assertEqual(await page.locator('[data-role="roof-op"]').inputValue(), 'gemm_fusion_dot_general.1', 'op restored');
        assertEqual(await page.locator('[data-role="roof-category"]').inputValue(), 'custom-call', 'category restored');
        await shot();
      });

      const modules = await moduleList(srv.url, run);
      const module = 'jit_dot(49)';
      await h.test('xla pages: graph viewer on a GPU profile: module list, program id deep link, text view', async ({ page }) => {
        await open(page, srv.url, { run, tool: 'graph_viewer', host, program_id: '49', 'gv.view': 'short_txt', node_name: 'custom-call.1' });
        // Every module, the costliest first (its device time in op profile).
        const listed = await page.locator('[data-role="gv-module"] option').evaluateAll((os) => os.map((o) => o.value));
        assertEqual([...listed].sort(), [...modules].sort(), 'modules');
        const op = await api(srv.url, 'data', { run, tag: 'op_profile', host });
        const time = new Map(((op.byProgramExcludeIdle ?? op.byProgram)?.children ?? []).map((c) => [c.name, Number(c.metrics?.rawTime ?? 0)]));
        assert(listed.every((m, i) => i === 0 || (time.get(listed[i - 1]) ?? -1) >= (time.get(m) ?? -1)), `modules by device time: ${listed}`);
        assertEqual(await page.locator('[data-role="gv-module"]').inputValue(), module, 'program id resolved to its module');
        assertEqual(new URL(page.url()).searchParams.get('module_name'), module, 'module in the URL');
        assert((await text(page, '[data-role="gv-text-mark"]')).includes('custom-call.1 ='), 'op line marked in the text');
      });
      const dot = await dotSupported(srv.url, run, module, 'custom-call.1');
      if (dot.ok) {
        await h.test('xla pages: graph viewer on a GPU profile: SVG around the node, click re-centres, pan/zoom', async ({ page, consoleErrors }) => {
          const { p, close } = await graphPage(page, consoleErrors);
          try {
            await open(p, srv.url, { run, tool: 'graph_viewer', host, module_name: module, node_name: 'custom-call.1' });
            await p.locator('[data-role="gv-svg"]').waitFor();
            assertEqual(await p.locator('[data-center]').first().getAttribute('data-node-name'), 'custom-call.1', 'centre');
            const before = await p.locator('[data-role="gv-svg"]').getAttribute('viewBox');
            await p.click('[data-role="gv-zoom-in"]');
            assert((await p.locator('[data-role="gv-svg"]').getAttribute('viewBox')) !== before, 'zoom changes the view box');
            await p.click('[data-role="gv-fit"]');
            const other = await p.locator('g.node.gv-clickable:not([data-center])').evaluateAll((gs) => gs.map((g) => g.dataset.nodeName));
            assert(other.length > 0, 'other nodes drawn');
            await p.locator(`g.node[data-node-name="${other[0]}"]`).click();
            await p.waitForFunction((n) => document.querySelector('[data-center]')?.getAttribute('data-node-name') === n, other[0], { timeout: 30_000 });
            assertEqual(new URL(p.url()).searchParams.get('node_name'), other[0], 're-centred node in the URL');
            await shotOf(p, 'xla pages graph viewer on a GPU profile');
          } finally {
            await close();
          }
        });
      } else h.skip('xla pages: graph viewer on a GPU profile: SVG around the node, click re-centres, pan/zoom', `the server has no type=dot graph yet (${dot.why})`);
    } else h.skip('xla pages: GPU profile with HLO (jax08_gemm)', `no ${gemmDir}`);

    const gpuDir = join(external, 'openxla-xprof/demo/plugins/profile/GPU-multi-worker');
    if (bin && existsSync(gpuDir)) {
      const srv = await startServer(bin, gpuDir);
      servers.push(srv);
      const run = (await api(srv.url, 'runs'))[0];
      const host = (await api(srv.url, 'hosts', { run, tag: 'op_profile' }))[0]?.hostname;
      await h.test('xla pages: GPU-multi-worker (TF, V100): op profile, HLO stats, roofline, graph viewer without HLO', async ({ page, shot }) => {
        const data = await api(srv.url, 'data', { run, tag: 'op_profile', host });
        await checkOpProfile(page, srv.url, run, host, data);
        await shot('.op_profile');
        const hlo = await api(srv.url, 'data', { run, tag: 'hlo_stats', host });
        await open(page, srv.url, { run, tool: 'hlo_stats', host });
        assertEqual(await page.locator('[data-table="hlo"] [data-role="count"]').getAttribute('data-total'), String(rowsOf(hlo).length), 'HLO rows');
        const roof = await api(srv.url, 'data', { run, tag: 'roofline_model', host });
        await open(page, srv.url, { run, tool: 'roofline_model', host });
        assertEqual(await text(page, '[data-props="device-info"] [data-prop="Device type"]'), roof[0].p.device_type || 'unknown', 'device type');
        await shot('.roofline');
        await open(page, srv.url, { run, tool: 'graph_viewer', host });
        await page.locator('[data-role="gv-no-module"]').waitFor();
      });
    }

    const tpuFile = join(external, 'openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb');
    if (bin && existsSync(tpuFile)) {
      const srv = await startServer(bin, tpuFile);
      servers.push(srv);
      const run = (await api(srv.url, 'runs'))[0];
      const host = (await api(srv.url, 'hosts', { run, tag: 'op_profile' }))[0]?.hostname;
      await h.test('xla pages: TPU profile: op profile by category down to fusion children; roofline VMEM/HBM lines', async ({ page, shot }) => {
        const data = await api(srv.url, 'data', { run, tag: 'op_profile', host, group_by: 'category' });
        const root = data.byCategoryExcludeIdle;
        await open(page, srv.url, { run, tool: 'op_profile', host, group_by: 'category' });
        assertEqual(await page.locator('tr[data-level="1"]').evaluateAll((rs) => rs.map((r) => r.dataset.name)), root.children.map((c) => c.name), 'categories');
        const fusion = root.children.find((c) => c.name === 'loop fusion');
        if (fusion) {
          await page.locator('tr[data-level="1"][data-name="loop fusion"]').click();
          await page.locator('tr[data-level="2"]').first().click();
          await page.locator('tr[data-level="3"]').first().click();
          const children = fusion.children[0].children[0].children.map((c) => c.name);
          assertEqual(await page.locator('tr[data-level="4"]').evaluateAll((rs) => rs.map((r) => r.dataset.name)), children.slice(0, 10), 'fusion children');
          await page.locator('tr[data-level="4"]').first().click();
          await page.locator('[data-role="fused-note"]').waitFor();
        }
        await shot();
        const roof = await api(srv.url, 'data', { run, tag: 'roofline_model', host });
        await open(page, srv.url, { run, tool: 'roofline_model', host });
        assertEqual(await text(page, '[data-props="device-info"] [data-prop="VMEM Read ridge point"]'), `${Number(roof[0].p.vmem_read_ridge_point).toLocaleString('en-US', { maximumFractionDigits: 3 })} FLOP/byte`, 'VMEM read ridge point');
        await shot('.roofline');
      });
    }
  } finally {
    for (const s of servers) await s.stop();
  }
}
