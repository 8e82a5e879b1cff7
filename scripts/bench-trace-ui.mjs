#!/usr/bin/env node
// Benchmarks the trace viewer in a real browser: starts `oxprof serve` on a profile, opens
// the trace viewer in Debian's chromium (playwright-core, the e2e harness's flags), and
// reports the first-view load time (cold: the server decodes and indexes the profile; warm:
// a reload) and, with --pan, the frame times while panning with the mouse for a few seconds.
//
//   node scripts/bench-trace-ui.mjs [--profile DIR]... [--pan-seconds 5] [--no-pan DIR]...
//
// Defaults: OXPROF_BIN=target/release/oxprof, profile /work/refdata/jax_large with panning.
// `--load-only DIR` measures only the load (e.g. the 50 M event synthetic trace of
// scripts/gen-synthetic-trace.sh). OXPROF_UI_DIR=dir serves a UI build from dir instead of
// the embedded one. Prints one JSON object per profile. Numbers only: no assertions.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from '../ui/node_modules/playwright-core/index.mjs';
import { CHROMIUM, CHROMIUM_ARGS, startServer } from '../ui/e2e/harness.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.OXPROF_BIN || join(repo, 'target/release/oxprof');
if (process.env.OXPROF_UI_DIR) process.env.OXPROF_E2E_DEV_DIST = process.env.OXPROF_UI_DIR;

const jobs = [];
let panSeconds = 5;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--profile') jobs.push({ path: argv[++i], pan: true });
  else if (a === '--load-only') jobs.push({ path: argv[++i], pan: false });
  else if (a === '--pan-seconds') panSeconds = Number(argv[++i]);
  else throw new Error(`unknown argument ${a}`);
}
if (!jobs.length) jobs.push({ path: '/work/refdata/jax_large', pan: true });
if (!existsSync(bin)) throw new Error(`no oxprof binary at ${bin} (cargo build --release -p oxprof, or set OXPROF_BIN)`);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const round = (x) => Math.round(x * 10) / 10;

/** user+sys CPU seconds and peak RSS (MB) of a process, from /proc. */
function procStats(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { cpu_s: round(ticks / 100), peak_rss_mb: hwm ? Math.round(Number(hwm[1]) / 1024) : null };
  } catch {
    return null;
  }
}

async function waitReady(page, timeout = 600_000) {
  await page.waitForFunction(() => document.querySelector('[data-chart="trace"]')?.dataset.ready === 'true', null, { timeout, polling: 20 });
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
try {
  for (const job of jobs) {
    const t0 = performance.now();
    const server = await startServer(bin, job.path);
    const started = performance.now() - t0;
    const result = { profile: job.path, server_start_ms: Math.round(started) };
    try {
      const runs = await (await fetch(new URL('/oxprof/api/runs', server.url))).json();
      const run = runs.runs[0]?.name;
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      const target = new URL('/', server.url);
      target.searchParams.set('run', run);
      target.searchParams.set('tool', 'trace_viewer');
      // The slowest requests of the cold load (path: ms from start to end).
      const timings = [];
      const onFinished = (r) => {
        const tm = r.timing();
        const u = new URL(r.url());
        if (tm.responseEnd > 0) timings.push([u.pathname + (u.pathname.endsWith('/window') ? '' : `?${u.searchParams.get('tag') || ''}`), Math.round(tm.responseEnd)]);
      };
      page.on('requestfinished', onFinished);
      let t = performance.now();
      await page.goto(target.toString());
      await waitReady(page);
      result.first_view_cold_ms = Math.round(performance.now() - t);
      page.off('requestfinished', onFinished);
      result.cold_slowest_requests_ms = Object.fromEntries(timings.sort((a, b) => b[1] - a[1]).slice(0, 5));
      result.server_after_load = procStats(server.child.pid);
      t = performance.now();
      await page.reload();
      await waitReady(page);
      result.first_view_warm_ms = Math.round(performance.now() - t);
      const tracks = await (await fetch(new URL(`/oxprof/api/trace/tracks?run=${encodeURIComponent(run)}`, server.url))).json();
      result.events = tracks.num_events;
      result.tracks = tracks.sections.reduce((n, s) => n + s.tracks.length, 0);
      if (job.pan) {
        // Zoom in 16× around the middle (W four times), then pan with the pan tool.
        await page.focus('[data-chart="trace"]');
        for (let i = 0; i < 4; i++) await page.keyboard.press('w');
        await waitReady(page);
        await page.keyboard.press('2');
        const spanOf = async () => {
          const w = page.locator('[data-role="trace-window"]');
          return [Number(await w.getAttribute('data-start-ps')), Number(await w.getAttribute('data-end-ps'))];
        };
        const [s0, e0] = await spanOf();
        let travelled = 0;
        let windows = 0;
        page.on('request', (r) => {
          if (r.url().includes('/oxprof/api/trace/window')) windows++;
        });
        const box = await page.locator('[data-role="trace-canvas"]').boundingBox();
        const y = box.y + Math.min(box.height - 10, 200);
        await page.evaluate(() => {
          const w = /** @type {any} */ (window);
          w.__frames = [];
          w.__stop = false;
          const tick = (ts) => {
            w.__frames.push(ts);
            if (!w.__stop) requestAnimationFrame(tick);
          };
          requestAnimationFrame(tick);
        });
        const end = performance.now() + panSeconds * 1000;
        // Six drags one way (about 3.6 windows, within the 16× zoom's room), then back.
        let dir = 1;
        let drags = 0;
        let last = s0;
        while (performance.now() < end) {
          const from = dir > 0 ? box.x + box.width * 0.8 : box.x + box.width * 0.2;
          const to = dir > 0 ? box.x + box.width * 0.2 : box.x + box.width * 0.8;
          await page.mouse.move(from, y);
          await page.mouse.down();
          await page.mouse.move(to, y, { steps: 40 });
          await page.mouse.up();
          const [s1] = await spanOf();
          travelled += Math.abs(s1 - last);
          last = s1;
          if (++drags % 6 === 0) dir = -dir;
        }
        const frames = await page.evaluate(() => {
          const w = /** @type {any} */ (window);
          w.__stop = true;
          return w.__frames;
        });
        const gaps = frames.slice(1).map((f, i) => f - frames[i]);
        result.pan = {
          seconds: panSeconds,
          frames: gaps.length,
          fps: round(gaps.length / ((frames[frames.length - 1] - frames[0]) / 1000)),
          frame_ms: { p50: round(pct(gaps, 50)), p95: round(pct(gaps, 95)), max: round(Math.max(...gaps)) },
          frames_over_20ms: gaps.filter((g) => g > 20).length,
          drags,
          windows_travelled: round(travelled / (e0 - s0)),
          window_requests: windows,
        };
        result.server_after_pan = procStats(server.child.pid);
      }
    } finally {
      await server.stop();
    }
    console.log(JSON.stringify(result));
  }
} finally {
  await browser.close();
}
