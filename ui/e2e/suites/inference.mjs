// Browser tests of the inference pages, against a server of their own over
// testdata/inference (the real TensorFlow serving profile tf_serving): the overview page's
// inference variant (average session time, the latency breakdown table at percentiles with
// host compute, device compute and host–device communication, the session chart, the link
// to the inference profile) and the inference_profile page (model selector, request and
// batch summaries, the latency chart, request and batch tables). Shown numbers are checked
// against the API's answers.
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';
import { assertTime } from '../units.mjs';

export async function register(ctx) {
  const { h, open, repo, api } = ctx;
  const bin = process.env.OXPROF_BIN;
  const server = await startServer(bin, join(repo, 'testdata/inference'));
  try {
    const runs = await api(server.url, 'runs');
    const run = runs.find((r) => r.includes('tf_serving'));
    assert(run, `tf_serving run listed: ${runs.join(', ')}`);

    await h.test('inference: overview shows average session time, the latency breakdown table and the session chart', async ({ page, consoleErrors, shot }) => {
      const data = await api(server.url, 'data', { run, tag: 'overview_page', host: 'ALL_HOSTS' });
      const latency = data[4];
      const avg = latency.rows.find((r) => r.c[0].v === 'Avg');
      assert(avg, 'an Avg row');
      await open(page, server.url, { run, tool: 'overview_page' });
      const value = page.locator('[data-metric="average_session_time"] [data-role="value"]');
      await value.waitFor();
      assertTime((await value.innerText()).trim(), Number(avg.c[4].v) * 1e9, 'average session time');
      const table = page.locator('[data-table="inference-latency"]');
      const labels = await table.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.row));
      assertEqual(labels, latency.rows.map((r) => r.c[0].v), 'one row per percentile');
      for (const col of ['hostTimeMs', 'deviceTimeMs', 'communicationTimeMs', 'totalTimeMs']) {
        assertEqual(await table.locator(`th[data-col="${col}"]`).count(), 1, `column ${col}`);
      }
      const p50 = latency.rows.find((r) => r.c[0].v === '50.0%');
      const shown = await table.locator('tr[data-row="50.0%"] td[data-col="hostTimeMs"]').innerText();
      assertTime(shown.trim(), Number(p50.c[1].v) * 1e9, '50th percentile host compute');
      await page.locator('[data-chart="inference-latency"]').waitFor();
      assert(await page.locator('[data-role="inference-profile-link"]').count(), 'link to the inference profile');
      assertEqual(consoleErrors.length, 0, `console errors: ${consoleErrors.join('; ')}`);
      await shot();
    });

    await h.test('inference: inference profile shows the models, request and batch summaries, chart and tables', async ({ page, consoleErrors, shot }) => {
      const data = await api(server.url, 'data', { run, tag: 'inference_profile', host: 'ALL_HOSTS' });
      const models = data[0].rows.map((r) => r.c[0].v);
      assertEqual(models, ['mlp:1', 'tiny:2'], 'two models');
      await open(page, server.url, { run, tool: 'inference_profile' });
      const select = page.locator('[data-role="model-select"]');
      await select.waitFor();
      assertEqual(await select.locator('option').evaluateAll((o) => o.map((x) => x.value)), models, 'model selector');
      assertEqual((await page.locator('[data-role="has-batching"]').innerText()).trim(), 'batching: yes', 'batching');
      const requests = data[1];
      const batches = data[2];
      assertEqual((await page.locator('[data-metric="request-throughput"] [data-role="value"]').innerText()).trim(), `${requests.p.throughput} /s`, 'request throughput');
      assertTime((await page.locator('[data-metric="request-latency"] [data-role="value"]').innerText()).trim(), Number(requests.p.averageLatencyMs) * 1e9, 'request latency');
      assertTime((await page.locator('[data-metric="batch-latency"] [data-role="value"]').innerText()).trim(), Number(batches.p.averageLatencyMs) * 1e9, 'batch latency');
      await page.locator('[data-chart="inference-request-latency"]').waitFor();
      assertEqual(await page.locator('[data-table="requests"] [data-role="count"]').getAttribute('data-total'), String(requests.rows.length), 'request rows');
      assertEqual(await page.locator('[data-table="batches"] [data-role="count"]').getAttribute('data-total'), String(batches.rows.length), 'batch rows');
      // The second model: no batches of its own, so only its Aggregated batch row.
      await select.selectOption('tiny:2');
      await page.waitForFunction(() => document.querySelector('[data-table="batches"] [data-role="count"]')?.dataset.total === '1');
      assertEqual(await page.locator('[data-table="requests"] [data-role="count"]').getAttribute('data-total'), String(data[3].rows.length), 'tiny:2 request rows');
      assertEqual(consoleErrors.length, 0, `console errors: ${consoleErrors.join('; ')}`);
      await shot();
    });
  } finally {
    await server.stop();
  }

  await h.test('inference: a training profile without requests shows the ALL model and its empty average rows', async ({ page, consoleErrors, shot }) => {
    const run = ctx.runs.find((r) => r.includes('tf_custom_loop'));
    const data = await api(ctx.base, 'data', { run, tag: 'inference_profile', host: 'ALL_HOSTS' });
    await open(page, ctx.base, { run, tool: 'inference_profile' });
    const select = page.locator('[data-role="model-select"]');
    await select.waitFor();
    assertEqual(await select.locator('option').evaluateAll((o) => o.map((x) => x.value)), ['ALL'], 'model ALL');
    assertEqual(await page.locator('[data-table="requests"] [data-role="count"]').getAttribute('data-total'), String(data[1].rows.length), 'the Average row only');
    assertEqual(consoleErrors.length, 0, `console errors: ${consoleErrors.join('; ')}`);
    await shot();
  });
}
