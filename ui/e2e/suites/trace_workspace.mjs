// The trace viewer as a daily tool (issue "The web UI as a daily tool", items 1-4): the
// workspace (resizable names and panel, tooltips, the active tool, keys, pinned and hidden
// tracks, a flow's other ends, drag-select totals with self time and CSV), search by
// substring and arguments with a results list and vertical jumps, several hosts on one
// timeline, a step opened from the overview and the pod viewer, readable numbers.
import { mkdtempSync, copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';
import { clippedFromTraceApi, dragArea, slicesTab } from '../area.mjs';

export async function register(ctx) {
  const { h, base, runs, open, waitReady, text, repo } = ctx;
  const traceRun = runs.find((r) => r.includes('jax_train'));
  const stepsRun = runs.find((r) => r.includes('tf_custom_loop'));
  if (!traceRun) return h.skip('trace workspace', 'no jax_train run');

  const apiOf = (server) => async (route, params = {}) => {
    const url = new URL(`/oxprof/api/trace/${route}`, server);
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
    return r.json();
  };
  const traceApi = apiOf(base);
  const shown = async (page) => {
    const w = page.locator('[data-role="trace-window"]');
    return { start: Number(await w.getAttribute('data-start-ps')), end: Number(await w.getAttribute('data-end-ps')) };
  };
  const urlParam = (page, key) => new URL(page.url()).searchParams.get(key);
  const canvasBox = (page) => page.locator('[data-role="trace-canvas"]').boundingBox();
  const xOf = (box, span, ps) => box.x + ((ps - span.start) / (span.end - span.start)) * box.width;
  const waitDetails = (page, id) =>
    page.waitForFunction((want) => document.querySelector('[data-role="trace-details"]')?.dataset.eventId === want, String(id), { timeout: 15_000 });

  const tracks = await traceApi('tracks', { run: traceRun });
  const full = { start: tracks.start_ps, end: tracks.end_ps };
  const threads = tracks.sections.flatMap((s) => s.tracks).filter((t) => t.kind === 'thread');
  const exact = await traceApi('window', { run: traceRun, exact_limit: 100000000 });

  /** Nesting depth of each event of a track (XProf's order), as the viewer lays them out. */
  const depths = (events) => {
    const ends = [];
    return events.map((e) => {
      while (ends.length && e.ts_ps >= ends[ends.length - 1]) ends.pop();
      const d = ends.length;
      if (e.dur_ps > 0) ends.push(e.ts_ps + e.dur_ps);
      return d;
    });
  };
  // Three consecutive slices at depth 0 of one track (all with a duration), on a thread of
  // well-nested events (the Python tracer's are not always).
  let triple = null;
  for (const t of exact.tracks.filter((x) => threads.find((y) => y.id === x.id)?.name !== 'python')) {
    const evs = t.events ?? [];
    const ds = depths(evs);
    const top = evs.filter((_, i) => ds[i] === 0);
    for (let i = 1; i + 2 < top.length && !triple; i++) {
      if (top[i].dur_ps > 0 && top[i + 1].dur_ps > 0 && top[i + 2].dur_ps > 0) triple = { track: t.id, events: top.slice(i, i + 3) };
    }
    if (triple) break;
  }

  await h.test('trace workspace: resizable names and panel, full names in tooltips, the active tool shown', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const labels = page.locator('[data-role="trace-labels"]');
    const w0 = (await labels.boundingBox()).width;
    const c0 = (await canvasBox(page)).width;
    const handle = await page.locator('[data-role="label-resizer"]').boundingBox();
    await page.mouse.move(handle.x + handle.width / 2, handle.y + 100);
    await page.mouse.down();
    await page.mouse.move(handle.x + handle.width / 2 + 100, handle.y + 100, { steps: 5 });
    await page.mouse.up();
    await waitReady(page);
    const w1 = (await labels.boundingBox()).width;
    assert(Math.abs(w1 - w0 - 100) <= 2, `the name column grew by 100 px (${w0} → ${w1})`);
    assert((await canvasBox(page)).width < c0 - 90, 'the plot gave the room');
    const panel = page.locator('[data-role="trace-panel"]');
    // Closed until something is selected: the toggle opens it.
    assertEqual(await panel.isVisible(), false, 'no empty panel at first');
    await page.click('[data-role="panel-toggle"]');
    const p0 = (await panel.boundingBox()).height;
    const ph = await page.locator('[data-role="panel-resizer"]').boundingBox();
    await page.mouse.move(ph.x + 200, ph.y + ph.height / 2);
    await page.mouse.down();
    await page.mouse.move(ph.x + 200, ph.y + ph.height / 2 - 80, { steps: 5 });
    await page.mouse.up();
    const p1 = (await panel.boundingBox()).height;
    assert(Math.abs(p1 - p0 - 80) <= 2, `the panel grew by 80 px (${p0} → ${p1})`);
    // Kept across a reload (the user's layout).
    await page.reload();
    await waitReady(page);
    assert(Math.abs((await labels.boundingBox()).width - w1) <= 1, 'name column width kept');
    // Full names in the tooltips of cut labels.
    const titles = await page.locator('[data-track]').evaluateAll((els) => els.map((e) => [Number(e.dataset.track), e.title.split('\n')[0]]));
    for (const [id, title] of titles) assertEqual(title, threads.concat(tracks.sections.flatMap((s) => s.tracks)).find((t) => t.id === id).name, `track ${id} tooltip`);
    // The active tool is visible, also after a key.
    await page.focus('[data-chart="trace"]');
    await page.keyboard.press('3');
    assertEqual(await page.getAttribute('[data-tool="zoom"]', 'aria-pressed'), 'true', 'zoom pressed');
    assertEqual(await page.getAttribute('[data-tool="select"]', 'aria-pressed'), 'false', 'select released');
    assert((await text(page, '[data-role="trace-help"]')).startsWith('Zoom'), 'the active tool is named');
    await shot();
  });

  await h.test('trace workspace: the hover tooltip shows name, duration and key arguments', async ({ page, shot }) => {
    // A top-level event (depth 0 whatever the zoom) with arguments, long enough to hover.
    let target = null;
    for (const t of exact.tracks) {
      const evs = t.events ?? [];
      const ds = depths(evs);
      for (const e of evs.filter((x, i) => ds[i] === 0 && x.dur_ps > (full.end - full.start) / 300).slice(0, 20)) {
        const d = await traceApi('event', { run: traceRun, id: e.id });
        if (Object.keys(d.args).length) {
          target = { track: t.id, e, d };
          break;
        }
      }
      if (target) break;
    }
    assert(target, 'an event with arguments');
    const pad = target.e.dur_ps;
    const span = { start: Math.max(full.start, target.e.ts_ps - pad), end: Math.min(full.end, target.e.ts_ps + 2 * pad) };
    await open(page, base, { run: traceRun, tool: 'trace_viewer', start_ps: String(span.start), end_ps: String(span.end) });
    const now = await shown(page);
    await page.locator(`[data-track="${target.track}"]`).scrollIntoViewIfNeeded();
    const label = await page.locator(`[data-track="${target.track}"]`).boundingBox();
    await page.mouse.move(xOf(await canvasBox(page), now, target.e.ts_ps + target.e.dur_ps / 2), label.y + 9);
    const tip = page.locator('[data-role="trace-tooltip"]');
    await page.waitForFunction((id) => document.querySelector('[data-role="trace-tooltip"]')?.dataset.eventId === id, String(target.e.id), { timeout: 10_000 });
    const key = Object.keys(target.d.args)[0];
    await page.waitForFunction((k) => document.querySelector('[data-role="trace-tooltip"]')?.textContent.includes(`${k}:`), key, { timeout: 10_000 });
    const tipText = await tip.innerText();
    assert(tipText.startsWith(target.d.name), `the tooltip names the event: ${tipText}`);
    assert(/\d (ps|ns|µs|ms|s)\b/.test(tipText), `the tooltip has the duration: ${tipText}`);
    await shot();
  });

  if (!triple) h.skip('trace workspace: keys', 'no track with three top-level slices');
  else {
    await h.test('trace workspace: keys ? (help), [ and ] (neighbours), f (fit), m (mark), 0 (reset)', async ({ page, shot }) => {
      const [a, b, c] = triple.events;
      await open(page, base, { run: traceRun, tool: 'trace_viewer', sel: String(b.id), start_ps: String(a.ts_ps), end_ps: String(c.ts_ps + c.dur_ps) });
      await waitDetails(page, b.id);
      await page.focus('[data-chart="trace"]');
      await page.keyboard.press(']');
      await waitDetails(page, c.id);
      assertEqual(urlParam(page, 'sel'), String(c.id), '] selects the next slice on the track and depth');
      await page.keyboard.press('[');
      await waitDetails(page, b.id);
      assertEqual(urlParam(page, 'sel'), String(b.id), '[ selects the previous one');
      await page.keyboard.press('f');
      await waitReady(page);
      const fit = await shown(page);
      assert(fit.start <= b.ts_ps && fit.end >= b.ts_ps + b.dur_ps && fit.end - fit.start <= b.dur_ps * 1.2 + 2000, `f fits the selection: ${JSON.stringify(fit)} vs ${b.ts_ps}+${b.dur_ps}`);
      await page.keyboard.press('m');
      const timing = page.locator('[data-role="trace-timing"]');
      assertEqual([await timing.getAttribute('data-start-ps'), await timing.getAttribute('data-end-ps')], [String(b.ts_ps), String(b.ts_ps + b.dur_ps)], 'm marks the selection');
      await page.keyboard.press('0');
      await waitReady(page);
      assertEqual(await shown(page), full, '0 resets the view');
      await page.keyboard.press('?');
      await page.locator('[data-role="trace-help-sheet"]').waitFor({ state: 'visible' });
      assert((await text(page, '[data-role="trace-help-sheet"]')).includes('fit the view'), 'the help sheet lists the keys');
      await shot('.help');
      await page.keyboard.press('Escape');
      await page.locator('[data-role="trace-help-sheet"]').waitFor({ state: 'hidden' });
    });
  }

  await h.test('trace workspace: pin a track to the top, hide another, show it again', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const [first, second] = threads;
    const pinLabel = page.locator(`[data-role="trace-labels"] [data-track="${second.id}"]`);
    await pinLabel.hover();
    await pinLabel.locator('[data-role="pin"]').click();
    await waitReady(page);
    await page.locator(`[data-role="trace-pinned-labels"] [data-track="${second.id}"]`).waitFor();
    assertEqual(await page.locator(`[data-role="trace-labels"] [data-track="${second.id}"]`).count(), 0, 'the pinned track left the list');
    assertEqual(urlParam(page, 'pinned'), String(second.id), 'pinned tracks are in the URL');
    const hideLabel = page.locator(`[data-role="trace-labels"] [data-track="${first.id}"]`);
    await hideLabel.hover();
    await hideLabel.locator('[data-role="hide"]').click();
    await waitReady(page);
    assertEqual(await page.locator(`[data-track="${first.id}"]`).count(), 0, 'the hidden track is gone');
    assertEqual(urlParam(page, 'hidden_tracks'), String(first.id), 'hidden tracks are in the URL');
    await shot();
    await page.reload();
    await waitReady(page);
    await page.locator(`[data-role="trace-pinned-labels"] [data-track="${second.id}"]`).waitFor();
    assertEqual(await page.locator(`[data-track="${first.id}"]`).count(), 0, 'still hidden after a reload');
    await page.click('[data-role="unhide"]');
    await waitReady(page);
    await page.locator(`[data-role="trace-labels"] [data-track="${first.id}"]`).waitFor();
    assertEqual(urlParam(page, 'hidden_tracks'), null, 'nothing hidden');
  });

  await h.test('trace workspace: a flow lists its other ends; clicking one jumps there', async ({ page, shot }) => {
    let target = null;
    for (const e of exact.tracks.flatMap((t) => t.events ?? []).filter((x) => x.flow)) {
      const f = await traceApi('flow', { run: traceRun, id: e.flow[0] });
      if (f.events.length >= 2 && new Set(f.events.map((x) => x.track)).size >= 2) {
        target = { event: e, flow: f };
        break;
      }
    }
    assert(target, 'an event whose flow links two tracks');
    await open(page, base, { run: traceRun, tool: 'trace_viewer', sel: String(target.event.id) });
    await waitDetails(page, target.event.id);
    const jumps = page.locator('[data-role="flow-jump"]');
    await jumps.first().waitFor();
    const others = target.flow.events.filter((x) => x.id !== target.event.id);
    assertEqual(await jumps.evaluateAll((bs) => bs.map((b) => Number(b.dataset.eventId))), others.map((x) => x.id), 'the other ends, by time');
    const other = others[others.length - 1];
    await jumps.last().click();
    await waitDetails(page, other.id);
    await waitReady(page);
    const now = await shown(page);
    assert(now.start <= other.ts_ps && now.end >= other.ts_ps, `the view moved to the other end: ${JSON.stringify(now)} vs ${other.ts_ps}`);
    const label = await page.locator(`[data-track="${other.track}"]`).boundingBox();
    const box = await page.locator('[data-role="trace-scroll"]').boundingBox();
    assert(label.y >= box.y - 1 && label.y < box.y + box.height, 'and to its track, vertically');
    await shot();
  });

  await h.test('trace workspace: drag-select shows clipped totals with self time and exports CSV', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const canvas = await canvasBox(page);
    const rows = await page.locator('[data-role="trace-labels"] [data-track][data-kind="thread"]').evaluateAll((els) => els.map((e) => ({ id: Number(e.dataset.track), top: e.getBoundingClientRect().top, bottom: e.getBoundingClientRect().bottom })));
    await dragArea(page, canvas.x + canvas.width * 0.2, rows[0].top + 4, canvas.x + canvas.width * 0.7, rows[Math.min(3, rows.length - 1)].bottom - 4);
    await waitReady(page);
    const [start, end] = urlParam(page, 'range').split('_').map(Number);
    const want = await clippedFromTraceApi(traceApi, { run: traceRun }, start, end, urlParam(page, 'range_tracks').split(',').map(Number));
    const totals = page.locator('[data-area-body="slices"] [data-role="aggregate-totals"]');
    const sum = (k) => [...want.byName.values()].reduce((t, r) => t + r[k], 0);
    assertEqual(Number((await totals.locator('[data-field="count"]').innerText()).replace(/,/g, '')), sum('count'), 'total count');
    assertEqual(Number(await totals.locator('[data-field="wall"]').getAttribute('data-ps')), sum('wall'), 'total wall time in the area');
    assert((await text(page, '[data-role="slices-summary"]')).includes('self'), 'the summary names the self time');
    const tab = await slicesTab(page);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-area-body="slices"] [data-role="aggregate-csv"]')]);
    const csv = ctx.parseCsv(readFileSync(await download.path(), 'utf8'));
    assertEqual(csv[0].slice(0, 3), ['Name', 'Count', 'Wall in range (ps)'], 'CSV header (raw picoseconds)');
    assertEqual(csv.slice(1).map((r) => [r[0], Number(r[1]), Number(r[2])]).sort(), [...tab.rows.values()].map((r) => [r.name, r.count, r.wall]).sort(), 'CSV rows: raw values');
    await shot();
  });

  await h.test('trace search: substring in any case, a results list, matches highlighted, a jump scrolls to the track', async ({ page, shot }) => {
    await page.setViewportSize({ width: 1280, height: 640 });
    // A name found only on the last thread track (below the first screen).
    const last = threads.at(-1);
    const lastEvents = exact.tracks.find((t) => t.id === last.id)?.events ?? [];
    const names = exact.names;
    const elsewhere = new Set(exact.tracks.filter((t) => t.id !== last.id).flatMap((t) => (t.events ?? []).map((e) => names[e.name])));
    const only = [...new Set(lastEvents.map((e) => names[e.name]))].find((n) => n.length >= 6 && ![...elsewhere].some((o) => o.toLowerCase().includes(n.slice(1, -1).toLowerCase())));
    assert(only, 'a name of the last track only');
    const needle = only.slice(1, -1).toUpperCase() === only.slice(1, -1) ? only.slice(1, -1).toLowerCase() : only.slice(1, -1).toUpperCase();
    const expected = await traceApi('search', { run: traceRun, q: needle, limit: 1000 });
    assert(expected.total > 0, `the API finds "${needle}"`);
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    await page.fill('[data-role="trace-search"]', needle);
    await page.press('[data-role="trace-search"]', 'Enter');
    const first = expected.matches[0];
    await waitDetails(page, first.id);
    await waitReady(page);
    assertEqual(await page.getAttribute('[data-role="search-status"]', 'data-total'), String(expected.total), 'match count');
    const label = await page.locator(`[data-role="trace-labels"] [data-track="${first.track}"]`).boundingBox();
    const box = await page.locator('[data-role="trace-scroll"]').boundingBox();
    assert(label.y >= box.y - 1 && label.y < box.y + box.height, `the jump scrolled to the track (label at ${label.y}, box ${box.y}..${box.y + box.height})`);
    assert(Number(await page.getAttribute('[data-role="trace-canvas"]', 'data-highlights')) > 0, 'matches are highlighted');
    await page.click('[data-tab="results"]');
    const items = page.locator('[data-role="search-results"] li');
    assertEqual(await items.count(), Math.min(expected.matches.length, 200), 'the results list');
    if (expected.matches.length > 1) {
      await items.nth(1).locator('button').click();
      await waitDetails(page, expected.matches[1].id);
      assertEqual(await page.getAttribute('[data-role="search-status"]', 'data-index'), '1', 'a result from the list is the current match');
    }
    await shot();
  });

  // Argument values: kernels of the MI300X capture carry their HLO op and module.
  {
    const gemm = await startServer(process.env.OXPROF_BIN, join(repo, 'testdata/demo/mi300x_jax_gemm'));
    try {
      await h.test('trace search: argument values with "args"', async ({ page, shot }) => {
        const api = apiOf(gemm.url);
        const all = await api('window', { run: 'jax08_gemm', exact_limit: 100000000 });
        let piece = null;
        for (const t of all.tracks) {
          for (const e of (t.events ?? []).slice(0, 40)) {
            const d = await api('event', { run: 'jax08_gemm', id: e.id });
            for (const value of Object.values(d.args).filter((v) => typeof v === 'string' && v.length >= 8)) {
              for (let i = 0; i + 6 <= value.length && !piece; i++) {
                const cand = value.slice(i, i + 6);
                if (/^[A-Za-z0-9_.]+$/.test(cand) && !all.names.some((n) => n.toLowerCase().includes(cand.toLowerCase()))) piece = cand;
              }
              if (piece) break;
            }
            if (piece) break;
          }
          if (piece) break;
        }
        assert(piece, 'a piece of an argument value that no name holds');
        const withArgs = await api('search', { run: 'jax08_gemm', q: piece, args: 1 });
        assertEqual((await api('search', { run: 'jax08_gemm', q: piece })).total, 0, 'no name holds it');
        assert(withArgs.total > 0, 'arguments hold it');
        await open(page, gemm.url, { run: 'jax08_gemm', tool: 'trace_viewer@' });
        await page.check('[data-role="search-args"]');
        await page.fill('[data-role="trace-search"]', piece.toUpperCase());
        await page.press('[data-role="trace-search"]', 'Enter');
        await waitDetails(page, withArgs.matches[0].id);
        assertEqual(await page.getAttribute('[data-role="search-status"]', 'data-total'), String(withArgs.total), 'matches in arguments');
        assertEqual(urlParam(page, 'q_args'), '1', 'in the URL');
        await page.click('[data-tab="results"]');
        assert((await text(page, '[data-role="search-results"] li')).includes('matched in'), 'the list says which argument matched');
        await shot();
      });
    } finally {
      await gemm.stop();
    }
  }

  await h.test('trace numbers: at deep zoom the ruler counts from a base time (labels never repeat); durations read in adaptive units', async ({ page, shot }) => {
    const start = full.start + Math.round((full.end - full.start) * 0.8);
    await open(page, base, { run: traceRun, tool: 'trace_viewer', start_ps: String(start), end_ps: String(start + 2_000_000) });
    const ruler = page.locator('[data-role="trace-ruler"]');
    const labels = (await ruler.getAttribute('data-labels')).split('|');
    assert(labels.length >= 3 && new Set(labels).size === labels.length, `distinct tick labels: ${labels}`);
    assert(labels.every((l) => l.startsWith('+')), `relative labels: ${labels}`);
    assert((await ruler.getAttribute('data-base')).length > 0, 'the base time is shown');
    assert((await text(page, '[data-role="trace-ruler-base"]')).includes('ms'), 'the base reads in ms');
    // The whole trace: absolute labels from the start.
    await open(page, base, { run: traceRun, tool: 'trace_viewer', sel: String(exact.tracks.flatMap((t) => t.events ?? []).reduce((a, b) => (b.dur_ps > a.dur_ps ? b : a)).id) });
    assert(!(await ruler.getAttribute('data-labels')).includes('+'), 'absolute labels for the whole trace');
    await page.waitForSelector('[data-role="trace-details"] [data-field="duration"]');
    const dur = await text(page, '[data-role="trace-details"] [data-field="duration"]');
    assert(/^-?\d{1,4}(\.\d+)? (ps|ns|µs|ms|s)$/.test(dur) && dur.replace(/\D/g, '').length <= 4, `duration with four significant digits: ${dur}`);
    await shot();
  });

  // Several hosts: two copies of jax_train as hosts a and b of one run.
  {
    const dir = mkdtempSync(join(tmpdir(), 'oxprof-hosts-'));
    const runDir = join(dir, 'plugins/profile/two_hosts');
    mkdirSync(runDir, { recursive: true });
    const src = join(repo, 'testdata/profiles/jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz');
    for (const host of ['a', 'b']) copyFileSync(src, join(runDir, `${host}.xplane.pb.gz`));
    const server = await startServer(process.env.OXPROF_BIN, dir);
    try {
      const api2 = apiOf(server.url);
      await h.test('several hosts: picked together, one timeline (their own clocks), collapsible per host', async ({ page, shot }) => {
        await open(page, server.url, { run: 'two_hosts', tool: 'trace_viewer@', host: 'a' });
        await page.click('[data-role="hosts-picker"] summary');
        await page.check('[data-host-choice="b"]');
        await page.click('[data-role="hosts-apply"]');
        await waitReady(page);
        assertEqual(urlParam(page, 'hosts'), 'a,b', 'hosts in the URL');
        const both = await api2('tracks', { run: 'two_hosts', hosts: 'a,b' });
        assertEqual(await page.locator('[data-host]').evaluateAll((els) => els.map((e) => e.dataset.host)), ['a', 'b'], 'a header per host');
        assertEqual(await page.locator('[data-section]').evaluateAll((els) => els.map((e) => e.dataset.name)), both.sections.map((s) => s.name), 'the processes of both hosts');
        assertEqual(await shown(page), { start: both.start_ps, end: both.end_ps }, 'one time range over both hosts');
        const one = await api2('tracks', { run: 'two_hosts', host: 'a' });
        assertEqual(Number(await page.getAttribute('[data-role="trace-hidden"]', 'data-in-window')), (await api2('window', { run: 'two_hosts', hosts: 'a,b', start_ps: both.start_ps, end_ps: both.end_ps, width: await page.getAttribute('[data-role="trace-hidden"]', 'data-fetch-width') })).total_in_window, 'events of both hosts loaded');
        await shot();
        await page.click('[data-host="b"]');
        await waitReady(page);
        assertEqual(await page.locator('[data-section]').count(), one.sections.length, 'host b collapsed');
        assertEqual(urlParam(page, 'collapsed_hosts'), 'b', 'collapsed hosts in the URL');
        // Search covers both hosts.
        await page.fill('[data-role="trace-search"]', 'thunk');
        await page.press('[data-role="trace-search"]', 'Enter');
        await page.waitForFunction(() => document.querySelector('[data-role="search-status"]')?.dataset.total !== undefined);
        const total = (await api2('search', { run: 'two_hosts', hosts: 'a,b', q: 'thunk' })).total;
        assertEqual(await page.getAttribute('[data-role="search-status"]', 'data-total'), String(total), 'matches on both hosts');
      });
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  // A step of the overview's step-time graph and of the pod viewer opens in the trace.
  if (stepsRun) {
    await h.test('steps: a step clicked in the overview and one of the pod viewer open in the trace viewer', async ({ page, shot }) => {
      await open(page, base, { run: stepsRun, tool: 'overview_page' });
      const chart = await page.locator('[data-chart="step-time"]').boundingBox();
      await Promise.all([page.waitForURL(/trace_viewer/), page.mouse.click(chart.x + chart.width / 2, chart.y + chart.height / 2)]);
      await waitReady(page);
      const step = await page.getAttribute('[data-chart="trace"]', 'data-step');
      assert(step, 'the trace viewer opened a step');
      const span = await traceApi('step', { run: stepsRun, step });
      const timing = page.locator('[data-role="trace-timing"]');
      assertEqual([await timing.getAttribute('data-start-ps'), await timing.getAttribute('data-end-ps')], [String(span.start_ps), String(span.end_ps)], 'the step is marked');
      const view = await shown(page);
      assert(view.start <= span.start_ps && view.end >= span.end_ps && view.end - view.start < (span.end_ps - span.start_ps) * 1.3, `the view is the step: ${JSON.stringify(view)}`);
      assertEqual(urlParam(page, 'step_name'), null, 'the step key is replaced by the window');
      await shot();
      // Pod viewer: the step of the slider.
      await open(page, base, { run: stepsRun, tool: 'pod_viewer', step: '2' });
      const podStep = (await text(page, '[data-role="step-label"]')).match(/^Step (\d+)/)[1];
      await Promise.all([page.waitForURL(/trace_viewer/), page.click('[data-role="open-step"]')]);
      await waitReady(page);
      assertEqual(await page.getAttribute('[data-chart="trace"]', 'data-step'), podStep, 'the pod viewer step');
    });
  }
}
