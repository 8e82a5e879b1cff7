// The compare view (issue 16 item 4) against a real `oxprof serve` of testdata/diff (the
// committed pairs: slow_b32 input-bound, fast_b32 the fixed pipeline, fast_b128 a larger
// batch): the pickers, every section with its numbers checked against /oxprof/api/diff,
// links to each side's pages, state in the URL, swap, a run against itself, a bad B, and no
// horizontal scroll at 1440x900 and 1024x768.
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

export async function register(ctx) {
  const { h, repo } = ctx;
  const server = await startServer(process.env.OXPROF_BIN, join(repo, 'testdata/diff'));
  try {
    const base = server.url;
    const runs = await (await fetch(new URL('/data/plugin/profile/runs', base))).json();
    const slow = runs.find((r) => r.startsWith('slow_b32/'));
    const fast = runs.find((r) => r.startsWith('fast_b32/'));
    const big = runs.find((r) => r.startsWith('fast_b128/'));
    assert(slow && fast && big, `the three runs of testdata/diff: ${runs}`);
    const diffOf = async (params) => {
      const r = await fetch(new URL(`/oxprof/api/diff?${new URLSearchParams(params)}`, base));
      assert(r.ok, `/oxprof/api/diff: HTTP ${r.status}`);
      return r.json();
    };
    const openCompare = async (page, params, state = 'ready') => {
      await page.goto(new URL(`/?${new URLSearchParams({ tool: 'compare', ...params })}`, base).toString());
      await waitCompare(page, state);
    };
    const waitCompare = (page, state = 'ready') =>
      page.waitForFunction(
        (s) => document.querySelector('[data-page="compare"]')?.dataset.state === s && [...document.querySelectorAll('[data-chart]')].every((c) => c.dataset.ready === 'true'),
        state,
        { timeout: 60_000 },
      );
    const count = async (page, key) => Number(await page.getAttribute(`[data-table="${key}"] [data-role="count"]`, 'data-total'));
    const cell = (page, key, rowIndex, col) => page.locator(`[data-table="${key}"] tbody tr:not(.spacer-row)`).nth(rowIndex).locator(`td[data-col="${col}"]`);
    const noHorizontalScroll = async (page, what) => {
      const size = await page.evaluate(() => ({ sw: document.documentElement.scrollWidth, bw: document.body.scrollWidth, iw: innerWidth }));
      assert(size.sw <= size.iw && size.bw <= size.iw, `${what}: no horizontal scroll (${JSON.stringify(size)})`);
    };

    await h.test('compare: input-bound vs fixed pipeline, every section with the API\'s numbers', async ({ page, shot }) => {
      const diff = await diffOf({ run: slow, run_b: fast });
      await openCompare(page, { run: slow, run_b: fast });
      assertEqual(await page.locator('[data-role="run-a"]').innerText(), slow, 'A is the header run');
      assertEqual(await page.locator('[data-role="run-b"]').inputValue(), fast, 'B picked from the URL');
      // Steps: the headline and the table (every metric plus the input share).
      const stepTime = diff.steps.metrics[0];
      const relative = await page.locator('[data-metric="step_time_change"] [data-role="value"]').innerText();
      assertEqual(relative, `−${(Math.abs(stepTime.change.relative) * 100).toFixed(1)}%`, 'step time change');
      const detail = await page.locator('[data-metric="step_time_change"] .metric-detail').innerText();
      assert(detail.includes('beyond noise') && detail.includes('p < 0.0001'), `verdict and p-value: ${detail}`);
      assertEqual(await count(page, 'steps'), diff.steps.metrics.length + 1, 'step metrics and the input share');
      assertEqual(await cell(page, 'steps', 0, 'a').getAttribute('data-value'), String(stepTime.change.a), 'raw value kept');
      assert(/ ms$/.test(await cell(page, 'steps', 0, 'a').innerText()), 'step time in ms');
      assertEqual(await cell(page, 'steps', 0, 'verdict').innerText(), 'beyond noise', 'step time verdict');
      assertEqual(await cell(page, 'steps', 0, 'p_value').innerText(), '< 0.0001', 'p-value');
      assert(/^−\d+\.\d\d$/.test(await cell(page, 'steps', 0, 'hedges_g').innerText()), "Hedges' g");
      assertEqual(await page.locator('[data-chart="compare-breakdown"]').getAttribute('data-ready'), 'true', 'breakdown chart');
      // Input pipeline.
      assert((await page.locator('[data-role="input-a"]').innerText()).includes('HIGHLY input-bound'), 'A is input-bound');
      // Framework ops: regressions + improvements + unchanged = matched; only in A.
      const ops = diff.ops.find((o) => o.kind === 'framework_op');
      const listed = (await count(page, 'framework_op.regressions')) + (await count(page, 'framework_op.improvements')) + ((await page.locator('[data-table="framework_op.unchanged"]').count()) ? await count(page, 'framework_op.unchanged') : 0);
      assertEqual(listed, ops.counts.matched, 'every matched op in one list');
      assertEqual(await count(page, 'framework_op.only_in_a'), ops.counts.only_in_a, 'only in A');
      assertEqual(await count(page, 'framework_op.only_in_b'), ops.counts.only_in_b, 'only in B');
      const firstImprovement = ops.matched.filter((o) => o.self_time_us.delta < 0)[0];
      assertEqual(await cell(page, 'framework_op.improvements', 0, 'name').getAttribute('data-value'), firstImprovement.name, 'largest improvement first');
      assert((await cell(page, 'framework_op.improvements', 0, 'self_relative').innerText()).startsWith('−'), 'signed relative change');
      // Memory.
      assertEqual(await count(page, 'memory'), diff.memory.allocators.length, 'allocators');
      // CSV of the whole comparison from the server.
      const csv = await (await fetch(new URL(await page.getAttribute('[data-role="diff-csv"]', 'href'), base))).text();
      assert(csv.split('\n').length > 10 && csv.includes('step_time'), 'the server CSV');
      await shot();
      for (const viewport of [{ width: 1440, height: 900 }, { width: 1024, height: 768 }]) {
        await page.setViewportSize(viewport);
        await page.waitForTimeout(200);
        await noHorizontalScroll(page, `compare at ${viewport.width}x${viewport.height}`);
        await shot(`.${viewport.width}`);
      }
    });

    await h.test('compare: an op links to its table in each run', async ({ page }) => {
      await openCompare(page, { run: slow, run_b: fast });
      const link = page.locator('[data-table="framework_op.only_in_a"] tbody td[data-col="links"] a[data-link="A"]').first();
      const href = await link.getAttribute('href');
      assert(href.includes('tool=framework_op_stats') && href.includes('ops.q=EagerPyFunc'), `link: ${href}`);
      await link.click();
      await ctx.waitReady(page);
      assertEqual(await page.locator('[data-table="ops"] [data-role="filter"]').inputValue(), 'EagerPyFunc', 'the op table filtered to the op');
      assertEqual(new URL(page.url()).searchParams.get('run'), slow, 'in run A');
      await page.goBack();
      await waitCompare(page);
      const traceB = await page.locator('[data-table="framework_op.improvements"] tbody td[data-col="links"] a[data-link="trace B"]').first().getAttribute('href');
      const params = new URL(traceB, base).searchParams;
      assertEqual([params.get('run'), params.get('tool'), params.get('host')], [fast, 'trace_viewer@', 'vm'], 'trace link of B');
      const overviewB = await page.locator('[data-role="open-b-overview_page"]').getAttribute('href');
      assertEqual(new URL(overviewB, base).searchParams.get('run'), fast, 'B overview link');
    });

    await h.test('compare: from a run\'s page, pick B, swap; the URL holds the comparison', async ({ page, shot }) => {
      await ctx.open(page, base, { run: fast, tool: 'overview_page' });
      await page.click('[data-role="compare"]');
      await waitCompare(page);
      const url = () => new URL(page.url()).searchParams;
      assertEqual([url().get('tool'), url().get('run')], ['compare', fast], 'compare view of this run');
      assertEqual(await page.locator('[data-role="run-b"]').inputValue(), big, 'B defaults to the next run');
      await page.selectOption('[data-role="run-b"]', slow);
      await waitCompare(page);
      assertEqual(url().get('run_b'), slow, 'B in the URL');
      await page.click('[data-role="swap"]');
      await waitCompare(page);
      assertEqual([url().get('run'), url().get('run_b')], [slow, fast], 'swapped');
      assertEqual(await page.locator('[data-role="run-a"]').innerText(), slow, 'A after the swap');
      // Sorting a delta table is kept in the URL and restored.
      await page.locator('[data-table="framework_op.improvements"] th[data-col="self_relative"]').click();
      assert(url().get('framework_op.improvements.sort'), 'sort in the URL');
      await page.reload();
      await waitCompare(page);
      assert(url().get('framework_op.improvements.sort'), 'sort kept after a reload');
      // Another run A from the header keeps B.
      await page.selectOption('[data-role="run"]', big);
      await waitCompare(page);
      assertEqual([url().get('tool'), url().get('run'), url().get('run_b')], ['compare', big, fast], 'B kept when A changes');
      assertEqual(await page.locator('[data-role="run-a"]').innerText(), big, 'the new A');
      // Leaving the view through the Tools menu.
      await page.selectOption('[data-role="tool"]', 'overview_page');
      await ctx.waitReady(page);
      await page.locator('[data-page="overview_page"]').waitFor();
      await shot();
    });

    await h.test('compare: a run against itself changes nothing; batch 32 vs 128 compares', async ({ page }) => {
      await openCompare(page, { run: fast, run_b: fast });
      const verdicts = await page.locator('[data-table="steps"] td[data-col="verdict"]').allInnerTexts();
      assert(verdicts.length > 0 && verdicts.every((v) => v === 'within noise'), `nothing beyond noise: ${verdicts}`);
      assertEqual(await page.locator('[data-metric="step_time_change"] [data-role="value"]').innerText(), '0%', 'no change');
      assertEqual(await count(page, 'framework_op.regressions'), 0, 'no regressions');
      await openCompare(page, { run: fast, run_b: big });
      const diff = await diffOf({ run: fast, run_b: big });
      assertEqual(await count(page, 'framework_op.only_in_b'), diff.ops[0].counts.only_in_b, 'ops only in the larger batch');
    });

    await h.test('compare: an unknown run B is one clear error', async ({ page }) => {
      await openCompare(page, { run: fast, run_b: 'no_such_run' }, 'error');
      const message = await page.locator('[data-page="compare"] [data-role="error-message"]').innerText();
      assert(/no_such_run/.test(message), `names the run: ${message}`);
    }, { allowConsole: /Failed to load resource|404/ });
  } finally {
    await server.stop();
  }
}
