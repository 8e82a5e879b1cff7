#!/usr/bin/env node
// Benchmarks the trace viewer in a real browser: starts `oxprof serve` on a profile, opens
// the trace viewer in Debian's chromium (playwright-core, the e2e harness's flags), and
// reports the first-view load time (cold: the server decodes and indexes the profile; warm:
// a reload; reopened: a new server whose persistent analysis cache holds the index), how fast it answers (a ctrl+wheel zoom until the view is drawn with its window,
// a click until the details show, a search until its results arrive), the frame times
// while panning with the mouse and while W / S are held (the interval between frames, and
// the time each frame's drawing takes: `frame_draw_ms`), an area selection's tabs (Slices,
// Pivot, Flows, Counters: from the mouse-up or the tab click event in the page until shown), the pivot of
// every slice of the busiest tracks (≥ 1 M slices when the trace has them), and how fast
// the table pages render once their data arrived (the input pipeline's step graph and
// table of the profile, and a 10,000-row table).
//
//   node scripts/bench/trace-ui.mjs [--profile DIR]... [--pan-seconds 5] [--load-only DIR]... [--no-pages] [--cache-mb N]
//
// `--cache-mb N` is passed to `oxprof serve`: a profile whose decoded data and index exceed
// the session's cache (512 MB by default; the 50 M-event synthetic one holds ~0.7 GB) is
// decoded again for every request, so measure it with `--cache-mb 2048`.
//
// Defaults: OXPROF_BIN=target/release/oxprof, profile bench-data/jax_large.xplane.pb (made by
// scripts/gen/large-profile.sh; `oxprof serve` takes the file itself) with panning.
// `--load-only DIR` measures only the load (e.g. the 50 M event synthetic trace of
// scripts/gen/synthetic-trace.sh; with `--profile DIR --no-pages` its panning and input answers
// without the table pages, whose OpStats of 50 M synthetic events take minutes). OXPROF_UI_DIR=dir serves a UI build from dir instead of
// the embedded one. Prints one JSON object per profile. Numbers only: no assertions.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from '../../ui/node_modules/playwright-core/index.mjs';
import { CHROMIUM, CHROMIUM_ARGS, startServer } from '../../ui/e2e/harness.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = process.env.OXPROF_BIN || join(repo, 'target/release/oxprof');
if (process.env.OXPROF_UI_DIR) process.env.OXPROF_E2E_DEV_DIST = process.env.OXPROF_UI_DIR;

const jobs = [];
let panSeconds = 5;
let withPages = true;
const serveArgs = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--profile') jobs.push({ path: argv[++i], pan: true });
  else if (a === '--load-only') jobs.push({ path: argv[++i], pan: false });
  else if (a === '--pan-seconds') panSeconds = Number(argv[++i]);
  else if (a === '--no-pages') withPages = false;
  else if (a === '--cache-mb') serveArgs.push('--cache-mb', argv[++i]);
  else throw new Error(`unknown argument ${a}`);
}
if (!jobs.length) jobs.push({ path: join(repo, 'bench-data/jax_large.xplane.pb'), pan: true });
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

const stats = (xs) => ({ n: xs.length, p50: round(pct(xs, 50)), max: round(Math.max(...xs)) });

/**
 * Time (ms, in the page) from the first `event` on the window to the moment `done` holds
 * ('settled': the view drawn with its window; 'details': another event's details shown;
 * 'search': search results counted), checked on each mutation of the page and each
 * animation frame; `action` triggers it.
 */
async function timed(page, event, done, action) {
  const result = page.evaluate(
    ({ event, done }) =>
      new Promise((resolve) => {
        // The page's CSP forbids eval: the conditions are named.
        const check = (st) => {
          const c = document.querySelector('[data-role="trace-canvas"]');
          if (done === 'settled') return document.querySelector('[data-chart="trace"]').dataset.viewReady === 'true' && Number(c.dataset.draws) > st.draws0;
          if (done === 'details') {
            const id = document.querySelector('[data-role="trace-details"]')?.dataset.eventId;
            return id !== undefined && id !== st.details0;
          }
          return document.querySelector('[data-role="search-status"]')?.dataset.total !== undefined;
        };
        const state = { t0: null, draws0: null };
        const canvas = () => document.querySelector('[data-role="trace-canvas"]');
        window.addEventListener(
          event,
          () => {
            state.t0 = performance.now();
            state.draws0 = Number(canvas()?.dataset.draws ?? 0);
            state.details0 = document.querySelector('[data-role="trace-details"]')?.dataset.eventId;
          },
          { capture: true, once: true },
        );
        let finished = false;
        const finish = () => {
          if (finished || state.t0 === null || !check(state)) return false;
          finished = true;
          observer.disconnect();
          resolve(performance.now() - state.t0);
          return true;
        };
        const observer = new MutationObserver(() => finish());
        observer.observe(document.body, { attributes: true, subtree: true, childList: true });
        const frame = () => {
          if (!finish()) requestAnimationFrame(frame);
        };
        requestAnimationFrame(frame);
        setTimeout(() => {
          if (!finished) resolve(NaN);
        }, 30_000);
      }),
    { event, done },
  );
  await page.waitForTimeout(30);
  await action();
  return result;
}

const settled = 'settled';
const detailsShown = 'details';
const searchDone = 'search';

/** Wheel zooms, clicks on slices and searches on the trace viewer (ms). */
async function interactions(page, serverUrl, run, target, tracks) {
  const api = async (route, params) => (await fetch(new URL(`/oxprof/api/trace/${route}?${new URLSearchParams({ run, ...params })}`, serverUrl))).json();
  const canvas = page.locator('[data-role="trace-canvas"]');
  const out = { wheel_zoom_settle_ms: [], click_to_details_ms: [], search_results_ms: [] };
  // Wheel: ten steps in, ten out, around two thirds of the width.
  for (const dy of [...Array(10).fill(-240), ...Array(10).fill(240)]) {
    const box = await canvas.boundingBox();
    await page.mouse.move(box.x + box.width * 0.66, box.y + 30);
    // Ctrl+wheel zooms (the wheel alone scrolls the tracks).
    await page.keyboard.down('Control');
    out.wheel_zoom_settle_ms.push(await timed(page, 'wheel', settled, () => page.mouse.wheel(0, dy)));
    await page.keyboard.up('Control');
    await waitReady(page);
  }
  // Clicks: the longest slices of the first tracks in view, the middle of the trace zoomed 16×.
  await zoomMiddle(page, target, tracks, 16);
  const w = page.locator('[data-role="trace-window"]');
  const span = [Number(await w.getAttribute('data-start-ps')), Number(await w.getAttribute('data-end-ps'))];
  const hidden = page.locator('[data-role="trace-hidden"]');
  const win = await api('window', { start_ps: await hidden.getAttribute('data-fetch-start'), end_ps: await hidden.getAttribute('data-fetch-end'), width: await hidden.getAttribute('data-fetch-width') });
  const targets = [];
  for (const t of win.tracks) {
    const label = page.locator(`[data-role="trace-labels"] [data-track="${t.id}"]`);
    if (!(await label.count())) continue;
    const lb = await label.boundingBox();
    const box = await canvas.boundingBox();
    if (!lb || lb.y + 9 > box.y + box.height) continue;
    // Slices whose middle is in view, the longest first (a click at its middle hits it).
    const inView = (t.events ?? []).filter((e) => e.ts_ps + e.dur_ps / 2 > span[0] && e.ts_ps + e.dur_ps / 2 < span[1] && e.dur_ps > (span[1] - span[0]) / 400).sort((a, b) => b.dur_ps - a.dur_ps).slice(0, 4);
    for (const e of inView) targets.push({ x: box.x + ((e.ts_ps + e.dur_ps / 2 - span[0]) / (span[1] - span[0])) * box.width, y: lb.y + 9 });
    if (targets.length >= 10) break;
  }
  for (const t of targets) {
    out.click_to_details_ms.push(await timed(page, 'mousedown', detailsShown, () => page.mouse.click(t.x, t.y)));
    await waitReady(page);
  }
  // Searches over the whole trace.
  for (const q of ['thunk', 'FUSION', 'dot', 'python', 'zzzz-none']) {
    await page.fill('[data-role="trace-search"]', q);
    out.search_results_ms.push(await timed(page, 'keydown', searchDone, () => page.press('[data-role="trace-search"]', 'Enter')));
    await waitReady(page);
    await page.fill('[data-role="trace-search"]', '');
    await page.waitForTimeout(300);
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, stats(v.filter((x) => Number.isFinite(x)))]));
}

/** How long a page takes to render after its data arrived (ms). */
async function renderAfterData(page, url) {
  await page.goto(url);
  const at = await page.waitForFunction(
    () => (document.body.dataset.state === 'ready' && [...document.querySelectorAll('[data-chart]')].every((c) => c.dataset.ready === 'true') ? performance.now() : false),
    null,
    { timeout: 120_000, polling: 'raf' },
  );
  const ready = await at.jsonValue();
  const dataEnd = await page.evaluate(() => Math.max(...performance.getEntriesByType('resource').filter((e) => /\/data\?|\/oxprof\/api\/notes/.test(e.name)).map((e) => e.responseEnd)));
  return ready - dataEnd;
}

/** A framework op stats answer of `n` rows (the 10,000-row table). */
function bigTable(n) {
  const cols = [['rank', 'number'], ['host_or_device', 'string'], ['type', 'string'], ['operation', 'string'], ['occurrences', 'number'], ['total_time', 'number'], ['avg_time', 'number'], ['total_self_time', 'number'], ['avg_self_time', 'number']].map(([id, type]) => ({ id, label: id, type }));
  const rows = Array.from({ length: n }, (_, i) => ({ c: [{ v: i + 1 }, { v: 'Device' }, { v: `T${i % 17}` }, { v: `op_${i}` }, { v: 3 }, { v: (n - i) * 10.5 }, { v: 3.5 }, { v: (n - i) * 9 }, { v: 3 }] }));
  return JSON.stringify([{ cols, rows, p: {} }, { cols, rows, p: {} }]);
}

async function pages(context, serverUrl, run) {
  const page = await context.newPage();
  const url = (tool) => `${new URL('/', serverUrl)}?${new URLSearchParams({ run, tool })}`;
  const times = { input_pipeline_ms: [], overview_ms: [], table_10k_rows_ms: [] };
  const table = bigTable(10_000);
  for (let i = 0; i < 3; i++) {
    times.input_pipeline_ms.push(await renderAfterData(page, url('input_pipeline_analyzer')));
    times.overview_ms.push(await renderAfterData(page, url('overview_page')));
  }
  await page.route('**/data/plugin/profile/data?*', (r) => (r.request().url().includes('tag=framework_op_stats') ? r.fulfill({ status: 200, contentType: 'application/json', body: table }) : r.continue()));
  for (let i = 0; i < 3; i++) times.table_10k_rows_ms.push(await renderAfterData(page, url('framework_op_stats')));
  const steps = await page.evaluate(async (u) => {
    const r = await fetch(u);
    const d = await r.json();
    return (d.find?.((t) => t.cols?.some((c) => c.id === 'stepnum'))?.rows ?? []).length;
  }, `/data/plugin/profile/data?${new URLSearchParams({ run, tag: 'input_pipeline_analyzer' })}`);
  await page.close();
  return { steps, ...Object.fromEntries(Object.entries(times).map(([k, v]) => [k, stats(v)])) };
}

/** Opens the trace viewer on the middle 1/`factor` of the trace (a deep link) and waits until it is drawn. */
async function zoomMiddle(page, target, tracks, factor) {
  const len = (tracks.end_ps - tracks.start_ps) / factor;
  const mid = (tracks.start_ps + tracks.end_ps) / 2;
  const url = new URL(target);
  url.searchParams.set('start_ps', String(Math.round(mid - len / 2)));
  url.searchParams.set('end_ps', String(Math.round(mid + len / 2)));
  await page.goto(url.toString());
  await waitReady(page);
}

/** W then S held for two seconds each at the middle of the plot: frame intervals and each frame's drawing time (ms). */
async function heldZoom(page) {
  const box = await page.locator('[data-role="trace-canvas"]').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 20);
  await page.focus('[data-chart="trace"]');
  await page.evaluate(() => {
    const w = /** @type {any} */ (window);
    w.__frames = [];
    w.__oxprofFrameMs = [];
    w.__stop = false;
    const tick = (ts) => {
      w.__frames.push(ts);
      if (!w.__stop) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  for (const key of ['w', 's']) {
    await page.keyboard.down(key);
    await page.waitForTimeout(2000);
    await page.keyboard.up(key);
  }
  await page.waitForTimeout(300);
  const [frames, drawn] = await page.evaluate(() => {
    const w = /** @type {any} */ (window);
    w.__stop = true;
    const d = w.__oxprofFrameMs;
    w.__oxprofFrameMs = undefined;
    return [w.__frames, d];
  });
  await waitReady(page);
  const gaps = frames.slice(1).map((f, i) => f - frames[i]);
  return { seconds: 4, frame_interval_ms: stats(gaps), frame_draw_ms: stats(drawn) };
}

/**
 * Time (ms) from the page's first `event` (the mouse-up or the click `action` makes, taken in
 * the page: Playwright's own checks before a click, a few frames, do not count) until
 * `selector` is in the page.
 */
async function until(page, selector, event, action) {
  await page.evaluate((ev) => {
    const w = /** @type {any} */ (window);
    w.__untilT0 = null;
    window.addEventListener(ev, () => (w.__untilT0 = performance.now()), { capture: true, once: true });
  }, event);
  await action();
  const handle = await page.waitForFunction((sel) => (document.querySelector(sel) ? performance.now() : false), selector, { timeout: 120_000, polling: 'raf' });
  const end = await handle.jsonValue();
  return end - (await page.evaluate(() => /** @type {any} */ (window).__untilT0));
}

/**
 * An area selection over the tracks in view (the middle of the trace zoomed 16×, a third of
 * the width): each tab from the mouse-up or the tab's click until shown (ms), and the
 * slices it holds.
 */
async function areaSelection(page, target, tracks) {
  await zoomMiddle(page, target, tracks, 16);
  const canvas = await page.locator('[data-role="trace-canvas"]').boundingBox();
  const y0 = canvas.y + 4;
  const y1 = canvas.y + Math.min(canvas.height - 4, 400);
  await page.mouse.move(canvas.x + canvas.width * 0.33, y0);
  await page.mouse.down();
  await page.mouse.move(canvas.x + canvas.width * 0.66, y1, { steps: 8 });
  const out = {};
  // Shown: the tab's table is in the page (its self times may be refined by SQL later:
  // `*_refined_ms`, until nothing is pending).
  out.slices_ms = round(await until(page, '[data-area-body="slices"][data-shown="true"]', 'mouseup', () => page.mouse.up()));
  out.slices = Number(await page.getAttribute('[data-role="slices-summary"]', 'data-count'));
  await page.waitForSelector('[data-area-body="slices"][data-ready="true"]', { timeout: 300_000 });
  out.slices_refined_ms = Number(await page.getAttribute('[data-area-body="slices"]', 'data-ms'));
  for (const tab of ['pivot', 'flows', 'counters']) {
    out[`${tab}_ms`] = round(await until(page, `[data-area-body="${tab}"][data-shown="true"]`, 'click', () => page.click(`[data-area-tab="${tab}"]`)));
    await page.waitForSelector(`[data-area-body="${tab}"][data-ready="true"]`, { timeout: 300_000 });
    if (tab === 'pivot') out.pivot_refined_ms = Number(await page.getAttribute('[data-area-body="pivot"]', 'data-ms'));
  }
  await waitReady(page);
  return out;
}

/**
 * The pivot (by name and process) of every slice of the busiest thread tracks over the whole
 * trace, tracks added until 1 M slices (or all of them): ms from the selection's start to
 * the table, and the slices it holds.
 */
async function pivotAll(page, target, tracks) {
  const threads = tracks.sections.flatMap((s) => s.tracks.filter((t) => t.kind === 'thread')).sort((a, b) => b.num_events - a.num_events);
  const chosen = [];
  let n = 0;
  for (const t of threads) {
    if (n >= 1_000_000) break;
    chosen.push(t.id);
    n += t.num_events;
  }
  const url = new URL(target);
  url.searchParams.set('range', `${tracks.start_ps}_${tracks.end_ps}`);
  url.searchParams.set('range_tracks', chosen.join(','));
  url.searchParams.set('area_tab', 'pivot');
  url.searchParams.set('pivot', 'name,process');
  await page.goto(url.toString());
  await page.waitForSelector('[data-area-body="pivot"][data-shown="true"] [data-role="pivot-table"]', { timeout: 600_000 });
  const body = page.locator('[data-area-body="pivot"]');
  const rows = await body.locator('[data-role="pivot-table"]').getAttribute('data-rows');
  const count = Number(await body.locator('[data-role="pivot-summary"]').getAttribute('data-count'));
  const shown = Number(await body.getAttribute('data-shown-ms'));
  await page.waitForSelector('[data-area-body="pivot"][data-ready="true"]', { timeout: 600_000 });
  return { tracks: chosen.length, slices: count, groups: Number(rows), pivot_ms: shown, pivot_refined_ms: Number(await body.getAttribute('data-ms')) };
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
try {
  for (const job of jobs) {
    const t0 = performance.now();
    const server = await startServer(bin, job.path, serveArgs);
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
        // Zoom in 16× around the middle, then pan with the pan tool.
        await zoomMiddle(page, target, tracks, 16);
        await page.focus('[data-chart="trace"]');
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
          w.__oxprofFrameMs = [];
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
        const [frames, drawn] = await page.evaluate(() => {
          const w = /** @type {any} */ (window);
          w.__stop = true;
          const d = w.__oxprofFrameMs;
          w.__oxprofFrameMs = undefined;
          return [w.__frames, d];
        });
        const gaps = frames.slice(1).map((f, i) => f - frames[i]);
        result.pan = {
          seconds: panSeconds,
          frames: gaps.length,
          fps: round(gaps.length / ((frames[frames.length - 1] - frames[0]) / 1000)),
          frame_ms: { p50: round(pct(gaps, 50)), p95: round(pct(gaps, 95)), max: round(Math.max(...gaps)) },
          frames_over_20ms: gaps.filter((g) => g > 20).length,
          frame_draw_ms: stats(drawn),
          drags,
          windows_travelled: round(travelled / (e0 - s0)),
          window_requests: windows,
        };
        result.server_after_pan = procStats(server.child.pid);
        result.zoom_keys = await heldZoom(page);
        // Answers to input, on the same page (zoomed in, then back).
        await page.keyboard.press('1');
        result.interactions = await interactions(page, server.url, run, target, tracks);
        result.area_selection = await areaSelection(page, target, tracks);
        result.pivot_all = await pivotAll(page, target, tracks);
        if (withPages) {
          try {
            result.pages = await pages(page.context(), server.url, run);
          } catch (e) {
            result.pages = { error: String(e).split('\n')[0] };
          }
        }
      }
    } finally {
      await server.stop();
    }
    // Reopened: a new server on the same profile finds its trace index in the persistent
    // analysis cache the first one wrote (the harness gives this process a fresh one).
    const again = await startServer(bin, job.path, serveArgs);
    try {
      const runs = await (await fetch(new URL('/oxprof/api/runs', again.url))).json();
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      const target = new URL('/', again.url);
      target.searchParams.set('run', runs.runs[0]?.name);
      target.searchParams.set('tool', 'trace_viewer');
      const t = performance.now();
      await page.goto(target.toString());
      await waitReady(page);
      result.first_view_reopened_ms = Math.round(performance.now() - t);
      result.server_after_reopen = procStats(again.child.pid);
      await page.context().close();
    } finally {
      await again.stop();
    }
    console.log(JSON.stringify(result));
  }
} finally {
  await browser.close();
}
