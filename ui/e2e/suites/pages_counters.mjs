// Browser tests of the pages of perf_counters, utilization_viewer, megascale_stats and
// smart_suggestion, and of the overview's smart-suggestions section: on a server of their
// own over the synthetic TPU counter profile (testdata/tpu-synthetic/counters, two hosts)
// and on the main server.
// Shown numbers are checked against the API's answers.
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

export async function register(ctx) {
  const { h, base, pick, api, open, checkTable, text, repo } = ctx;
  const bin = process.env.OXPROF_BIN;
  const srv = await startServer(bin, join(repo, 'testdata/tpu-synthetic/counters'));
  const run = (await api(srv.url, 'runs'))[0];

  await h.test('counter pages: perf counters list every reading of the host, chart of the first sample, sort/CSV', async ({ page, shot }) => {
    const tools = await api(srv.url, 'run_tools', { run });
    assert(tools.includes('perf_counters') && tools.includes('utilization_viewer'), `XProf lists the counter tools: ${tools}`);
    const data = await api(srv.url, 'data', { run, tag: 'perf_counters', host: 'host0' });
    await open(page, srv.url, { run, tool: 'perf_counters', host: 'host0' });
    assertEqual(await text(page, '[data-metric="readings"] [data-role="value"]'), String(data.rows.length), 'readings');
    const counters = new Set(data.rows.map((r) => r.c[4].v));
    assertEqual(await text(page, '[data-metric="counters"] [data-role="value"]'), String(counters.size), 'distinct counters');
    const first = data.rows[0].c;
    assertEqual(await text(page, '[data-role="chart-sample"]'), `${first[0].v}, chip ${first[1].v}, ${first[2].v} sample ${first[3].v}`, 'chart sample');
    assert(await page.locator('[data-chart="perf-counters-top"]').count(), 'the counters chart is drawn');
    const hexes = new Set(data.rows.map((r) => r.c[5].f));
    const shownHex = await page.locator('[data-table="perf-counters"] tbody td[data-col="ValueHex"]').evaluateAll((tds) => tds.map((td) => td.textContent.trim()));
    assert(shownHex.length > 0 && shownHex.every((x) => hexes.has(x)), `hex values shown are XProf's: ${shownHex.slice(0, 3)}`);
    // The page's table: XProf's, with the hex text in a column of its own after the value.
    const withHex = {
      cols: [...data.cols.slice(0, 5), { ...data.cols[5], label: 'Value' }, { id: 'ValueHex', label: 'Value (hex)', type: 'string' }, ...data.cols.slice(6)],
      rows: data.rows.map((r) => ({ c: [...r.c.slice(0, 6), { v: r.c[5].f }, ...r.c.slice(6)] })),
    };
    await checkTable(page, 'perf-counters', withHex, 'Value');
    await shot();
  });

  await h.test('counter pages: perf counters of ALL_HOSTS hold both hosts; filtering by counter name narrows them', async ({ page }) => {
    const data = await api(srv.url, 'data', { run, tag: 'perf_counters', host: 'ALL_HOSTS' });
    assertEqual(new Set(data.rows.map((r) => r.c[0].v)).size, 2, 'two hosts in the data');
    await open(page, srv.url, { run, tool: 'perf_counters', host: 'ALL_HOSTS' });
    assertEqual(await text(page, '[data-metric="hosts"] [data-role="value"]'), '2', 'hosts shown');
    const card = page.locator('[data-table="perf-counters"]');
    await card.locator('input.filter').fill('xlu_busy');
    const want = data.rows.filter((r) => String(r.c[4].v).includes('xlu_busy')).length;
    await page.waitForFunction(
      ([n]) => document.querySelector('[data-table="perf-counters"] [data-role="count"]')?.textContent?.includes(String(n)),
      [want],
      { timeout: 10_000 },
    );
  });

  await h.test('counter pages: utilization viewer charts the first sample against its peaks and lists every metric', async ({ page, shot }) => {
    const data = await api(srv.url, 'data', { run, tag: 'utilization_viewer', host: 'host1' });
    assert(data.rows.length > 0, 'the API has utilization rows');
    await open(page, srv.url, { run, tool: 'utilization_viewer', host: 'host1' });
    const first = data.rows[0].c;
    assertEqual(await text(page, '[data-role="chart-sample"]'), `device ${first[1].v}, sample ${first[2].v}: achieved as % of peak`, 'chart sample');
    assert(await page.locator('[data-chart="utilization-first"]').count(), 'the utilization chart is drawn');
    await checkTable(page, 'utilization', data, 'achieved');
    await shot();
  });

  await h.test('counter pages: megascale stats of a run without DCN collectives say so, with the empty table', async ({ page, shot }) => {
    const data = await api(srv.url, 'data', { run, tag: 'megascale_stats', host: 'host0' });
    assertEqual(data[0].rows.length, 0, 'no collectives in the API');
    await open(page, srv.url, { run, tool: 'megascale_stats', host: 'host0' });
    assert(await page.locator('[data-role="no-collectives"]').count(), 'the page says there are no DCN collectives');
    await checkTable(page, 'megascale', data[0], 'slack_time');
    await shot();
  });

  await h.test('counter pages: smart suggestions page and the overview section show XProf’s (empty) advice', async ({ page, shot }) => {
    const data = await api(srv.url, 'data', { run, tag: 'smart_suggestion', host: 'ALL_HOSTS' });
    assertEqual(data.suggestions.length, 0, 'XProf 2.24.2 has no suggestion for this run');
    await open(page, srv.url, { run, tool: 'smart_suggestion', host: 'ALL_HOSTS' });
    assert(await page.locator('[data-page="smart_suggestion"] [data-role="no-suggestions"]').count(), 'the page says no rule applies');
    const mainRun = pick('jax_train');
    await open(page, base, { run: mainRun, tool: 'overview_page' });
    await page.waitForFunction(() => document.querySelector('[data-role="smart-suggestions"]')?.dataset.state === 'ready', null, { timeout: 30_000 });
    assert(await page.locator('[data-role="smart-suggestions"] [data-role="no-suggestions"]').count(), 'the overview shows the suggestions section');
    await shot();
  });

  await srv.stop();

  // A run with DCN collectives and barrier-cores time (testdata/tpu-synthetic/megascale:
  // three hosts, three rendezvous each, host2 a barrier straggler), on a server of its own.
  const dcn = await startServer(bin, join(repo, 'testdata/tpu-synthetic/megascale'));
  const dcnRun = (await api(dcn.url, 'runs'))[0];
  await h.test('counter pages: megascale stats of a run with DCN collectives chart the slack per rendezvous and list XProf’s rows', async ({ page, shot }) => {
    const tools = await api(dcn.url, 'run_tools', { run: dcnRun });
    assert(tools.includes('megascale_stats'), `XProf lists megascale_stats for MegaScale: events: ${tools}`);
    for (const host of ['host0', 'ALL_HOSTS']) {
      const data = await api(dcn.url, 'data', { run: dcnRun, tag: 'megascale_stats', host });
      assertEqual(data[0].rows.length, 3, `three rendezvous in the API (${host})`);
      await open(page, dcn.url, { run: dcnRun, tool: 'megascale_stats', host });
      assert(await page.locator('[data-chart="megascale-slack"]').count(), `the slack chart is drawn (${host})`);
      assertEqual(await page.locator('[data-role="no-collectives"]').count(), 0, `no empty-state text (${host})`);
      await checkTable(page, 'megascale', data[0], 'slack_time');
      const names = await page.locator('[data-table="megascale"] tbody td[data-col="rendezvous_name"]').evaluateAll((tds) => tds.map((td) => td.textContent.trim()));
      assertEqual([...names].sort().join(','), data[0].rows.map((r) => r.c[0].v).sort().join(','), `every rendezvous is listed (${host})`);
    }
    await shot();
  });
  await h.test('counter pages: megascale stats link each host’s Perfetto trace (XProf’s “Open in Perfetto”), not ALL_HOSTS’', async ({ page, shot }) => {
    await open(page, dcn.url, { run: dcnRun, tool: 'megascale_stats', host: 'host1' });
    const link = page.locator('[data-role="perfetto-trace"]');
    assertEqual(await link.count(), 1, 'the page links the trace');
    const href = await link.getAttribute('href');
    assert(href.includes('perfetto=true') && href.includes('host=host1'), `the link asks for host1's trace: ${href}`);
    // The body is XProf's gzipped trace (the browser undoes only the Content-Encoding): a
    // gzip stream under application/octet-stream.
    const got = await page.evaluate(async (url) => {
      const r = await fetch(url);
      const bytes = new Uint8Array(await r.arrayBuffer());
      return { status: r.status, type: r.headers.get('content-type'), length: bytes.length, magic: [bytes[0], bytes[1]] };
    }, href);
    assertEqual(got.status, 200, 'the trace is served');
    assert(got.type.startsWith('application/octet-stream'), `binary body: ${got.type}`);
    assertEqual(got.magic.join(','), '31,139', 'a gzip stream, as XProf sends it');
    assert(got.length > 1000, `a trace of the host's ops: ${got.length} bytes`);
    await open(page, dcn.url, { run: dcnRun, tool: 'megascale_stats', host: 'ALL_HOSTS' });
    assertEqual(await page.locator('[data-role="perfetto-trace"]').count(), 0, 'no trace link for ALL_HOSTS');
    assert(await page.locator('[data-role="perfetto-needs-host"]').count(), 'ALL_HOSTS asks for a host, as XProf does');
    await shot();
  });
  await h.test('counter pages: the barrier-cores suggestion of a run with barrier time is shown on its page', async ({ page, shot }) => {
    const data = await api(dcn.url, 'data', { run: dcnRun, tag: 'smart_suggestion', host: 'ALL_HOSTS' });
    assertEqual(data.suggestions.map((s) => s.ruleName).join(','), 'BarrierCoresRule', 'XProf’s rule fires in the API');
    await open(page, dcn.url, { run: dcnRun, tool: 'smart_suggestion', host: 'ALL_HOSTS' });
    const item = page.locator('[data-page="smart_suggestion"] [data-role="suggestions"] li[data-rule="BarrierCoresRule"]');
    assertEqual(await item.count(), 1, 'one suggestion shown');
    const shown = await item.textContent();
    assert(shown.includes('an average of 22.9% of each step time'), `the share of step time is shown: ${shown.slice(0, 200)}`);
    assert(shown.includes('Host host2 average barrier-cores time fraction: 39.4%'), `the straggler host is named: ${shown}`);
    assertEqual(await page.locator('[data-page="smart_suggestion"] [data-role="no-suggestions"]').count(), 0, 'no empty-state text');
    await shot();
  });
  await dcn.stop();
}
