// The SQL query page: the schema beside the editor, a query answered as a table whose CSV
// export holds the rows, a bar chart of the result (switchable to a line), the statement
// kept in the URL, and bad SQL shown as the server's one-line error.
import { assert, assertEqual } from '../harness.mjs';

export async function register(ctx) {
  const { h, base, runs, open, waitReady, parseCsv } = ctx;
  const jaxRun = runs.find((r) => r.includes('jax_train'));
  if (!jaxRun) return;

  await h.test('query page: schema, results table with CSV, bar/line chart, URL state, errors', async ({ page, shot }) => {
    await open(page, base, { run: jaxRun, tool: 'query' });
    await page.locator('[data-role="sql-schema"] [data-table-name="slice"]').waitFor();
    assert((await page.locator('[data-role="sql-schema"] [data-table-name]').count()) >= 15, 'every table listed beside the editor');

    const sql = 'SELECT name, count(*) AS n, sum(dur) AS total_ns FROM slice GROUP BY name ORDER BY total_ns DESC, name LIMIT 7';
    await page.locator('[data-role="sql-editor"]').fill(sql);
    await page.locator('[data-role="sql-run"]').click();
    await page.locator('[data-role="sql-status"]', { hasText: 'rows' }).waitFor();
    const table = page.locator('[data-role="sql-results"] [data-table="sql"]');
    assertEqual(await table.locator('[data-role="count"]').getAttribute('data-total'), '7', 'seven rows');

    // The same numbers as the API answers.
    const answer = await page.evaluate(async (q) => (await fetch(`/oxprof/api/query?run=${encodeURIComponent(q.run)}&sql=${encodeURIComponent(q.sql)}`)).json(), { run: jaxRun, sql });
    assertEqual(answer.row_count, 7, 'API rows');

    // CSV export of the result.
    const [download] = await Promise.all([page.waitForEvent('download'), table.locator('[data-role="csv"]').click()]);
    const csv = parseCsv(await (await download.createReadStream()).toArray().then((parts) => Buffer.concat(parts).toString('utf8')));
    assertEqual(csv.length, 8, 'CSV: header and seven rows');
    assertEqual(csv[1][0], answer.rows[0][0], 'CSV: first name');

    // A bar chart of total_ns by name, then a line.
    await page.waitForFunction(() => document.querySelector('[data-role="sql-chart"] [data-chart]')?.dataset.ready === 'true');
    assertEqual(await page.locator('[data-role="chart-y"]').inputValue(), '1', 'y: the first number column');
    await page.locator('[data-role="chart-y"]').selectOption({ label: 'total_ns' });
    await page.locator('[data-role="chart-kind"]').selectOption('line');
    await page.waitForFunction(() => document.querySelector('[data-role="sql-chart"] [data-chart]')?.dataset.ready === 'true');
    const label = await page.locator('[data-role="sql-chart"] [data-chart]').getAttribute('aria-label');
    assert(/total_ns/.test(label ?? ''), `chart describes its series (${label})`);
    await shot('query-page');

    // The statement is in the URL: reopening answers it again.
    const url = new URL(page.url());
    assertEqual(url.searchParams.get('sql'), sql, 'sql kept in the URL');
    await page.goto(url.toString());
    await waitReady(page);
    await page.locator('[data-role="sql-status"]', { hasText: 'rows' }).waitFor();

    // Bad SQL and writing statements: the server's one-line error.
    for (const [bad, says] of [['SELEC 1', 'syntax'], ["COPY (SELECT 1) TO '/tmp/x.csv'", 'refused']]) {
      await page.locator('[data-role="sql-editor"]').fill(bad);
      await page.locator('[data-role="sql-run"]').click();
      const error = page.locator('[data-role="sql-error"]');
      await error.waitFor();
      assert((await error.innerText()).toLowerCase().includes(says), `${bad}: error says ${says}`);
    }
  }, { allowConsole: /status of 400/ });
}
