// The registry's promise in the browser: a tool added by one module and one row
// (crates/oxprof-api/src/example_tool.rs, the `example-tool` feature) is in the UI's Tools
// menu under its registry title, opens the registry's `raw` page, and that page's link
// downloads its binary body byte for byte. scripts/ci/test-example-tool.sh builds the
// binary and runs this; CLI, HTTP and Python are checked by scripts/ci/example-tool-check.py.
//
//   OXPROF_BIN=path/to/oxprof-with-example-tool node e2e/example_tool.mjs
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Harness, assert, assertEqual, checkServedUi, expectedUiDir, startServer } from './harness.mjs';

const ui = fileURLToPath(new URL('..', import.meta.url));
const repo = resolve(ui, '..');
const bin = process.env.OXPROF_BIN;
if (!bin || !existsSync(bin)) {
  console.error('OXPROF_BIN must name an oxprof binary built with --features example-tool');
  process.exit(2);
}
const TOOL = 'example_binary';
const TITLE = 'Example binary tool';
// example_tool.rs's MAGIC, then the host's name and a line end.
const MAGIC = Buffer.from('\x00\xffOXPROF-EXAMPLE\n', 'latin1');

const h = new Harness(process.env.OXPROF_E2E_ARTIFACTS || join(ui, 'e2e-artifacts'));
let server;
let exitCode = 1;
try {
  await h.launch();
  server = await startServer(bin, join(repo, 'testdata/profiles'));
  await checkServedUi(server.url, expectedUiDir(ui));
  const runs = await (await fetch(new URL('/data/plugin/profile/runs', server.url))).json();
  const run = runs.find((r) => r.startsWith('tf_custom_loop'));
  assert(run, `tf_custom_loop in ${runs}`);
  await h.test('example tool: one row puts it in the Tools menu, and its page downloads the binary body', async ({ page, shot }) => {
    await page.goto(new URL(`/?run=${encodeURIComponent(run)}&tool=overview_page`, server.url).toString());
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const label = await page.locator(`[data-role="tool"] option[value="${TOOL}"]`).innerText();
    assertEqual(label.trim(), `${TITLE} (${TOOL})`, 'the Tools menu names it by the registry title');
    await page.selectOption('[data-role="tool"]', TOOL);
    await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const link = page.locator('[data-page="raw"] [data-role="raw-link"]');
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    const body = readFileSync(await download.path());
    // The hosts it names: the run's, as /hosts lists them for the tool (ALL_HOSTS aside).
    const hosts = (await (await fetch(new URL(`/data/plugin/profile/hosts?run=${encodeURIComponent(run)}&tag=${TOOL}`, server.url))).json())
      .map((x) => x.hostname)
      .filter((x) => x !== 'ALL_HOSTS');
    const host = await page.locator('[data-role="host"]').inputValue();
    const named = hosts.includes(host) ? [host] : hosts;
    const expected = Buffer.concat([MAGIC, Buffer.from(named.map((x) => `${x}\n`).join(''))]);
    assert(body.equals(expected), `downloaded ${JSON.stringify(body.toString('latin1'))}, expected ${JSON.stringify(expected.toString('latin1'))}`);
    await shot();
  });
  exitCode = h.summary() ? 1 : 0;
} catch (e) {
  console.error(e);
  h.summary();
} finally {
  await h.close().catch(() => undefined);
  await server?.stop();
}
process.exit(exitCode);
