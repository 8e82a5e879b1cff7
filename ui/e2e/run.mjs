// End-to-end tests of the web UI in a real browser (Debian chromium + playwright-core)
// against the real `oxprof serve` on committed profiles.
//
//   OXPROF_BIN=path/to/oxprof node e2e/run.mjs
//
// Env: OXPROF_BIN (required), OXPROF_E2E_LOGDIR (default: <repo>/testdata/profiles),
// OXPROF_EXTERNAL_TESTDATA (default: <repo>/../shared/testdata/external; the GPU pages
// use its GPU-multi-worker profile when present), OXPROF_E2E_ARTIFACTS (screenshots,
// default ui/e2e-artifacts), OXPROF_PYTHON_VENV (default <repo>/.venv-test: a venv with
// jax for the live capture test, skipped without it unless OXPROF_REQUIRE_LIVE=1).
// The servers must serve the UI under test (ui/dist as the binary embedded it, or the build
// in OXPROF_E2E_DEV_DIST): checked first, the run stops with one error otherwise.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Harness, assert, assertEqual, checkServedUi, expectedUiDir, startServer } from './harness.mjs';

const ui = fileURLToPath(new URL('..', import.meta.url));
const repo = resolve(ui, '..');
const bin = process.env.OXPROF_BIN;
if (!bin || !existsSync(bin)) {
  console.error('OXPROF_BIN must name a built oxprof binary');
  process.exit(2);
}
const logdir = process.env.OXPROF_E2E_LOGDIR || join(repo, 'testdata/profiles');
const external = process.env.OXPROF_EXTERNAL_TESTDATA || join(repo, '../shared/testdata/external');
const gpuDir = join(external, 'openxla-xprof/demo/plugins/profile/GPU-multi-worker');
const artifacts = process.env.OXPROF_E2E_ARTIFACTS || join(ui, 'e2e-artifacts');

// ---- helpers over the API and the page ------------------------------------------------

async function api(base, route, params = {}) {
  const url = new URL(`/data/plugin/profile/${route}`, base);
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
  return r.json();
}

/** The tools oxprof's UI offers for a run (the server's registry, `/oxprof/api/run`). */
async function offeredTools(base, run) {
  const r = await fetch(new URL(`/oxprof/api/run?run=${encodeURIComponent(run)}`, base));
  if (!r.ok) throw new Error(`/oxprof/api/run: HTTP ${r.status}`);
  return (await r.json()).offered.map((t) => t.name);
}

async function hostsOf(base, run, tool) {
  return (await api(base, 'hosts', { run, tag: tool })).map((h) => h.hostname);
}

/** Opens a deep link and waits until the page and its charts are drawn. */
async function open(page, base, params) {
  const url = new URL('/', base);
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.set(k, v);
  await page.goto(url.toString());
  await waitReady(page);
}

async function waitReady(page, phase = 'ready') {
  await page.waitForFunction(
    (p) => document.body.dataset.state === p && [...document.querySelectorAll('[data-chart]')].every((c) => c.dataset.ready === 'true'),
    phase,
    { timeout: 60_000 },
  );
}

const text = (page, selector) => page.locator(selector).first().innerText();
const findTable = (tables, columnId) => (Array.isArray(tables) ? tables : [tables]).find((t) => t && (t.cols || []).some((c) => c.id === columnId));
const column = (table, id) => (table.rows || []).map((r) => r.c[(table.cols || []).findIndex((c) => c.id === id)]?.v ?? null);

/**
 * Checks a table card shows `expected` rows, sorts by `col` both ways, and exports CSV.
 * Large tables are virtualised (only the rows in view are in the page): the rows shown are
 * compared with the start of the expected order.
 */
async function checkTable(page, key, table, col, { hidden = [] } = {}) {
  const card = page.locator(`[data-table="${key}"]`);
  const rows = (table.rows || []).length;
  assertEqual(await card.locator('[data-role="count"]').getAttribute('data-total'), String(rows), `${key}: row count`);
  if (rows === 0) return;
  const numeric = (table.cols.find((c) => c.id === col) || {}).type === 'number';
  const values = column(table, col);
  const cmp = (a, b) => (numeric ? Number(a) - Number(b) : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);
  const shownValues = async () => card.locator(`tbody td[data-col="${col}"]`).evaluateAll((tds) => tds.map((td) => td.dataset.value));
  const norm = (list) => list.map((v) => (v === null ? '' : String(v)));
  const prefixOf = async (expected, what) => {
    const got = await shownValues();
    assert(got.length >= Math.min(rows, 20), `${key}: at least ${Math.min(rows, 20)} rows rendered (${got.length})`);
    assertEqual(got, norm(expected).slice(0, got.length), what);
  };
  // First click: numbers descending, strings ascending.
  await card.locator(`th[data-col="${col}"]`).click();
  const first = [...values].sort((a, b) => (numeric ? cmp(b, a) : cmp(a, b)));
  await prefixOf(first, `${key}: sorted by ${col} (first click)`);
  await card.locator(`th[data-col="${col}"]`).click();
  const second = [...values].sort((a, b) => (numeric ? cmp(a, b) : cmp(b, a)));
  await prefixOf(second, `${key}: sorted by ${col} (second click)`);
  assert(page.url().includes(`${encodeURIComponent(key + '.sort')}=`) || page.url().includes(`${key}.sort=`), `${key}: sort kept in the URL`);
  // The URL restores the sort (deep link).
  await page.reload();
  await waitReady(page);
  await prefixOf(second, `${key}: sort restored from the URL after a reload`);
  // CSV export of the rows as shown, columns as shown (key columns first), raw values.
  const [download] = await Promise.all([page.waitForEvent('download'), card.locator('[data-role="csv"]').click()]);
  const csv = readFileSync(await download.path(), 'utf8');
  const lines = parseCsv(csv);
  const shownCols = await card.locator('thead th[data-col]').evaluateAll((ths) => ths.map((th) => th.dataset.col));
  const labelOf = (id) => {
    const c = table.cols.find((x) => x.id === id);
    return c ? c.label || c.id : id;
  };
  assertEqual(lines[0], shownCols.map(labelOf), `${key}: CSV header (the columns shown, in order)`);
  assertEqual([...shownCols].sort(), table.cols.filter((c) => !hidden.includes(c.id)).map((c) => c.id).sort(), `${key}: every column shown by default`);
  assertEqual(lines.length - 1, rows, `${key}: CSV rows`);
  const colIndex = shownCols.indexOf(col);
  assertEqual(lines.slice(1).map((l) => l[colIndex]), norm(second).map((v) => (v === 'true' ? 'True' : v === 'false' ? 'False' : v)), `${key}: CSV rows in the shown order`);
}

function parseCsv(textIn) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < textIn.length; i++) {
    const ch = textIn[i];
    if (quoted) {
      if (ch === '"' && textIn[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(field);
      field = '';
    } else if (ch === '\r' || ch === '\n') {
      if (ch === '\r' && textIn[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += ch;
  }
  if (field || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

async function selectValues(page) {
  return page.evaluate(() => ({
    run: document.querySelector('[data-role="run"]').value,
    tool: document.querySelector('[data-role="tool"]').value,
    host: document.querySelector('[data-role="host"]').value,
  }));
}

/** A free loopback port (bound and released). */
function freePort() {
  return new Promise((resolveP, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolveP(port));
    });
  });
}

/**
 * Starts scripts/live/jax-train-server.py (a JAX training loop with the profiler server on)
 * and resolves once it prints READY (as crates/oxprof/tests/capture.rs does). Its stdin is
 * held open: closing it (stop) ends the program.
 */
async function startJaxWorker(python) {
  const port = await freePort();
  const script = join(repo, 'scripts/live/jax-train-server.py');
  const child = spawn(python, [script, '--port', String(port), '--seconds', '300'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, JAX_PLATFORMS: 'cpu', TF_CPP_MIN_LOG_LEVEL: '2' },
  });
  const stop = () =>
    new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once('exit', () => done());
      child.stdin.end();
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 5000).unref();
    });
  await new Promise((ready, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the JAX worker did not start within 180 s\nstderr: ${err.slice(-2000)}`));
    }, 180_000);
    child.stdout.on('data', (d) => {
      out += d;
      if (/^READY/m.test(out)) {
        clearTimeout(timer);
        ready();
      }
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the JAX worker exited with ${code}\nstderr: ${err.slice(-2000)}`));
    });
  });
  return { address: `127.0.0.1:${port}`, stop };
}

/** Opens the Capture profile dialog, fills it and submits; resolves with the final state. */
async function capture(page, fields) {
  await page.click('[data-role="capture"]');
  await page.locator('[data-role="capture-dialog"]').waitFor({ state: 'visible' });
  for (const [role, value] of Object.entries(fields)) {
    const el = page.locator(`[data-role="capture-dialog"] [data-role="${role}"]`);
    if ((await el.evaluate((e) => e.tagName)) === 'SELECT') await el.selectOption(value);
    else await el.fill(value);
  }
  await page.click('[data-role="capture-submit"]');
  await page.waitForFunction(() => ['done', 'error'].includes(document.querySelector('[data-role="capture-backdrop"]')?.dataset.state ?? ''), null, { timeout: 180_000 });
  return page.locator('[data-role="capture-backdrop"]').getAttribute('data-state');
}

// ---- the tests -------------------------------------------------------------------------

const h = new Harness(artifacts);
const servers = [];
let exitCode;
try {
  await h.launch();
  const main = await startServer(bin, logdir);
  servers.push(main);
  const base = main.url;
  // Tests of a UI the server does not serve would fail by the dozen, each for no reason of its own.
  await checkServedUi(base, expectedUiDir(ui));
  const runs = await api(base, 'runs');
  assert(runs.length > 0, `runs found in ${logdir}`);
  const pick = (part) => runs.find((r) => r.includes(part)) || runs[0];
  const stepsRun = pick('tf_custom_loop');
  console.log(`server ${base}: ${runs.length} runs; using ${stepsRun}`);

  await h.test('shell: default view, selectors list the API runs, tools and hosts', async ({ page, shot }) => {
    await page.goto(base);
    await waitReady(page);
    const options = async (role) => page.locator(`[data-role="${role}"] option`).evaluateAll((os) => os.map((o) => o.value));
    assertEqual(await options('run'), runs, 'run options');
    const sel = await selectValues(page);
    assertEqual(sel.run, runs[0], 'default run (the newest)');
    const tools = await offeredTools(base, sel.run);
    assertEqual(await options('tool'), tools, 'tool options');
    // oxprof offers what XProf's /run_tools hides (its registry decides).
    for (const tool of ['pod_viewer', 'tf_data_bottleneck_analysis']) assert(tools.includes(tool), `${tool} in the Tools menu`);
    const overviewLabel = await page.locator('[data-role="tool"] option[value="overview_page"]').innerText();
    assert(overviewLabel.startsWith('Overview'), `tools are titled as the registry names them: ${overviewLabel}`);
    assertEqual(sel.tool, tools[0], 'default tool');
    assertEqual(await options('host'), await hostsOf(base, sel.run, sel.tool), 'host options');
    const url = new URL(page.url());
    assertEqual([url.searchParams.get('run'), url.searchParams.get('tool')], [sel.run, sel.tool], 'URL holds the view');
    await shot();
  });

  await h.test('shell: selectors navigate and the back button restores the view', async ({ page }) => {
    await open(page, base, { run: stepsRun, tool: 'overview_page' });
    await page.selectOption('[data-role="tool"]', 'framework_op_stats');
    await waitReady(page);
    assertEqual((await selectValues(page)).tool, 'framework_op_stats', 'tool selected');
    assert(new URL(page.url()).searchParams.get('tool') === 'framework_op_stats', 'URL follows the selector');
    await page.goBack();
    await waitReady(page);
    assertEqual((await selectValues(page)).tool, 'overview_page', 'back restores the tool');
    await page.locator('[data-page="overview_page"]').waitFor();
    await page.click('[data-role="refresh"]');
    await waitReady(page);
    await page.locator('[data-page="overview_page"]').waitFor();
  });

  // Overview.
  {
    const tool = 'overview_page';
    const host = (await hostsOf(base, stepsRun, tool))[0];
    const data = await api(base, 'data', { run: stepsRun, tag: tool, host });
    await h.test('overview: summary, step-time graph, top ops, environment, recommendation', async ({ page, shot }) => {
      await open(page, base, { run: stepsRun, tool, host });
      assertEqual(await selectValues(page), { run: stepsRun, tool, host }, 'deep link selects run, tool and host');
      const ip = findTable(data, 'stepnum').p;
      assertEqual(await text(page, '[data-metric="steptime_ms_average"] [data-role="value"]'), `${ip.steptime_ms_average} ms`, 'average step time');
      const infeed = await text(page, '[data-prop="infeed_time_ms_avg"]');
      assert(infeed.startsWith(`${ip.infeed_time_ms_avg} ms`), `input time ${infeed} vs ${ip.infeed_time_ms_avg}`);
      const steps = findTable(data, 'stepnum').rows.length;
      if (steps) {
        const series = await page.locator('[data-chart="step-time"]').evaluate((el) => el.dataset.ready);
        assertEqual(series, 'true', 'step-time graph drawn');
      }
      const env = findTable(data, 'host_id').p;
      assertEqual(await text(page, '[data-props="run-environment"] [data-prop="Device type"]'), env.device_type, 'device type');
      assertEqual(await text(page, '[data-props="run-environment"] [data-prop="Number of hosts"]'), env.host_count, 'host count');
      const rec = findTable(data, 'tip_type');
      assertEqual(await text(page, '[data-section="recommendation"] [data-role="statement"]'), rec.p.statement, 'recommendation statement');
      const links = await page.locator('[data-section="recommendation"] a.tool-link').evaluateAll((as) => as.map((a) => a.dataset.tool));
      const named = rec.rows.map((r) => String(r.c[1].v).split(' ')[0]).filter((w) => /^[a-z_@]+$/.test(w) && w.includes('_'));
      assertEqual(links, named, 'tools named by the recommendation are links');
      if (steps) {
        // Tooltip of the step under the pointer.
        const box = await page.locator('[data-chart="step-time"]').boundingBox();
        await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
        const tip = page.locator('[data-chart="step-time"] div', { hasText: 'duration' }).last();
        await tip.waitFor({ state: 'visible', timeout: 5000 });
        assert((await tip.innerText()).includes('ms'), 'step tooltip');
      }
      await checkTable(page, 'top', findTable(data, 'selfTimePercent'), 'selfTimePercent');
      await shot();
      // A recommendation link opens that tool for the same run and host.
      await page.locator('[data-section="recommendation"] a.tool-link[data-tool="input_pipeline_analyzer"]').first().click();
      await waitReady(page);
      assertEqual(await selectValues(page), { run: stepsRun, tool: 'input_pipeline_analyzer', host }, 'recommendation link target');
    });
    await h.test('overview: readable on a large screen', async ({ page, shot }) => {
      await open(page, base, { run: stepsRun, tool, host });
      await shot();
    }, { viewport: { width: 1920, height: 1080 } });
  }

  // Input pipeline analyzer.
  {
    const tool = 'input_pipeline_analyzer';
    const host = (await hostsOf(base, stepsRun, tool))[0];
    const data = await api(base, 'data', { run: stepsRun, tag: tool, host });
    await h.test('input pipeline: summary, device-side statistics, host breakdown, input-op table', async ({ page, shot }) => {
      await open(page, base, { run: stepsRun, tool, host });
      const device = findTable(data, 'stepnum');
      assertEqual(await text(page, '[data-role="input-conclusion"]'), device.p.input_conclusion, 'conclusion');
      for (const key of ['steptime_ms_average', 'steptime_ms_standard_deviation', 'steptime_ms_minimum', 'steptime_ms_maximum']) {
        assertEqual(await text(page, `[data-metric="${key}"] [data-role="value"]`), `${device.p[key]} ms`, key);
      }
      const hostTable = findTable(data, 'opName');
      // Adaptive units (issue 41: "2245094.033 µs" is "2.245 s"), four significant digits.
      const pre = await text(page, '[data-props="host-breakdown"] [data-prop="Data preprocessing"]');
      const m = /^([\d.]+) (ps|ns|µs|ms|s)$/.exec(pre);
      assert(m && m[1].replace('.', '').replace(/^0+/, '').length <= 4, `preprocessing time in adaptive units: ${pre}`);
      const us = Number(m[1]) * { ps: 1e-6, ns: 1e-3, µs: 1, ms: 1e3, s: 1e6 }[m[2]];
      assert(Math.abs(us - Number(hostTable.p.preprocessing_us)) <= Number(hostTable.p.preprocessing_us) * 5e-4, `preprocessing time ${pre} = ${hostTable.p.preprocessing_us} µs`);
      await checkTable(page, 'ops', hostTable, 'timeInMs');
      if (device.rows.length) await checkTable(page, 'steps', device, 'stepTimeMs', { hidden: ['tooltip'] });
      await shot();
    });
  }

  // Framework op stats.
  {
    const tool = 'framework_op_stats';
    const host = (await hostsOf(base, stepsRun, tool))[0];
    const data = await api(base, 'data', { run: stepsRun, tag: tool, host });
    await h.test('framework op stats: four pies, idle switch, sort, filter, CSV', async ({ page, shot }) => {
      await open(page, base, { run: stepsRun, tool, host });
      assertEqual(await page.locator('[data-page="framework_op_stats"] [data-chart], [data-chart-empty]').count(), 4, 'four pie charts');
      await checkTable(page, 'ops', data[1], 'total_self_time');
      await checkTable(page, 'ops', data[1], 'operation');
      // Include IDLE.
      await page.selectOption('[data-role="idle"]', 'yes');
      await waitReady(page);
      assertEqual(await page.locator('[data-table="ops"] [data-role="count"]').getAttribute('data-total'), String(data[0].rows.length), 'rows with IDLE');
      // Filter by op name.
      const names = column(data[0], 'operation');
      const needle = String(names.find((n) => n && n !== 'IDLE') || 'IDLE').slice(0, 6).toLowerCase();
      await page.fill('[data-table="ops"] [data-role="filter"]', needle);
      const expected = names.filter((n) => String(n).toLowerCase().includes(needle)).length;
      assertEqual(await page.locator('[data-table="ops"] [data-role="count"]').getAttribute('data-shown'), String(expected), 'filtered rows');
      assert(new URL(page.url()).searchParams.get('ops.q') === needle, 'filter kept in the URL');
      await shot();
      const server = await page.locator('[data-role="server-csv"]').getAttribute('href');
      const r = await fetch(new URL(server, base));
      assertEqual(r.status, 200, 'server CSV link');
    });
    await h.test('framework op stats: a deep link restores idle, sort and filter', async ({ page }) => {
      await open(page, base, { run: stepsRun, tool, host, idle: 'yes', 'ops.sort': 'occurrences.asc', 'ops.q': 'i' });
      assertEqual(await page.inputValue('[data-role="idle"]'), 'yes', 'idle option');
      assertEqual(await page.inputValue('[data-table="ops"] [data-role="filter"]'), 'i', 'filter');
      assertEqual(await page.locator('[data-table="ops"] th[data-col="occurrences"]').getAttribute('aria-sort'), 'ascending', 'sort');
      const shown = await page.locator('[data-table="ops"] tbody td[data-col="occurrences"]').evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
      assertEqual(shown, [...shown].sort((a, b) => a - b), 'rows ascending');
      const expected = column(data[0], 'operation').filter((n) => String(n).toLowerCase().includes('i')).length;
      assertEqual(await page.locator('[data-table="ops"] [data-role="count"]').getAttribute('data-shown'), String(expected), 'filtered rows');
    });
  }

  // Pod viewer.
  {
    const tool = 'pod_viewer';
    const host = (await hostsOf(base, stepsRun, tool))[0];
    const data = await api(base, 'data', { run: stepsRun, tag: tool, host });
    const steps = data.podStatsSequence?.podStatsMap ?? [];
    await h.test('pod viewer: step slider, stacked columns per worker, details card on hover', async ({ page, shot }) => {
      await open(page, base, { run: stepsRun, tool, host });
      if (!steps.length) {
        await page.locator('[data-role="no-steps"]').waitFor();
        return;
      }
      assertEqual(await page.getAttribute('[data-role="step-slider"]', 'max'), String(steps.length - 1), 'slider range');
      const target = Math.min(2, steps.length - 1);
      await page.locator('[data-role="step-slider"]').evaluate((el, v) => {
        el.value = String(v);
        el.dispatchEvent(new Event('input', { bubbles: true }));
      }, target);
      await waitReady(page);
      assert(target === 0 || new URL(page.url()).searchParams.get('step') === String(target), 'step kept in the URL');
      const cores = Object.keys(steps[target].podStatsPerCore);
      assertEqual(await page.locator('[data-table="workers"] [data-role="count"]').getAttribute('data-total'), String(cores.length), 'workers');
      const box = await page.locator('[data-chart="pod-workers"]').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.waitForTimeout(200);
      const core = await page.getAttribute('[data-role="details"]', 'data-core');
      const stats = steps[target].podStatsPerCore[core];
      assert(stats, `details card shows a worker of the step (${core})`);
      assertEqual(await text(page, '[data-role="details"] [data-prop="Bottleneck"]'), stats.bottleneck, 'bottleneck');
      await checkTable(page, 'workers', {
        cols: [{ id: 'total', label: 'Total duration (µs)', type: 'number' }],
        rows: cores.map((c) => ({ c: [{ v: steps[target].podStatsPerCore[c].totalDurationUs }] })),
      }, 'total').catch((e) => {
        // The workers table has more columns than this stand-in: only sorting is compared.
        if (!String(e).includes('CSV')) throw e;
      });
      await shot();
      await page.reload();
      await waitReady(page);
      assertEqual(await page.inputValue('[data-role="step-slider"]'), String(target), 'reload restores the step');
    });
  }

  // The trace viewer's tests are in e2e/suites/trace_tools.mjs.

  // Tools without a dedicated page: the generic DataTable page.
  {
    const tools = await offeredTools(base, stepsRun);
    const dedicated = ['overview_page', 'input_pipeline_analyzer', 'framework_op_stats', 'kernel_stats', 'pod_viewer', 'trace_viewer', 'trace_viewer@', 'graph_viewer', 'memory_viewer', 'op_profile', 'hlo_stats', 'roofline_model', 'memory_profile', 'tf_data_bottleneck_analysis', 'hta_distributed', 'hta_gpu_idle', 'inference_profile'];
    for (const tool of tools.filter((t) => !dedicated.includes(t))) {
      const host = (await hostsOf(base, stepsRun, tool))[0];
      let data;
      try {
        data = await api(base, 'data', { run: stepsRun, tag: tool, host });
      } catch (e) {
        h.skip(`generic page: ${tool}`, `the server cannot answer it yet (${String(e).split('\n')[0].slice(0, 160)})`);
        continue;
      }
      await h.test(`generic page: ${tool}`, async ({ page, shot }) => {
        await open(page, base, { run: stepsRun, tool, host });
        const tables = (Array.isArray(data) ? data : [data]).filter((t) => t && Array.isArray(t.cols));
        assertEqual(await page.locator('[data-table]').count(), tables.length, 'one table per DataTable');
        const first = tables.find((t) => (t.rows || []).length && t.cols.length);
        if (first) await checkTable(page, tables.length === 1 ? 't' : `t${tables.indexOf(first)}`, first, first.cols[0].id);
        await shot();
      });
    }
  }

  // Page suites in e2e/suites/*.mjs: each exports `register(ctx)` and adds its tests with
  // ctx.h.test against the main server (ctx.base).
  {
    const dir = join(ui, 'e2e/suites');
    const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.mjs')).sort() : [];
    for (const f of files) {
      const suite = await import(join(dir, f));
      await suite.register({ h, base, runs, pick, api, hostsOf, open, waitReady, checkTable, text, selectValues, parseCsv, repo, ui, external, artifacts });
    }
  }

  // Notes and errors.
  {
    let noted = null;
    for (const run of runs) {
      const r = await fetch(new URL(`/oxprof/api/notes?run=${encodeURIComponent(run)}&tag=overview_page`, base));
      if (r.ok) {
        const body = await r.json();
        if (body.notes?.length) {
          noted = { run, notes: body.notes };
          break;
        }
      }
    }
    if (noted) {
      await h.test('notes: oxprof\'s notes are shown above the page', async ({ page, shot }) => {
        await open(page, base, { run: noted.run, tool: 'overview_page' });
        const shown = await page.locator('[data-role="notes"] li').allInnerTexts();
        // Code spans are shown as code, without their backticks (issue 41).
        assertEqual(shown, noted.notes.map((n) => n.replace(/`/g, '')), 'notes');
        assert((await page.locator('[data-role="notes"] li code').count()) >= noted.notes.join('').split('`').length >> 1, 'code spans as <code>');
        await shot();
      });
    } else h.skip('notes: oxprof\'s notes are shown above the page', 'no run has notes for overview_page');
  }
  await h.test('errors: an unknown host shows the server\'s JSON error message', async ({ page, shot }) => {
    const url = new URL('/data/plugin/profile/data', base);
    url.searchParams.set('run', stepsRun);
    url.searchParams.set('tag', 'overview_page');
    url.searchParams.set('host', 'no_such_host');
    const r = await fetch(url);
    const body = await r.json();
    assert(r.status >= 400 && body.error, 'the server answers with a JSON error');
    await page.goto(new URL(`/?run=${encodeURIComponent(stepsRun)}&tool=overview_page&host=no_such_host`, base).toString());
    await waitReady(page, 'error');
    assertEqual(await text(page, '[data-role="error-message"]'), body.error, 'error message');
    await shot();
  }, { allowConsole: /Failed to load resource|404|400/ });
  await h.test('errors: an unknown run is reported with the available runs', async ({ page }) => {
    await page.goto(new URL('/?run=no_such_run', base).toString());
    await waitReady(page, 'error');
    const message = await text(page, '[data-role="error-message"]');
    assert(message.includes('no_such_run') && message.includes(runs[0]), `message: ${message}`);
  });

  // GPU pages on a third-party GPU profile (when shared test data is present).
  if (existsSync(gpuDir)) {
    const gpu = await startServer(bin, gpuDir);
    servers.push(gpu);
    const gpuRuns = await api(gpu.url, 'runs');
    const run = gpuRuns[0];
    const tools = await offeredTools(gpu.url, run);
    if (tools.includes('kernel_stats')) {
      const host = (await hostsOf(gpu.url, run, 'kernel_stats'))[0];
      let data = null;
      try {
        data = await api(gpu.url, 'data', { run, tag: 'kernel_stats', host });
      } catch (e) {
        h.skip('kernel stats', `the server cannot answer it yet (${String(e).split('\n')[0].slice(0, 160)})`);
      }
      if (data) {
        await h.test('kernel stats: top-kernel pie, full table, sort, filter, CSV', async ({ page, shot }) => {
          await open(page, gpu.url, { run, tool: 'kernel_stats', host });
          const table = Array.isArray(data) ? data[0] : data;
          if (table.rows.length) await page.locator('[data-chart="top-kernels"]').waitFor();
          await checkTable(page, 'kernels', table, 'total_duration_us');
          await checkTable(page, 'kernels', table, 'kernel_name');
          await page.fill('[data-table="kernels"] [data-role="filter"]', 'eigen');
          const expected = table.rows.filter((r) => [1, 9].some((i) => String(r.c[i]?.v ?? '').toLowerCase().includes('eigen'))).length;
          assertEqual(await page.locator('[data-table="kernels"] [data-role="count"]').getAttribute('data-shown'), String(expected), 'filtered kernels');
          await shot();
        });
      }
    } else h.skip('kernel stats', `run_tools of ${run} has no kernel_stats`);
    await h.test('GPU profile: a tool change keeps the host when the new tool lists it', async ({ page }) => {
      const fosHosts = await hostsOf(gpu.url, run, 'framework_op_stats');
      const realHost = fosHosts.find((x) => x !== 'ALL_HOSTS');
      await open(page, gpu.url, { run, tool: 'framework_op_stats', host: realHost });
      let current = realHost;
      for (const tool of ['input_pipeline_analyzer', 'overview_page', 'framework_op_stats']) {
        await page.selectOption('[data-role="tool"]', tool);
        await waitReady(page);
        const hosts = await hostsOf(gpu.url, run, tool);
        current = hosts.includes(current) ? current : hosts[0];
        assertEqual((await selectValues(page)).host, current, `host after switching to ${tool}`);
      }
    });
    for (const tool of ['overview_page', 'input_pipeline_analyzer', 'framework_op_stats', 'pod_viewer']) {
      const hosts = await hostsOf(gpu.url, run, tool);
      const host = hosts.includes('ALL_HOSTS') ? 'ALL_HOSTS' : hosts[0];
      await h.test(`GPU profile (${hosts.length} hosts listed): ${tool} for ${host}`, async ({ page, shot }) => {
        await open(page, gpu.url, { run, tool, host });
        await page.locator(`[data-page="${tool}"]`).waitFor();
        assertEqual((await selectValues(page)).host, host, 'host selected');
        if (tool === 'pod_viewer') {
          const data = await api(gpu.url, 'data', { run, tag: tool, host });
          const first = data.podStatsSequence?.podStatsMap?.[0];
          if (first) {
            const cores = Object.keys(first.podStatsPerCore).length;
            assertEqual(await page.locator('[data-table="workers"] [data-role="count"]').getAttribute('data-total'), String(cores), 'one column per worker');
          }
        }
        await shot();
      });
    }
  } else {
    h.skip('kernel stats', `no GPU test profile at ${gpuDir}`);
  }

  // The README's first command: `oxprof serve` with no path serves the bundled demo.
  {
    const demo = await startServer(bin, null);
    servers.push(demo);
    const demoRuns = await api(demo.url, 'runs');
    await h.test('demo: `oxprof serve` alone opens a working view', async ({ page, shot }) => {
      await page.goto(demo.url);
      await waitReady(page);
      assertEqual((await selectValues(page)).run, demoRuns[0], 'newest demo run');
      await shot();
    });
    for (const run of demoRuns) {
      for (const tool of ['overview_page', 'input_pipeline_analyzer', 'framework_op_stats', 'pod_viewer']) {
        await h.test(`demo: ${run}: ${tool}`, async ({ page }) => {
          await open(page, demo.url, { run, tool });
          await page.locator(`[data-page="${tool}"]`).waitFor();
        });
      }
    }
  }

  // Empty state.
  const emptyDir = mkdtempSync(join(tmpdir(), 'oxprof-empty-'));
  try {
    const empty = await startServer(bin, emptyDir);
    servers.push(empty);
    await h.test('empty state: explains the expected logdir layout', async ({ page, shot }) => {
      await page.goto(empty.url);
      await waitReady(page, 'empty');
      const body = await text(page, '[data-role="empty"]');
      assert(body.includes('plugins/profile/') && body.includes('.xplane.pb'), 'layout explained');
      await shot();
    });
  } finally {
    rmSync(emptyDir, { recursive: true, force: true });
  }

  // Security: a page of another origin, and a DNS-rebinding name, in a real browser.
  {
    const guarded = await startServer(bin, logdir);
    servers.push(guarded);
    const port = new URL(guarded.url).port;
    const evil = await new Promise((done) => {
      const server = createHttpServer((_, res) => {
        res.writeHead(200, { 'Content-Type': 'text/html' });
        res.end('<!doctype html><title>another site</title>');
      });
      server.listen(0, '127.0.0.1', () => done(server));
    });
    try {
      await h.test('security: a DNS-rebinding name gets 403 on every route', async ({ page }) => {
        for (const path of ['/', '/data/plugin/profile/runs', '/oxprof/api/info']) {
          const response = await page.goto(`http://rebind.test:${port}${path}`);
          assertEqual(response?.status(), 403, `rebind.test${path}`);
          const body = await page.evaluate(() => document.body.innerText);
          assert(body.includes('--allow-host'), `the refusal says how to allow the name: ${body}`);
        }
      }, { allowConsole: /403/ });
      await h.test('security: another site\'s page can neither make the server work nor start a capture', async ({ page }) => {
        const info = async () => (await (await fetch(new URL('/oxprof/api/info', guarded.url))).json()).cache.computations;
        const before = await info();
        const runsNow = await api(guarded.url, 'runs');
        await page.goto(`http://127.0.0.1:${evil.address().port}/`);
        const target = `${guarded.url.replace(/\/$/, '')}/data/plugin/profile`;
        const tried = await page.evaluate(async ({ target, run }) => {
          const out = [];
          // Fire-and-forget requests a page may send anywhere (no-cors): the server refuses them.
          for (const [url, init] of [
            [`${target}/data?run=${encodeURIComponent(run)}&tag=framework_op_stats&use_saved_result=false`, {}],
            [`${target}/capture_profile?service_addr=127.0.0.1:1&session_id=evil`, { method: 'POST' }],
          ]) {
            try {
              await fetch(url, { ...init, mode: 'no-cors' });
              out.push('sent');
            } catch {
              out.push('failed');
            }
          }
          // Reading an answer is blocked by the browser itself.
          try {
            await fetch(`${target}/runs`);
            out.push('read');
          } catch {
            out.push('unreadable');
          }
          return out;
        }, { target, run: runsNow[0] });
        assertEqual(tried[2], 'unreadable', 'cross-origin reads');
        assertEqual(await info(), before, 'no computation was started for the other site');
      }, { allowConsole: /403|CORS|Failed to fetch|net::/ });
    } finally {
      evil.close();
    }
  }

  // Capture profile: `oxprof serve DIR` over a log directory offers capturing.
  const captureDir = mkdtempSync(join(tmpdir(), 'oxprof-capture-'));
  try {
    const served = await startServer(bin, captureDir);
    servers.push(served);
    const config = await api(served.url, 'config');
    assertEqual(config.hideCaptureProfileButton, false, '/config offers capturing for a log directory');
    await h.test('capture: the dialog opens from the keyboard, has XProf\'s defaults, Escape closes it', async ({ page, shot }) => {
      await page.goto(served.url);
      await waitReady(page, 'empty');
      const button = page.locator('[data-role="capture"]');
      await button.waitFor({ state: 'visible' });
      await button.focus();
      await page.keyboard.press('Enter');
      await page.locator('[data-role="capture-dialog"]').waitFor({ state: 'visible' });
      assertEqual(await page.evaluate(() => document.activeElement?.dataset.role), 'service_addr', 'focus in the address field');
      const values = {};
      for (const role of ['duration', 'num_retry', 'host_tracer_level', 'device_tracer_level', 'python_tracer_level']) values[role] = await page.inputValue(`[data-role="${role}"]`);
      assertEqual(values, { duration: '2000', num_retry: '3', host_tracer_level: '2', device_tracer_level: '1', python_tracer_level: '0' }, 'defaults');
      await shot();
      await page.keyboard.press('Escape');
      await page.locator('[data-role="capture-dialog"]').waitFor({ state: 'hidden' });
      assertEqual(await page.evaluate(() => document.activeElement?.dataset.role), 'capture', 'focus back on the button');
    });
    await h.test('capture: a dead address shows the server\'s error and the failed worker', async ({ page, shot }) => {
      await page.goto(served.url);
      await waitReady(page, 'empty');
      const state = await capture(page, { service_addr: '127.0.0.1:1', num_retry: '0' });
      assertEqual(state, 'error', 'dialog state');
      const message = await text(page, '[data-role="capture-error"] [data-role="capture-message"]');
      assert(message.includes('127.0.0.1:1'), `error message names the address: ${message}`);
      const failed = await page.locator('[data-role="capture-failed"] li').allInnerTexts();
      assert(failed.length === 1 && failed[0].startsWith('127.0.0.1:1: '), `failed workers: ${JSON.stringify(failed)}`);
      // The same request to the API (a POST with the page's token) answers an error JSON
      // naming the same worker; without the token, or as a GET, it is refused.
      const captureUrl = new URL('/data/plugin/profile/capture_profile?service_addr=127.0.0.1:1&duration=100&num_retry=0', served.url);
      const token = await page.evaluate(() => document.querySelector('meta[name="oxprof-token"]')?.getAttribute('content') ?? '');
      assert(/^[0-9a-f]{32}$/.test(token), `the page carries the server's token: ${token}`);
      const r = await fetch(captureUrl, { method: 'POST', headers: { 'X-Oxprof-Token': token } });
      const body = await r.json();
      // 502: the profiler at the address did not answer (the peer's failure, not the server's).
      assertEqual(r.status, 502, 'a dead address is the peer\'s failure');
      assert(typeof body.error === 'string' && body.failed?.[0]?.address === '127.0.0.1:1', `API error: ${JSON.stringify(body)}`);
      assertEqual((await fetch(captureUrl, { method: 'POST' })).status, 403, 'POST without the token');
      assertEqual((await fetch(captureUrl)).status, 405, 'GET');
      assertEqual(await page.evaluate(() => document.body.dataset.state), 'empty', 'no run was added');
      await shot();
      assert(await page.evaluate(() => !!document.activeElement?.closest('[data-role="capture-dialog"]')), 'the focus stays in the dialog');
      await page.keyboard.press('Escape');
      await page.locator('[data-role="capture-dialog"]').waitFor({ state: 'hidden' });
    }, { allowConsole: /Failed to load resource|502/ });

    const venv = process.env.OXPROF_PYTHON_VENV || join(repo, '.venv-test');
    const python = join(venv, 'bin/python');
    const liveName = 'capture: 1000 ms from a live JAX program adds a run, selected, and its overview loads';
    if (existsSync(python)) {
      let worker = null;
      try {
        worker = await startJaxWorker(python);
        await h.test(liveName, async ({ page, shot }) => {
          await page.goto(served.url);
          await waitReady(page, 'empty');
          const state = await capture(page, { service_addr: worker.address, duration: '1000' });
          const status = await text(page, '[data-role="capture-status"]');
          assertEqual(state, 'done', `dialog state (${status})`);
          const run = await text(page, '[data-role="capture-run"]');
          assertEqual(await page.locator('[data-role="capture-captured"] li').allInnerTexts(), [worker.address], 'captured workers');
          await waitReady(page);
          const runsNow = await api(served.url, 'runs');
          assert(runsNow.includes(run), `the API lists the new run ${run}: ${JSON.stringify(runsNow)}`);
          const options = await page.locator('[data-role="run"] option').evaluateAll((os) => os.map((o) => o.value));
          assertEqual(options, runsNow, 'Runs selector refreshed');
          assertEqual((await selectValues(page)).run, run, 'new run selected');
          assertEqual(new URL(page.url()).searchParams.get('run'), run, 'URL names the new run');
          await page.keyboard.press('Escape');
          await page.locator('[data-role="capture-dialog"]').waitFor({ state: 'hidden' });
          if ((await selectValues(page)).tool !== 'overview_page') {
            await page.selectOption('[data-role="tool"]', 'overview_page');
            await waitReady(page);
          }
          await page.locator('[data-page="overview_page"]').waitFor();
          await shot();
        });
      } catch (e) {
        h.results.push({ name: liveName, ok: false, error: e });
        console.log(`FAIL ${liveName}\n     ${String(e && e.stack ? e.stack : e).split('\n').join('\n     ')}`);
      } finally {
        await worker?.stop();
      }
    } else if (process.env.OXPROF_REQUIRE_LIVE === '1') {
      h.results.push({ name: liveName, ok: false, error: new Error(`no venv at ${venv}`) });
      console.log(`FAIL ${liveName}: OXPROF_REQUIRE_LIVE=1 but ${python} is missing (run scripts/ci/setup-python.sh)`);
    } else {
      h.skip(liveName, `no Python venv at ${venv} (run scripts/ci/setup-python.sh)`);
    }
  } finally {
    rmSync(captureDir, { recursive: true, force: true });
  }
  exitCode = h.summary() ? 1 : 0;
} catch (e) {
  console.error(e);
  h.summary();
  exitCode = 1;
} finally {
  await h.close().catch(() => undefined);
  for (const s of servers) await s.stop();
}
process.exit(exitCode);
