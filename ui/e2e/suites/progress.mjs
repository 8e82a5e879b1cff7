// A long first analysis shows its progress: while a page waits for its data, the line under
// the spinner says what the server is reading, how far it is, how fast and how long is
// left (`/oxprof/api/progress`), then "analysing" once the reading ended. The server's
// loads are simulated here (a committed profile loads in milliseconds); the route itself
// is checked on the real server first.
import { assert, assertEqual } from '../harness.mjs';

export async function register(ctx) {
  const { h, base, pick, waitReady } = ctx;
  const run = pick('tf_custom_loop');
  await h.test('progress: the loading line follows the server\'s loads, then the page replaces it', async ({ page, shot }) => {
    const idle = await (await fetch(new URL('/oxprof/api/progress', base))).json();
    assertEqual(JSON.stringify(Object.keys(idle).sort()), JSON.stringify(['done_bytes', 'elapsed_ms', 'loads', 'total_bytes', 'what']), 'the route\'s fields');
    assertEqual(idle.loads, 0, 'an idle server has no load under way');

    const GiB = 1024 ** 3;
    let answer = { loads: 1, what: 'reading big.pt.trace.json', total_bytes: 2 * GiB, done_bytes: GiB / 2, elapsed_ms: 2000 };
    let polls = 0;
    await page.route('**/oxprof/api/progress', (route) => {
      polls++;
      return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(answer) });
    });
    // The data request waits until the test lets it go.
    let release;
    const released = new Promise((r) => (release = r));
    await page.route('**/data/plugin/profile/data?*', async (route) => {
      if (route.request().url().includes('tag=overview_page')) await released;
      return route.continue();
    });
    const url = new URL('/', base);
    url.searchParams.set('run', run);
    url.searchParams.set('tool', 'overview_page');
    await page.goto(url.toString());
    const line = page.locator('[data-role="loading"] [data-role="load-progress"]');
    await page.waitForFunction(() => document.querySelector('[data-role="load-progress"]')?.textContent?.includes('%'), null, { timeout: 10_000 });
    assertEqual(await line.innerText(), 'reading big.pt.trace.json · 512 MiB of 2 GiB (25 %) · 256 MiB/s · about 6 s left', 'what, how far, how fast, how long');
    await shot();
    answer = { loads: 0, what: '', total_bytes: 0, done_bytes: 0, elapsed_ms: 0 };
    await page.waitForFunction(() => document.querySelector('[data-role="load-progress"]')?.textContent === 'Analysing what was read…', null, { timeout: 10_000 });
    release();
    await waitReady(page);
    assertEqual(await page.locator('[data-role="load-progress"]').count(), 0, 'the page replaced the line');
    // Polling stops with the line.
    const after = polls;
    await page.waitForTimeout(1500);
    assert(polls - after <= 1, `no polling once the page is shown (${polls - after} more)`);
  });
}
