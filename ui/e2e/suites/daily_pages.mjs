// The web UI as a daily tool (issue items 5-8): virtualised tables with key columns first,
// cut names with tooltips and a column picker; the defects the issue lists, each with its
// regression check; dark mode, text alternatives of charts, focusable section headers;
// the bundled demo's GPU profiles; and every page of four runs at 1440x900 and 1024x768
// (screenshots kept) without horizontal scrolling.
import { existsSync, mkdtempSync, copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

/** A synthetic framework op stats answer of `n` rows (one name 240 characters long). */
function bigOpStats(n) {
  const cols = [
    ['rank', 'Rank', 'number'],
    ['host_or_device', 'Host/device', 'string'],
    ['type', 'Operation Type', 'string'],
    ['operation', 'Operation Name', 'string'],
    ['occurrences', '#Occurrences', 'number'],
    ['total_time', 'Total time (us)', 'number'],
    ['avg_time', 'Avg. time (us)', 'number'],
    ['total_self_time', 'Total self-time (us)', 'number'],
    ['avg_self_time', 'Avg. self-time (us)', 'number'],
  ].map(([id, label, type]) => ({ id, label, type }));
  const rows = [];
  for (let i = 0; i < n; i++) {
    const name = i === 3 ? `very/long/${'scope/'.repeat(38)}op_${i}` : `op_${String(i).padStart(5, '0')}`;
    const total = (n - i) * 1234.5;
    rows.push({ c: [{ v: i + 1 }, { v: i % 3 ? 'Device' : 'Host' }, { v: `Type${i % 17}` }, { v: name }, { v: 10 + (i % 7) }, { v: total }, { v: total / 10 }, { v: total * 0.8 }, { v: total / 12.5 }] });
  }
  const table = { cols, rows, p: { architecture_type: 'Unknown', task_type: 'Training' } };
  return [table, table];
}

export async function register(ctx) {
  const { h, base, runs, open, waitReady, text, repo } = ctx;
  const bin = process.env.OXPROF_BIN;
  const stepsRun = runs.find((r) => r.includes('tf_custom_loop'));
  const jaxRun = runs.find((r) => r.includes('jax_train'));
  const urlParam = (page, key) => new URL(page.url()).searchParams.get(key);
  const noHorizontalScroll = async (page, what) => {
    const size = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, bw: document.body.scrollWidth, iw: innerWidth }));
    assert(size.sw <= size.iw && size.bw <= size.iw, `${what}: no horizontal scroll (${JSON.stringify(size)})`);
  };

  // ---- tables ------------------------------------------------------------------------------
  if (stepsRun) {
    await h.test('tables: 10,000 rows render virtualised; key columns first; long names cut with a tooltip; a column picker', async ({ page, shot }) => {
      const n = 10_000;
      const body = JSON.stringify(bigOpStats(n));
      await page.route('**/data/plugin/profile/data?*', (route) =>
        route.request().url().includes('tag=framework_op_stats') ? route.fulfill({ status: 200, contentType: 'application/json', body }) : route.continue(),
      );
      await open(page, base, { run: stepsRun, tool: 'framework_op_stats' });
      const card = page.locator('[data-table="ops"]');
      assertEqual(await card.locator('[data-role="count"]').getAttribute('data-total'), String(n), 'all rows counted');
      const rendered = await card.locator('tbody tr:not(.spacer-row)').count();
      assert(rendered > 10 && rendered < 200, `only the rows in view are in the page (${rendered})`);
      assertEqual((await card.locator('thead th').first().getAttribute('data-col')), 'operation', 'the name column first');
      // Times in readable units, raw values kept.
      const cell = card.locator('tbody tr:not(.spacer-row)').first().locator('td[data-col="total_time"]');
      assert(/ (s|ms|µs)$/.test(await cell.innerText()), `adaptive units: ${await cell.innerText()}`);
      assertEqual(await cell.getAttribute('data-value'), String(n * 1234.5), 'raw value');
      assert(!(await card.locator('thead th[data-col="total_time"]').innerText()).includes('(us)'), 'the header does not repeat a unit the cells change');
      // The long name: one line, cut, the whole name in its tooltip.
      const long = card.locator('tbody td[data-col="operation"]').nth(3);
      const fullName = await long.getAttribute('data-value');
      assertEqual(await long.getAttribute('title'), fullName, 'tooltip');
      assert(await long.locator('.cell-text').evaluate((el) => el.scrollWidth > el.clientWidth), 'the name is cut');
      // Scrolling to the end shows the last rows.
      await card.locator('.table-scroll').evaluate((el) => (el.scrollTop = el.scrollHeight));
      await page.waitForFunction(() => [...document.querySelectorAll('[data-table="ops"] tbody td[data-col="rank"]')].some((td) => td.dataset.value === '10000'), null, { timeout: 5000 });
      await noHorizontalScroll(page, 'a 10,000-row table');
      await shot();
      // The column picker hides a column (kept in the URL) and the CSV follows.
      await card.locator('[data-role="columns"] summary').click();
      await card.locator('[data-column="rank"]').uncheck();
      assertEqual(await card.locator('thead th[data-col="rank"]').count(), 0, 'rank hidden');
      assertEqual(urlParam(page, 'ops.hide'), 'rank', 'hidden columns in the URL');
      const [download] = await Promise.all([page.waitForEvent('download'), card.locator('[data-role="csv"]').click()]);
      const csv = ctx.parseCsv(readFileSync(await download.path(), 'utf8'));
      assert(!csv[0].includes('Rank'), 'the CSV has the columns shown');
      assertEqual(csv.length - 1, n, 'every row in the CSV');
      assertEqual(csv[1][csv[0].indexOf('Total time (us)')], String(n * 1234.5), 'raw values in the CSV');
    });
  }

  // ---- defects (each with its regression check) ----------------------------------------------
  const demo = await startServer(bin, null);
  try {
    const gemm = 'mi300x_jax_gemm/jax08_gemm';
    await h.test('demo: the bundled demo has a real GPU run (MI300X JAX GEMM); its kernels and GPU trace show', async ({ page, shot }) => {
      const demoRuns = await (await fetch(new URL('/data/plugin/profile/runs', demo.url))).json();
      assert(demoRuns.includes(gemm), `the demo lists ${gemm}: ${demoRuns}`);
      await open(page, demo.url, { run: gemm, tool: 'kernel_stats' });
      assert(Number(await page.getAttribute('[data-table="kernels"] [data-role="count"]', 'data-total')) > 0, 'GPU kernels');
      await shot('.kernels');
      await open(page, demo.url, { run: gemm, tool: 'trace_viewer@' });
      const sections = await page.locator('[data-section]').evaluateAll((els) => els.map((e) => e.dataset.name));
      assert(sections.some((s) => s.includes('/device:GPU:0')), `a GPU section: ${sections}`);
      await shot('.trace');
    });

    await h.test('defect: the demo shows no Capture button (/config hides it; a CSS rule used to override .hidden)', async ({ page }) => {
      await page.goto(demo.url);
      await waitReady(page);
      const config = await (await fetch(new URL('/data/plugin/profile/config', demo.url))).json();
      assertEqual(config.hideCaptureProfileButton, true, '/config hides capturing for the demo');
      assertEqual(await page.locator('[data-role="capture"]').evaluate((b) => getComputedStyle(b).display), 'none', 'the button is not displayed');
      assert(!(await page.locator('[data-role="capture"]').isVisible()), 'not visible');
    });

    await h.test('defect: long kernel names wrap in the details pane (the page used to grow 5,757 px wide)', async ({ page, shot }) => {
      const api = async (route, params) => (await fetch(new URL(`/oxprof/api/trace/${route}?${new URLSearchParams({ run: gemm, ...params })}`, demo.url))).json();
      const t = await api('tracks', {});
      const stream = t.sections.flatMap((s) => s.tracks).find((x) => x.name.startsWith('Stream'));
      const w = await api('window', { tracks: String(stream.id) });
      const kernel = w.tracks[0].events.reduce((a, b) => (w.names[b.name].length > w.names[a.name].length ? b : a));
      assert(w.names[kernel.name].length > 60, 'a long kernel name');
      for (const viewport of [{ width: 1440, height: 900 }, { width: 1024, height: 768 }]) {
        await page.setViewportSize(viewport);
        await open(page, demo.url, { run: gemm, tool: 'trace_viewer@', sel: String(kernel.id) });
        await page.waitForFunction((id) => document.querySelector('[data-role="trace-details"]')?.dataset.eventId === id, String(kernel.id));
        await noHorizontalScroll(page, `kernel details at ${viewport.width}`);
        const pane = await page.locator('[data-role="trace-details"]').evaluate((el) => ({ sw: el.scrollWidth, cw: el.clientWidth }));
        assert(pane.sw <= pane.cw + 1, `the details pane does not scroll sideways: ${JSON.stringify(pane)}`);
      }
      await shot();
    });

    await h.test('defect: op profile bandwidth colours run as FLOPS colours (high = green) and are explained', async ({ page, shot }) => {
      await open(page, demo.url, { run: gemm, tool: 'op_profile' });
      assert((await text(page, '[data-role="util-legend"]')).includes('0% low'), 'a legend explains the colours');
      const bars = await page.locator('.util-fill').evaluateAll((els) =>
        els.map((e) => {
          const m = getComputedStyle(e).backgroundColor.match(/\d+/g).map(Number);
          return { width: parseFloat(e.style.width), r: m[0], g: m[1] };
        }),
      );
      assert(bars.length > 0, 'utilization bars');
      for (const b of bars) {
        if (b.width >= 75) assert(b.g > b.r, `a high utilization is green: ${JSON.stringify(b)}`);
        if (b.width > 0 && b.width <= 20) assert(b.r > b.g, `a low utilization is red: ${JSON.stringify(b)}`);
      }
      await shot();
    });

    await h.test('defect: HLO stats pie labels stay off the legend (nothing is drawn between a pie and its legend)', async ({ page, shot }) => {
      await open(page, demo.url, { run: gemm, tool: 'hlo_stats' });
      const pies = page.locator('[data-page="hlo_stats"] [data-chart][aria-label^="Pie chart"]');
      assert((await pies.count()) > 0, 'pie charts');
      for (const i of [...Array(await pies.count()).keys()]) {
        // charts.ts PIE_LAYOUT: centre at 30% of the width, radius 60% of half the smaller
        // side, legend from 60%. Labels outside the sectors used to run into the legend.
        const band = await pies.nth(i).evaluate((el) => {
          const canvas = el.querySelector('canvas');
          const w = el.clientWidth;
          const hgt = el.clientHeight;
          const scale = canvas.width / w;
          const from = Math.ceil(0.3 * w + (0.6 * Math.min(w, hgt)) / 2) + 3;
          const to = Math.floor(0.6 * w) - 3;
          const ctx = canvas.getContext('2d');
          let inked = 0;
          if (to > from) {
            const img = ctx.getImageData(Math.round(from * scale), Math.round(36 * scale), Math.round((to - from) * scale), Math.round((hgt - 46) * scale));
            for (let p = 3; p < img.data.length; p += 4) if (img.data[p] > 0) inked++;
          }
          return { from, to, inked, label: el.getAttribute('aria-label') };
        });
        assert(band.to - band.from >= 10, `a gap between pie and legend: ${JSON.stringify(band)}`);
        assertEqual(band.inked, 0, `nothing drawn between the pie and the legend of ${band.label}`);
      }
      await shot();
    });

    await h.test('defect: "no steps" is said once per page (oxprof\'s note), not two or three times, and fits an inference run', async ({ page, shot }) => {
      for (const tool of ['overview_page', 'input_pipeline_analyzer', 'pod_viewer']) {
        await open(page, demo.url, { run: gemm, tool });
        const said = await page.evaluate(() => {
          const blocks = [...document.querySelectorAll('[data-role="notes"] li, .diag, [data-role="no-steps"], [data-role="statement"], [data-role="input-conclusion"]')];
          return blocks.filter((b) => /no step/i.test(b.textContent)).length;
        });
        assertEqual(said, 1, `${tool}: one "no steps" message`);
        // A GEMM without gradient ops is inference: no advice to wrap training steps.
        const note = await page.evaluate(() => [...document.querySelectorAll('[data-role="notes"] li, .diag')].map((b) => b.textContent).find((t) => /no step/i.test(t)) ?? '');
        assert(/inference/.test(note) && !/wrap each training step/i.test(note), `${tool}: the note fits an inference run: ${note}`);
        await shot(`.${tool}`);
      }
    });
  } finally {
    await demo.stop();
  }

  if (stepsRun) {
    await h.test('defect: overview "Training" and framework op stats "Task" say where each comes from', async ({ page }) => {
      await open(page, base, { run: stepsRun, tool: 'overview_page' });
      const training = await text(page, '[data-props="run-environment"] [data-prop="Training"]');
      assert(/XLA programs/.test(training), `the overview names its source: ${training}`);
      await open(page, base, { run: stepsRun, tool: 'framework_op_stats' });
      const task = await text(page, '[data-role="model-properties"]');
      assert(/Task: Training/.test(task) && /framework op names/.test(task), `framework op stats names its source: ${task}`);
    });
  }

  if (jaxRun) {
    await h.test('defect: memory viewer sizes keep their magnitude (no "0.00 MiB" for a small buffer)', async ({ page, shot }) => {
      await open(page, base, { run: jaxRun, tool: 'memory_viewer' });
      await page.waitForFunction(() => document.querySelector('[data-chart="memory-viewer"]')?.dataset.ready === 'true');
      const body = await page.evaluate(() => document.body.innerText);
      assert(!/\b0\.00 MiB\b/.test(body), 'no "0.00 MiB"');
      assert(/\d (B|KiB|MiB|GiB)\b/.test(body), 'sizes in binary units');
      await shot();
    });
  }

  // XProf's "-nan" standard deviations (8×V100 TensorFlow profile, external test data).
  {
    const gpuDir = join(ctx.external, 'openxla-xprof/demo/plugins/profile/GPU-multi-worker');
    if (!existsSync(gpuDir)) h.skip('defect: σ -nan', `no GPU test profile at ${gpuDir}`);
    else {
      const gpu = await startServer(bin, gpuDir);
      try {
        await h.test('defect: the V100 input pipeline and overview show no "σ -nan ms" (XProf\'s NaN standard deviations are left out)', async ({ page, shot }) => {
          const run = (await (await fetch(new URL('/data/plugin/profile/runs', gpu.url))).json())[0];
          for (const tool of ['input_pipeline_analyzer', 'overview_page']) {
            const data = await ctx.api(gpu.url, 'data', { run, tag: tool, host: 'ALL_HOSTS' });
            const props = Object.entries(data.find((t) => (t.cols || []).some((c) => c.id === 'stepnum'))?.p ?? {});
            const nan = props.filter(([k, v]) => k.endsWith('_sdv') && /nan/i.test(v));
            assert(nan.length > 0, `${tool}: the API keeps XProf's -nan (the test covers the case): ${JSON.stringify(props)}`);
            await open(page, gpu.url, { run, tool, host: 'ALL_HOSTS' });
            const body = await page.evaluate(() => document.body.innerText);
            assert(!/\bnan\b/i.test(body), `${tool}: no "nan" on the page`);
            const [key] = nan[0];
            const avgKey = key.replace(/_sdv$/, '_avg');
            const avg = props.find(([k]) => k === avgKey)?.[1];
            if (avg !== undefined && tool === 'overview_page') {
              assertEqual(await text(page, `[data-prop="${avgKey}"]`), `${avg} ms`, `${avgKey}: the average alone`);
            }
            await shot(`.${tool}`);
          }
        });
        await h.test('defect: the V100 trace\'s section labels differ (they were cut to three identical "34.83.195.179_6003 /devic…")', async ({ page, shot }) => {
          const run = (await (await fetch(new URL('/data/plugin/profile/runs', gpu.url))).json())[0];
          const t = await (await fetch(new URL(`/oxprof/api/trace/tracks?run=${encodeURIComponent(run)}`, gpu.url))).json();
          assert(t.sections.length >= 3 && t.sections.every((x) => x.name.startsWith(`${x.host} `)), `sections named after their host: ${t.sections.map((x) => x.name)}`);
          await open(page, gpu.url, { run, tool: 'trace_viewer' });
          const shownNames = await page.locator('[data-section] [data-role="section-name"]').evaluateAll((els) => els.map((e) => ({ text: e.textContent, cut: e.scrollWidth > e.clientWidth + 1 })));
          assertEqual(shownNames.map((x) => x.text), t.sections.map((x) => x.name.slice(x.host.length + 1)), 'labels without the host (named in the page)');
          assertEqual(new Set(shownNames.map((x) => x.text)).size, shownNames.length, 'distinct labels');
          assert(shownNames.every((x) => !x.cut), `no label is cut: ${JSON.stringify(shownNames)}`);
          assertEqual(await page.locator('[data-section]').evaluateAll((els) => els.map((e) => e.title)), t.sections.map((x) => x.name), 'full names in tooltips');
          await shot();
        });
      } finally {
        await gpu.stop();
      }
    }
  }

  // A logdir whose profiles are symlinks to outside it: the reason is the headline, and
  // --follow-symlinks serves it on purpose.
  {
    const outside = mkdtempSync(join(tmpdir(), 'oxprof-outside-'));
    const logdir = mkdtempSync(join(tmpdir(), 'oxprof-links-'));
    const runDir = join(logdir, 'plugins/profile/linked');
    mkdirSync(runDir, { recursive: true });
    copyFileSync(join(repo, 'testdata/profiles/jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz'), join(outside, 'vm.xplane.pb.gz'));
    symlinkSync(join(outside, 'vm.xplane.pb.gz'), join(runDir, 'vm.xplane.pb.gz'));
    try {
      await h.test('defect: a logdir of symlinks says why in the headline; --follow-symlinks serves it', async ({ page, shot }) => {
        const plain = await startServer(bin, logdir);
        try {
          await page.goto(plain.url);
          await waitReady(page, 'empty');
          const headline = await text(page, '[data-role="empty-headline"]');
          assert(/symlink/.test(headline) && headline.includes('--follow-symlinks'), `the headline says why and what to do: ${headline}`);
          assert(!/^No profiles found$/.test(headline), 'not the generic headline');
          await shot();
        } finally {
          await plain.stop();
        }
        const following = await startServer(bin, logdir, ['--follow-symlinks']);
        try {
          await open(page, following.url, { run: 'linked', tool: 'overview_page' });
          await page.locator('[data-page="overview_page"]').waitFor();
        } finally {
          await following.stop();
        }
      });
    } finally {
      rmSync(logdir, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  }

  // Capture refusals (4xx): the dialog says what the status means and what to do.
  {
    const dir = mkdtempSync(join(tmpdir(), 'oxprof-capture4xx-'));
    const runDir = join(dir, 'plugins/profile/existing');
    mkdirSync(runDir, { recursive: true });
    copyFileSync(join(repo, 'testdata/profiles/jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz'), join(runDir, 'vm.xplane.pb.gz'));
    const served = await startServer(bin, dir);
    try {
      await h.test('capture: refusals show the message, the HTTP status and what to do (400 bad duration, 403 target not allowed)', async ({ page, shot }) => {
        await page.goto(served.url);
        await waitReady(page);
        for (const [fields, status, hint] of [
          [{ service_addr: '127.0.0.1:1', duration: '900000' }, 400, 'parameter'],
          [{ service_addr: '10.255.255.1:6009', duration: '1000' }, 403, '--capture-allow'],
        ]) {
          if (!(await page.locator('[data-role="capture-dialog"]').isVisible())) await page.click('[data-role="capture"]');
          for (const [role, value] of Object.entries(fields)) await page.fill(`[data-role="capture-dialog"] [data-role="${role}"]`, value);
          await page.click('[data-role="capture-submit"]');
          await page.waitForFunction((s) => document.querySelector('[data-role="capture-backdrop"]')?.dataset.status === s, String(status), { timeout: 30_000 });
          assert((await text(page, '[data-role="capture-message"]')).length > 0, 'the server\'s message');
          assert((await text(page, '[data-role="capture-hint"]')).includes(hint), `${status}: what to do`);
          assert((await text(page, '[data-role="capture-status-code"]')).includes(`HTTP ${status}`), `${status}: the status`);
          await shot(`.${status}`);
        }
      }, { allowConsole: /Failed to load resource|400|403/ });
    } finally {
      await served.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  // ---- accessibility and themes ------------------------------------------------------------
  if (stepsRun && jaxRun) {
    await h.test('themes: the system\'s dark preference and the toggle; charts have text alternatives; section headers take the keyboard', async ({ page, shot }) => {
      await page.emulateMedia({ colorScheme: 'dark' });
      await open(page, base, { run: stepsRun, tool: 'overview_page' });
      assertEqual(await page.evaluate(() => document.documentElement.dataset.theme), 'dark', 'dark by the system preference');
      const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      assert(/rgb\((\d+), (\d+), (\d+)\)/.test(bg) && bg.match(/\d+/g).slice(0, 3).every((c) => Number(c) < 60), `a dark background: ${bg}`);
      const alt = await page.getAttribute('[data-chart="step-time"]', 'aria-label');
      assert(/^Bar chart: Step time/.test(alt) && /categories/.test(alt), `the step-time graph is described: ${alt}`);
      await shot('.dark');
      await page.click('[data-role="theme"]'); // dark (system) → light
      await waitReady(page);
      assertEqual(await page.evaluate(() => document.documentElement.dataset.theme), 'light', 'the toggle picks light');
      await page.reload();
      await waitReady(page);
      assertEqual(await page.evaluate(() => document.documentElement.dataset.theme), 'light', 'remembered');
      // Trace viewer: section headers are buttons; Enter folds one.
      await open(page, base, { run: jaxRun, tool: 'trace_viewer' });
      const toggle = page.locator('[data-section] .trace-section-toggle').first();
      await toggle.focus();
      await page.keyboard.press('Enter');
      await waitReady(page);
      assertEqual(await page.locator('[data-section]').first().getAttribute('data-collapsed'), 'true', 'Enter on a focused section header folds it');
      assertEqual(await page.locator('[data-section] .trace-section-toggle').first().getAttribute('aria-expanded'), 'false', 'aria-expanded');
    });
  }

  // ---- every page, two screen sizes, no horizontal scroll ------------------------------------
  const demo2 = await startServer(bin, null);
  try {
    const targets = [
      [base, stepsRun],
      [base, jaxRun],
      [demo2.url, 'mi300x_jax_gemm/jax08_gemm'],
      [demo2.url, 'pytorch_a100_ddp'],
    ].filter(([, run]) => run);
    for (const viewport of [{ width: 1440, height: 900 }, { width: 1024, height: 768 }]) {
      for (const [server, run] of targets) {
        await h.test(`layout ${viewport.width}x${viewport.height}: every page of ${run} fits the width`, async ({ page }) => {
          const tools = (await (await fetch(new URL(`/oxprof/api/run?run=${encodeURIComponent(run)}`, server))).json()).offered.map((t) => t.name);
          for (const tool of tools) {
            await open(page, server, { run, tool });
            await noHorizontalScroll(page, `${tool} at ${viewport.width}x${viewport.height}`);
            await page.screenshot({ path: join(ctx.artifacts, `layout_${viewport.width}x${viewport.height}_${run.replace(/[^A-Za-z0-9_-]+/g, '_')}_${tool.replace(/[^A-Za-z0-9_-]+/g, '_')}.png`), fullPage: tool !== 'trace_viewer@' });
          }
        }, { viewport });
      }
    }
  } finally {
    await demo2.stop();
  }
}
