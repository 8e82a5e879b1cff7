// Issue 41's leftovers, in the browser: the header on one line with no control over another
// at 1440, 1280 and 1024 px (the demo's runs, the compare view, the SQL page, a two-host
// trace with its Hosts picker), the trace toolbar and its status line on one line each; table
// titles without a unit their cells do not use (the PyTorch overview's step breakdown),
// tf.data's latencies and iterator boxes in adaptive units; the graph and memory viewers of a
// CPU run (no device time in op profile) opening on the module with the most time in the
// trace, not the alphabetically first.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';
import { assertTime } from '../units.mjs';

const SIZES = [
  { width: 1440, height: 900 },
  { width: 1280, height: 800 },
  { width: 1024, height: 768 },
];
const PYTORCH = 'pytorch_a100_ddp';
/** The trace's time per program, keyed as the module list names programs (ui/src/components/xla.ts). */
const PROGRAM_TIME_SQL = `SELECT m.string_value || '(' || COALESCE(CAST(p.int_value AS VARCHAR), p.string_value) || ')' AS module, SUM(s.dur_ps) AS ps
FROM slice s
JOIN args m ON m.arg_set_id = s.arg_set_id AND m.host = s.host AND m.key = 'hlo_module'
JOIN args p ON p.arg_set_id = s.arg_set_id AND p.host = s.host AND p.key = 'program_id'
GROUP BY 1`;

/** The header's controls (and visible captions) that overlap another or pass the right edge; its height in control heights. */
async function headerLayout(page) {
  return page.evaluate(() => {
    const header = document.querySelector('.app-header');
    const shown = [...header.querySelectorAll('select, button, a.button, .brand, .selector > span')].filter((e) => e.getClientRects().length && e.getBoundingClientRect().width > 2);
    const name = (e) => e.dataset.role || e.textContent.trim().slice(0, 12);
    const overlaps = [];
    for (let i = 0; i < shown.length; i++) {
      for (let j = i + 1; j < shown.length; j++) {
        const a = shown[i].getBoundingClientRect();
        const b = shown[j].getBoundingClientRect();
        if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) overlaps.push(`${name(shown[i])} over ${name(shown[j])}`);
      }
    }
    // A select drawn past its own label (the box shrank below it) runs into the next control.
    for (const label of header.querySelectorAll('.selector')) {
      const select = label.querySelector('select').getBoundingClientRect();
      if (select.right > label.getBoundingClientRect().right + 0.5) overlaps.push(`${name(label.querySelector('select'))} past its label by ${Math.round(select.right - label.getBoundingClientRect().right)} px`);
    }
    const outside = shown.filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5).map(name);
    const control = header.querySelector('select').getBoundingClientRect().height;
    return { overlaps, outside, lines: header.getBoundingClientRect().height / control };
  });
}

/** Height of an element over its tallest child's: 1 line is under 2. */
async function linesOf(page, selector) {
  return page.locator(selector).evaluate((el) => el.getBoundingClientRect().height / Math.max(...[...el.children].map((c) => c.getBoundingClientRect().height)));
}

export async function register(ctx) {
  const { h, base, runs, api, open, waitReady, external } = ctx;
  const bin = process.env.OXPROF_BIN;
  const demo = await startServer(bin, null);
  const gpuDir = join(external, 'openxla-xprof/demo/plugins/profile/GPU-multi-worker');
  const gpu = existsSync(gpuDir) ? await startServer(bin, gpuDir) : null;
  const sql = async (server, run, query) => {
    const url = new URL('/oxprof/api/query', server);
    url.searchParams.set('run', run);
    url.searchParams.set('sql', query);
    const r = await fetch(url);
    if (!r.ok) throw new Error(`SQL: HTTP ${r.status} ${await r.text()}`);
    return r.json();
  };
  try {
    // ---- the header and the trace toolbar at three widths ----------------------------------
    for (const size of SIZES) {
      await h.test(`layout ${size.width}x${size.height}: the header on one line, no control over another; the trace toolbar and status line on one line`, async ({ page, shot }) => {
        const pages = [
          [demo.url, {}],
          [demo.url, { run: PYTORCH, tool: 'trace_viewer' }],
          [demo.url, { run: PYTORCH, tool: 'compare' }],
          [demo.url, { run: PYTORCH, tool: 'query' }],
        ];
        if (gpu) {
          const run = (await api(gpu.url, 'runs'))[0];
          pages.push([gpu.url, { run, tool: 'trace_viewer', hosts: 'ALL_HOSTS' }]);
        }
        for (const [server, params] of pages) {
          await open(page, server, params);
          const what = `${params.tool || 'first page'} of ${params.run || 'the first run'}`;
          const layout = await headerLayout(page);
          assertEqual(layout.overlaps, [], `${what}: header controls overlapping`);
          assertEqual(layout.outside, [], `${what}: header controls past the right edge`);
          assert(layout.lines < 2, `${what}: header on one line (${layout.lines.toFixed(2)} control heights)`);
          if (params.tool === 'trace_viewer') {
            const toolbar = await linesOf(page, '[data-role="trace-toolbar"]');
            assert(toolbar < 2, `${what}: trace toolbar on one line (${toolbar.toFixed(2)})`);
            const status = await linesOf(page, '.trace-statusbar');
            assert(status < 2, `${what}: trace status line on one line (${status.toFixed(2)})`);
          }
          const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
          assert(sw <= cw, `${what}: no horizontal scroll (${sw} > ${cw})`);
        }
        await shot();
      }, { viewport: size });
    }

    // ---- units -------------------------------------------------------------------------------
    await h.test('units: the PyTorch overview\'s step breakdown is titled without "(µs)" and its cells read back the API\'s microseconds', async ({ page }) => {
      const data = await api(demo.url, 'data', { run: PYTORCH, tag: 'pytorch_overview' });
      const steps = data.find((t) => t.p?.name === 'step_breakdown');
      assert(/\(µs\)$/.test(steps.p.title), `the API's title names its unit: ${steps.p.title}`);
      await open(page, demo.url, { run: PYTORCH, tool: 'pytorch_overview' });
      const card = page.locator('[data-table="steps"]');
      assertEqual(await card.locator('h3').innerText(), steps.p.title.replace(/\s*\(µs\)$/, ''), 'the title without the unit');
      const kernel = steps.cols.findIndex((c) => c.id === 'kernel');
      const shown = await card.locator('tbody td[data-col="kernel"]').allInnerTexts();
      assertEqual(shown.length, steps.rows.length, 'every step and the average');
      steps.rows.forEach((r, i) => assertTime(shown[i], r.c[kernel].v * 1e6, `kernel time of row ${i}`));
    });

    const tfRun = runs.find((r) => r.includes('tf_custom_loop'));
    if (!tfRun) h.skip('units: tf.data', 'no tf_custom_loop run');
    else {
      await h.test('units: tf.data\'s bottleneck latency and iterator boxes in adaptive units (not "29,358 us" beside "27.18 ms")', async ({ page }) => {
        const data = await api(base, 'data', { run: tfRun, tag: 'tf_data_bottleneck_analysis' });
        const analysis = data.find((t) => t.cols.some((c) => c.id === 'bottleneck'));
        const col = analysis.cols.findIndex((c) => c.id === 'bottleneck');
        const latency = /Latency<\/u>: ([\d,]+) us/.exec(analysis.rows[0].c[col].v);
        assert(latency, `the API's bottleneck names its latency in us: ${analysis.rows[0].c[col].v}`);
        await open(page, base, { run: tfRun, tool: 'tf_data_bottleneck_analysis' });
        const summary = await page.locator('[data-role="tfd-bottleneck"] pre').innerText();
        assertTime(/Latency: (.*)$/m.exec(summary)?.[1] ?? '', Number(latency[1].replace(/,/g, '')) * 1e6, 'summary latency');
        const cell = await page.locator('[data-table="tfd-bottlenecks"] tbody td[data-col="bottleneck"]').first().innerText();
        assertTime(/Latency: (.*)$/m.exec(cell)?.[1] ?? '', Number(latency[1].replace(/,/g, '')) * 1e6, 'table latency');
        // The iterator boxes (their SVG text, or the DOT when Graphviz cannot run here).
        await page.waitForFunction(() => document.querySelector('[data-chart="tfd-graph"]')?.dataset.ready === 'true');
        const boxes = await page.locator('[data-role="tfd-svg"] text').allTextContents();
        if (boxes.length) {
          assert(!boxes.some((t) => /\d us\b/.test(t)), `no raw microseconds in the boxes: ${boxes.filter((t) => /\d us\b/.test(t)).slice(0, 3)}`);
          assert(boxes.some((t) => /^Start Time: [\d.,]+ (ms|µs|s)$/.test(t.trim())), 'start times in adaptive units');
        }
      });
    }

    // ---- the costliest module of a CPU run ----------------------------------------------------
    const jaxRun = runs.find((r) => r.includes('jax_train'));
    if (!jaxRun) h.skip('modules: CPU run', 'no jax_train run');
    else {
      await h.test('modules: the graph and memory viewers of a CPU run open on the module with the most time in the trace, listed costliest first', async ({ page }) => {
        const op = await api(base, 'data', { run: jaxRun, tag: 'op_profile' });
        assertEqual((op.byProgramExcludeIdle ?? op.byProgram)?.children ?? [], [], 'op profile has no device time on this CPU run');
        const times = new Map((await sql(base, jaxRun, PROGRAM_TIME_SQL)).rows.map((r) => [r[0], Number(r[1])]));
        const listed = (await (await fetch(new URL(`/data/plugin/profile/module_list?run=${encodeURIComponent(jaxRun)}`, base))).text()).split(',').filter((m) => m && m !== 'NO_MODULE');
        const costliest = [...times].sort((a, b) => b[1] - a[1])[0][0];
        assert(listed.includes(costliest) && costliest !== [...listed].sort()[0], `a costliest module (${costliest}) that is not the alphabetically first`);
        for (const [tool, role] of [
          ['graph_viewer', 'gv-module'],
          ['memory_viewer', 'mv-module'],
        ]) {
          await open(page, base, { run: jaxRun, tool });
          await page.waitForFunction((r) => document.querySelector(`[data-role="${r}"]`)?.value, role);
          assertEqual(await page.locator(`[data-role="${role}"]`).inputValue(), costliest, `${tool} opens on the costliest module`);
          assertEqual(new URL(page.url()).searchParams.get('module_name'), costliest, `${tool}: the module in the URL`);
          const options = await page.locator(`[data-role="${role}"] option`).evaluateAll((os) => os.map((o) => o.value));
          assertEqual([...options].sort(), [...listed].sort(), `${tool}: every module listed`);
          assert(options.every((m, i) => i === 0 || (times.get(options[i - 1]) ?? -1) >= (times.get(m) ?? -1)), `${tool}: costliest first: ${options}`);
          await waitReady(page);
        }
      });
    }
  } finally {
    await demo.stop();
    await gpu?.stop();
  }
}
