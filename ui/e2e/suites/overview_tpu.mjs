// The Overview page's TPU training variant on the synthetic TPU training run
// (testdata/tpu-synthetic/training: 2 hosts × 4 TensorCores, made by
// scripts/gen/tpu-synthetic.sh), against a real `oxprof serve` of its own: every component
// XProf's overview documents for TPU training is named on the page (FLOPS utilization,
// TPU duty cycle, memory bandwidth utilization, program goodput efficiency, device compute
// precisions, the step-time graph stacked by TPU categories such as TensorCore idle and
// host transfer), with the values the API answers, for ALL_HOSTS and for one host.
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';

const COMPONENTS = [
  ['flops-utilization', 'FLOPS utilization'],
  ['tpu-duty-cycle', 'TPU duty cycle'],
  ['memory-bandwidth-utilization', 'Memory bandwidth utilization'],
  ['program-goodput-efficiency', 'Program goodput efficiency'],
  ['device-compute-precisions', 'Device compute precisions'],
];

const findTable = (tables, columnId) => tables.find((t) => t && (t.cols || []).some((c) => c.id === columnId));

export async function register(ctx) {
  const { h, repo, api, open, text } = ctx;
  const server = await startServer(process.env.OXPROF_BIN, join(repo, 'testdata/tpu-synthetic'));
  try {
    const base = server.url;
    const runs = await api(base, 'runs');
    const run = runs.find((r) => r.startsWith('training/'));
    assert(run, `the synthetic TPU training run is listed: ${runs}`);
    for (const host of ['ALL_HOSTS', 'tpu-host-1']) {
      await h.test(`overview TPU training (${host}): every documented component named, with the API's values`, async ({ page, shot }) => {
        const data = await api(base, 'data', { run, tag: 'overview_page', host });
        const gp = findTable(data, 'selfTimePercent').p;
        const ip = findTable(data, 'stepnum').p;
        await open(page, base, { run, tool: 'overview_page', host });
        const section = page.locator('[data-section="tpu-training"]');
        await section.waitFor();
        for (const [id, title] of COMPONENTS) {
          assertEqual(await text(page, `[data-component="${id}"] h3`), title, `${id} is named`);
        }
        // Values as XProf computes them (oxprof's API equals XProf's, see golden_tpu.rs).
        for (const key of ['mxu_utilization_percent', 'flop_rate_utilization_relative_to_roofline', 'device_duty_cycle_percent', 'hbm_utilization_percent', 'memory_bw_utilization_relative_to_hw_limit']) {
          assertEqual(await text(page, `[data-section="tpu-training"] [data-prop="${key}"]`), gp[key], key);
        }
        assert(Number.parseFloat(gp.mxu_utilization_percent) > 0 && Number.parseFloat(gp.device_duty_cycle_percent) > 0, 'non-zero FLOPS utilization and duty cycle');
        // XProf 2.24.2 gives no program goodput nor TPU precisions here: the page says so.
        for (const id of ['program-goodput-efficiency', 'device-compute-precisions']) {
          const shown = await text(page, `[data-component="${id}"]`);
          assert(/n\/a/.test(shown) || /%/.test(shown), `${id} shows a value or why it is missing: ${shown}`);
        }
        // Step-time graph stacked by TPU categories.
        const label = await page.getAttribute('[data-chart="step-time"]', 'aria-label');
        for (const category of ['TensorCore compute', 'TensorCore input', 'TensorCore output', 'TensorCore idle', 'Host transfer']) {
          assert(label.includes(category), `step-time graph series include ${category}: ${label}`);
        }
        const steps = findTable(data, 'stepnum').rows.length;
        assert(label.includes(`${steps} categories`), `one bar per step (${steps}): ${label}`);
        assertEqual(await text(page, '[data-metric="steptime_ms_average"] [data-role="value"]'), `${ip.steptime_ms_average} ms`, 'average step time');
        assertEqual(await text(page, '[data-props="run-environment"] [data-prop="Device type"]'), 'TPU v4', 'device type');
        await shot();
      });
    }
  } finally {
    await server.stop();
  }
}
