// A 256-host pod in the UI (issue 42): a generated pod of small hosts (gen_pod, 2 TensorCores,
// 2 steps of 64 ops each; OXPROF_GEN_POD names the generator, scripts/ci/test-ui.sh builds
// it) served as a run. The page's host list holds ALL_HOSTS and the 256 hosts; the trace
// viewer's hosts picker lists every host, filters them by name, refuses more hosts than one
// timeline merges (the server's trace_view_max_hosts) and shows a chosen subset of three
// hosts on one timeline, each host's tracks under its own name.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

const HOSTS = 256;
const RUN = '2026_01_01_00_00_00';
const hostName = (i) => `tpu-pod-host-${String(i).padStart(3, '0')}`;

export async function register(ctx) {
  const { h, open, waitReady } = ctx;
  const gen = process.env.OXPROF_GEN_POD;
  if (!gen || !existsSync(gen)) {
    h.skip('pod of 256 hosts', 'OXPROF_GEN_POD names no gen_pod binary (scripts/ci/test-ui.sh builds and sets it)');
    return;
  }
  const logdir = mkdtempSync(join(tmpdir(), 'oxprof-pod-hosts-'));
  execFileSync(gen, [logdir, '--hosts', String(HOSTS), '--steps', '2', '--ops-per-step', '64', '--cores', '2', '--run', RUN], { stdio: 'pipe' });
  const server = await startServer(process.env.OXPROF_BIN, logdir);
  try {
    const base = server.url;
    const info = await (await fetch(new URL(`/oxprof/api/run?run=${RUN}`, base))).json();
    const max = info.trace_view_max_hosts;
    assert(Number.isInteger(max) && max > 1 && max < HOSTS, `/oxprof/api/run's trace_view_max_hosts: ${max}`);

    await h.test(`pod of ${HOSTS} hosts: the host list, the hosts picker's filter and limit, three hosts on one timeline`, async ({ page, shot }) => {
      const hosts = (await (await fetch(new URL(`/data/plugin/profile/hosts?run=${RUN}&tag=trace_viewer`, base))).json()).map((x) => x.hostname);
      assertEqual(hosts.filter((x) => x !== 'ALL_HOSTS').length, HOSTS, 'the server lists every host');

      await open(page, base, { run: RUN, tool: 'trace_viewer', host: hostName(0) });
      // The page's host selector: every host, and ALL_HOSTS for the tools that combine them.
      const options = await page.locator('select[data-role="host"] option').evaluateAll((os) => os.map((o) => o.value));
      assertEqual(options.filter((o) => /^tpu-pod-host-\d{3}$/.test(o)).length, HOSTS, `the host selector lists the ${HOSTS} hosts`);
      assertEqual(await page.locator('[data-role="trace-labels"] [data-host]').count(), 0, 'one host: no host sections');

      await page.click('[data-role="hosts-picker"] summary');
      assertEqual(await page.locator('[data-host-choice]').count(), HOSTS, 'the picker lists every host');
      await page.fill('[data-role="hosts-filter"]', 'host-00');
      assertEqual(await page.locator('label.trace-host-choice:visible').count(), 10, 'the filter lists hosts 000-009');
      await page.click('[data-role="hosts-choose-listed"]');
      await page.fill('[data-role="hosts-filter"]', 'host-0');
      await page.click('[data-role="hosts-choose-listed"]');
      // 100 hosts chosen: more than one timeline shows.
      assert(await page.locator('[data-role="hosts-apply"]').isDisabled(), 'Show is disabled with 100 hosts chosen');
      assertEqual(await page.locator('[data-role="hosts-status"]').innerText(), `One timeline shows at most ${max} hosts: choose ${100 - max} fewer.`, 'says how many fewer');
      await shot();
      await page.click('[data-role="hosts-choose-none"]');
      for (const i of [7, 128, 255]) {
        await page.fill('[data-role="hosts-filter"]', hostName(i));
        await page.check(`[data-host-choice="${hostName(i)}"]`);
      }
      assertEqual(await page.locator('[data-role="hosts-count"]').innerText(), '3 chosen · 1 of 256 listed', 'three hosts chosen');
      await page.click('[data-role="hosts-apply"]');
      await page.waitForFunction((n) => document.querySelectorAll('[data-role="trace-labels"] [data-host]').length === n, 3, { timeout: 60_000 });
      await waitReady(page);
      const shown = await page.locator('[data-role="trace-labels"] [data-host]').evaluateAll((els) => els.map((e) => e.dataset.host));
      assertEqual(shown, [7, 128, 255].map(hostName), 'the three hosts, in the run\'s order, on one timeline');
      assertEqual(new URL(page.url()).searchParams.get('hosts'), [7, 128, 255].map(hostName).join(','), 'the hosts are in the URL');
      assert((await page.locator('[data-role="trace-labels"] [data-track]').count()) >= 6, 'each host shows its tracks');
      await shot();
    }, { viewport: { width: 1440, height: 900 } });
  } finally {
    await server.stop();
    rmSync(logdir, { recursive: true, force: true });
  }
}
