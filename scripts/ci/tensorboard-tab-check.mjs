// The browser half of scripts/ci/tensorboard-tab-check.py: opens TensorBoard's oxprof tab
// in Debian's chromium (playwright-core from ui/node_modules) and checks that the overview
// page inside the tab shows the average step time oxprof's API gives. Requests to anything
// but 127.0.0.1 are aborted and counted (TensorBoard's page must not need the network).
// A deep link to a view of the tab's UI (its own URL, with ?run=&tool=) opens that view.
// Usage: node tensorboard-tab-check.mjs TENSORBOARD_URL RUN EXPECTED_TEXT SCREENSHOT
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [url, run, expected, screenshot] = process.argv.slice(2);
const repo = fileURLToPath(new URL('../..', import.meta.url));
const { chromium } = await import(pathToFileURL(join(repo, 'ui/node_modules/playwright-core/index.mjs')).href);

const browser = await chromium.launch({
  executablePath: process.env.OXPROF_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const outside = [];
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.route('**/*', (route) => {
    const host = new URL(route.request().url()).hostname;
    if (host === '127.0.0.1' || route.request().url().startsWith('data:')) return route.continue();
    outside.push(route.request().url());
    return route.abort();
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${url}#oxprof`, { timeout: 60_000 });
  // TensorBoard loads the tab's module in a frame (data/plugin_entry.html), which frames
  // oxprof's UI (data/plugin/oxprof/ui/).
  let ui = null;
  for (let i = 0; i < 600 && !ui; i++) {
    ui = page.frames().find((f) => f.url().includes('/data/plugin/oxprof/ui/'));
    if (!ui) await page.waitForTimeout(100);
  }
  if (!ui) throw new Error(`no oxprof frame in the tab: ${page.frames().map((f) => f.url()).join(', ')}`);
  const value = ui.locator('[data-metric="steptime_ms_average"] [data-role="value"]');
  await value.waitFor({ timeout: 120_000 });
  const shown = (await value.textContent()).trim();
  await page.screenshot({ path: screenshot });
  if (shown !== expected) throw new Error(`the tab shows average step time ${JSON.stringify(shown)}, the API ${JSON.stringify(expected)}`);
  if (!new URL(ui.url()).pathname.endsWith('/data/plugin/oxprof/ui/')) throw new Error(`the UI left its prefix: ${ui.url()}`);
  console.log(`tensorboard-tab-check: the oxprof tab shows average step time ${shown} (frame ${ui.url()})`);
  // A deep link below the tab's prefix opens that view.
  const link = `${url}data/plugin/oxprof/ui/?${new URLSearchParams({ run, tool: 'overview_page' })}`;
  const direct = await context.newPage();
  direct.on('pageerror', (e) => errors.push(String(e)));
  await direct.goto(link, { timeout: 60_000 });
  const again = direct.locator('[data-metric="steptime_ms_average"] [data-role="value"]');
  await again.waitFor({ timeout: 120_000 });
  if ((await again.textContent()).trim() !== expected) throw new Error(`the deep link ${link} shows ${await again.textContent()}`);
  console.log(`tensorboard-tab-check: the deep link ${link} opens the overview`);
  if (errors.length) throw new Error(`page errors: ${errors.join(' | ')}`);
} finally {
  await browser.close();
}
if (outside.length) console.log(`tensorboard-tab-check: ${outside.length} requests off the machine aborted: ${outside.join(', ')}`);
