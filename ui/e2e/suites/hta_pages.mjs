// The HTA pages (hta_distributed, hta_gpu_idle) on a two-rank GPU PyTorch run (HTA's own
// trace_filter test traces, when ../shared/testdata/external is present) and on the CPU-only
// DDP fixture of testdata/kineto: one row per rank with the server's numbers, the stacked
// temporal-breakdown chart, the idle/launch/queue tables, and the CPU-only note.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

export async function register(ctx) {
  const { h, open, text, repo, external, api } = ctx;
  const bin = process.env.OXPROF_BIN;
  const root = mkdtempSync(join(tmpdir(), 'oxprof-hta-'));
  const cpuDir = join(root, 'cpu_ddp');
  mkdirSync(cpuDir);
  const ddp = join(repo, 'testdata/kineto/ddp');
  for (const f of readdirSync(ddp)) copyFileSync(join(ddp, f), join(cpuDir, f));
  const gpuSrc = join(external, 'facebookresearch-HolisticTraceAnalysis/tests/data/trace_filter');
  const haveGpu = existsSync(gpuSrc);
  if (haveGpu) {
    mkdirSync(join(root, 'gpu_2ranks'));
    for (const i of [0, 1]) copyFileSync(join(gpuSrc, `sampled_rank-${i}.json.gz`), join(root, 'gpu_2ranks', `rank${i}.pt.trace.json.gz`));
  }
  const server = await startServer(bin, root);
  try {
    const runs = await api(server.url, 'runs');
    const gpuRun = runs.find((r) => r.includes('gpu_2ranks'));
    const cpuRun = runs.find((r) => r.includes('cpu_ddp'));
    if (!haveGpu) h.skip('hta pages: GPU run', `no HTA test traces at ${gpuSrc}`);
    else {
      await h.test('hta pages: distributed shows one row per rank with HTA\'s breakdown, overlap, comm kernels and stragglers', async ({ page, consoleErrors, shot }) => {
        const data = await api(server.url, 'data', { run: gpuRun, tag: 'hta_distributed' });
        assertEqual(data.ranks.length, 2, 'two ranks');
        await open(page, server.url, { run: gpuRun, tool: 'hta_distributed' });
        await page.locator('[data-chart="hta-temporal"]').waitFor();
        const card = page.locator('[data-table="hta-ranks"]');
        assertEqual(await card.locator('[data-role="count"]').getAttribute('data-total'), '2', 'one row per rank');
        const shown = await card.locator('tbody tr:not(.spacer-row)').first().locator('td[data-col="rank"]').innerText();
        assertEqual(shown.trim(), String(data.ranks[0].rank), 'rank 0 first');
        const comm = page.locator('[data-table="hta-comm"]');
        assertEqual(await comm.locator('[data-role="count"]').getAttribute('data-total'), String(data.comm_ops.length), 'comm kernels');
        const steps = page.locator('[data-table="hta-steps"]');
        assertEqual(await steps.locator('[data-role="count"]').getAttribute('data-total'), String(data.steps.length), 'steps');
        assertEqual(consoleErrors.length, 0, `console errors: ${consoleErrors.join('; ')}`);
        await shot();
      });
      await h.test('hta pages: GPU idle shows idle time by cause, launches, longest delays and queue length per stream', async ({ page, shot }) => {
        const data = await api(server.url, 'data', { run: gpuRun, tag: 'hta_gpu_idle' });
        await open(page, server.url, { run: gpuRun, tool: 'hta_gpu_idle' });
        for (const [key, rows] of [['hta-idle', data.idle], ['hta-launch', data.launch_summary], ['hta-worst', data.worst_launches], ['hta-queue', data.queue_length]]) {
          assertEqual(await page.locator(`[data-table="${key}"] [data-role="count"]`).getAttribute('data-total'), String(rows.length), key);
        }
        assert(data.idle.some((r) => r.idle_category === 'host_wait'), 'host wait present');
        await page.fill('[data-table="hta-idle"] [data-role="filter"]', 'host_wait');
        const expected = data.idle.filter((r) => r.idle_category === 'host_wait').length;
        await page.waitForFunction(
          ([n]) => document.querySelector('[data-table="hta-idle"] [data-role="count"]')?.dataset.shown === String(n),
          [expected],
        );
        await shot();
      });
    }
    await h.test('hta pages: a CPU-only PyTorch run says there is no GPU activity', async ({ page, shot }) => {
      await open(page, server.url, { run: cpuRun, tool: 'hta_distributed' });
      const notes = await text(page, 'body');
      assert(/no GPU activity/.test(notes), 'the note says why');
      await page.locator('[data-role="no-gpu"]').waitFor();
      assertEqual(await page.locator('[data-table="hta-ranks"] [data-role="count"]').getAttribute('data-total'), '2', 'still one row per rank');
      await open(page, server.url, { run: cpuRun, tool: 'hta_gpu_idle' });
      assert(/no GPU activity/.test(await text(page, 'body')), 'gpu idle note');
      await shot();
    });
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}
