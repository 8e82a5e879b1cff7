// Browser tests of oxprof explain's findings atop the overview pages: the input-bound
// TensorFlow run (testdata/profiles/tf_custom_loop) shows its input_bound finding first,
// with the numbers /oxprof/api/explain answers; a healthy run says what was checked.
import { assert, assertEqual } from '../harness.mjs';

export async function register(ctx) {
  const { h, base, pick, open } = ctx;
  const explain = async (run) => {
    const url = new URL('/oxprof/api/explain', base);
    url.searchParams.set('run', run);
    const r = await fetch(url);
    assert(r.ok, `/oxprof/api/explain: HTTP ${r.status}`);
    return r.json();
  };
  const inputBound = pick('tf_custom_loop');
  await h.test('explain: the overview shows what bounds the run, first finding first', async ({ page, shot }) => {
    const answer = await explain(inputBound);
    assertEqual(answer.findings[0]?.id, 'input_bound', 'the API names the planted cause');
    await open(page, base, { run: inputBound, tool: 'overview_page' });
    const card = page.locator('[data-role="explain"][data-state="ready"]');
    await card.waitFor();
    const summary = await card.locator('[data-role="findings-summary"]').innerText();
    assert(summary.startsWith(answer.findings[0].title), `one-line summary: ${summary}`);
    // One line until opened: nothing below moved when the answer arrived.
    await card.locator('summary').click();
    const first = card.locator('[data-finding]').first();
    await first.waitFor();
    assertEqual(await first.getAttribute('data-finding'), 'input_bound', 'first finding on the page');
    const text = await first.innerText();
    const f = answer.findings[0];
    assert(text.includes(`${f.time_at_stake_ms.toFixed(2)} ms per step`), `time at stake shown: ${text}`);
    assert(text.includes(f.evidence[0]), `evidence shown: ${text}`);
    await shot();
  });
  const healthy = pick('jax_train');
  await h.test('explain: a healthy run says what was checked', async ({ page }) => {
    const answer = await explain(healthy);
    assertEqual(answer.findings.length, 0, 'no findings on jax_train');
    await open(page, base, { run: healthy, tool: 'overview_page' });
    const card = page.locator('[data-role="explain"][data-state="ready"]');
    await card.waitFor();
    assertEqual(await card.locator('[data-role="findings-summary"]').innerText(), 'Nothing found', 'summary');
    await card.locator('summary').click();
    const none = card.locator('[data-role="no-findings"]');
    await none.waitFor();
    assert((await none.innerText()).startsWith('Nothing found: checked input_bound'), await none.innerText());
  });
}
