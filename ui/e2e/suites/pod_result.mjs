// A pod result in the UI (issue 42): a generated 4-host pod, each host's partial computed by
// `oxprof pod partial` (as a Spark executor computes it) and the job's pod.json, served as a
// run. The multi-host tools answer for ALL_HOSTS from the partials; one host's trace viewer
// reads that host's own profile where pod.json names it, which the server was allowed to
// read (--pod-sources); a server not allowed to says so in the page, naming the flag.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

const HOSTS = 4;
const RUN = '2026_01_01_00_00_00';

export async function register(ctx) {
  const { h, open, waitReady, text } = ctx;
  const gen = process.env.OXPROF_GEN_POD;
  if (!gen || !existsSync(gen)) {
    h.skip('pod result', 'OXPROF_GEN_POD names no gen_pod binary (scripts/ci/test-ui.sh builds and sets it)');
    return;
  }
  const bin = process.env.OXPROF_BIN;
  const work = mkdtempSync(join(tmpdir(), 'oxprof-pod-result-'));
  const servers = [];
  try {
    const generated = join(work, 'gen');
    execFileSync(gen, [generated, '--hosts', String(HOSTS), '--steps', '3', '--ops-per-step', '64', '--cores', '2', '--run', RUN], { stdio: 'pipe' });
    const runDir = join(generated, 'plugins', 'profile', RUN);
    const pod = join(work, 'pod');
    mkdirSync(pod);
    const hosts = readdirSync(runDir).filter((f) => f.endsWith('.xplane.pb')).sort().map((file) => {
      const host = file.replace(/\.xplane\.pb$/, '');
      execFileSync(bin, ['pod', 'partial', join(runDir, file), '--out', join(pod, `${host}.oxpartial`)], { stdio: 'pipe' });
      return { host, source: join(runDir, file), partial: `${host}.oxpartial` };
    });
    assertEqual(hosts.length, HOSTS, 'the generated hosts');
    const manifest = { format: 'oxprof-pod', version: 1, source: runDir, run: RUN, engine: { kind: 'e2e' }, hosts, failed: [] };
    writeFileSync(join(pod, 'pod.json'), JSON.stringify(manifest));

    const allowed = await startServer(bin, pod, ['--pod-sources', generated]);
    servers.push(allowed);
    const runs = await (await fetch(new URL('/data/plugin/profile/runs', allowed.url))).json();
    const podRun = runs.map((r) => (typeof r === 'string' ? r : r.name))[0];
    assert(podRun, 'the pod result is listed as a run');

    await h.test('pod result: ALL_HOSTS from the partials, one host\'s timeline from its own profile', async ({ page, shot }) => {
      await open(page, allowed.url, { run: podRun, tool: 'overview_page', host: 'ALL_HOSTS' });
      const body = await text(page, 'main');
      assertEqual(await page.locator('[data-role="error"]').count(), 0, 'no error on the overview');
      assert(body.length > 100, `the overview shows: ${body.slice(0, 200)}`);
      await shot();
      await open(page, allowed.url, { run: podRun, tool: 'trace_viewer', host: hosts[1].host });
      await page.waitForFunction(() => document.querySelectorAll('[data-role="trace-labels"] [data-track]').length > 0, null, { timeout: 60_000 });
      await waitReady(page);
      assertEqual(await page.locator('[data-role="error"]').count(), 0, 'no error on the trace viewer');
      assert((await page.locator('[data-role="trace-labels"] [data-track]').count()) >= 2, 'the host\'s tracks are drawn');
      await shot();
    }, { viewport: { width: 1440, height: 900 } });

    const refused = await startServer(bin, pod);
    servers.push(refused);
    await h.test('pod result: without --pod-sources the page says which flag reads the host\'s profile', async ({ page, shot }) => {
      const response = await fetch(new URL(`/data/plugin/profile/data?run=${podRun}&tag=trace_viewer%40&host=${hosts[1].host}`, refused.url));
      assertEqual(response.status, 403, 'the server refuses to read outside the served path');
      await page.goto(new URL(`/?run=${podRun}&tool=trace_viewer&host=${hosts[1].host}`, refused.url).toString());
      await page.waitForSelector('[data-role="trace-error"]', { timeout: 60_000 });
      const message = await text(page, '[data-role="trace-error"]');
      assert(message.includes('--pod-sources'), `the message names the flag: ${message}`);
      assert(!message.includes(work), `no absolute path in the page: ${message}`);
      await shot();
    }, { allowConsole: /status of 403/ });
  } finally {
    for (const s of servers) await s.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
