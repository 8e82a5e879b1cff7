// The trace viewer (pages/trace_viewer.ts) on the jax_train profile, against oxprof's LOD
// trace API (/oxprof/api/trace/*): sections and counts, keyboard and wheel zoom, select
// (click and drag → exact aggregate), search across the whole trace, timing, deep links,
// collapsing sections, flow arrows.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';
import { clippedFromTraceApi, dragArea, sameRows, slicesTab } from '../area.mjs';

export async function register(ctx) {
  const { h, base, runs, open, waitReady, text, external } = ctx;
  const traceRun = runs.find((r) => r.includes('jax_train'));
  if (!traceRun) return h.skip('trace viewer', 'no jax_train run');

  const traceApi = async (route, params) => {
    const url = new URL(`/oxprof/api/trace/${route}`, base);
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
    return r.json();
  };
  const shown = async (page) => {
    const w = page.locator('[data-role="trace-window"]');
    return { start: Number(await w.getAttribute('data-start-ps')), end: Number(await w.getAttribute('data-end-ps')) };
  };
  const urlParam = (page, key) => new URL(page.url()).searchParams.get(key);
  const urlSpan = (page) => ({ start: Number(urlParam(page, 'start_ps')), end: Number(urlParam(page, 'end_ps')) });
  const canvasBox = (page) => page.locator('[data-role="trace-canvas"]').boundingBox();
  /** The page's counts equal the API's window for the range the page loaded. */
  const checkCounts = async (page, span) => {
    const box = page.locator('[data-role="trace-hidden"]');
    const attr = async (k) => box.getAttribute(k);
    const start = Number(await attr('data-fetch-start'));
    const end = Number(await attr('data-fetch-end'));
    assert(start <= span.start && end >= span.end, `the loaded range [${start}, ${end}] covers the view ${JSON.stringify(span)}`);
    const win = await traceApi('window', { run: traceRun, start_ps: start, end_ps: end, width: await attr('data-fetch-width'), tracks: await attr('data-fetch-tracks') });
    assertEqual(await attr('data-hidden'), String(win.total_hidden), 'hidden count');
    assertEqual(await attr('data-in-window'), String(win.total_in_window), 'events in the loaded range');
    return win;
  };
  /** x on the page of time `ps` for the shown window. */
  const xOf = (box, span, ps) => box.x + ((ps - span.start) / (span.end - span.start)) * box.width;
  const waitDetails = (page, id) =>
    page.waitForFunction((want) => document.querySelector('[data-role="trace-details"]')?.dataset.eventId === want, String(id), { timeout: 15_000 });

  const tracks = await traceApi('tracks', { run: traceRun });
  const full = { start: tracks.start_ps, end: tracks.end_ps };
  const allTracks = tracks.sections.flatMap((s) => s.tracks);

  await h.test('trace viewer: loads every section and track and counts what the zoom merges', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    assertEqual(await page.locator('[data-section]').evaluateAll((els) => els.map((e) => e.dataset.name)), tracks.sections.map((s) => s.name), 'sections');
    // The label shows the process without the host (in the title): full names in the tooltip.
    assertEqual(await page.locator('[data-section]').evaluateAll((els) => els.map((e) => e.title)), tracks.sections.map((s) => s.name), 'full section names in tooltips');
    const ids = await page.locator('[data-track]').evaluateAll((els) => els.map((e) => Number(e.dataset.track)));
    assertEqual(ids, allTracks.map((t) => t.id), 'one track per thread, in order');
    assertEqual(await shown(page), full, 'the whole trace by default');
    const win = await checkCounts(page, full);
    assert(win.total_hidden > 0, 'the whole jax_train trace merges events at this zoom');
    assert((await text(page, '[data-role="trace-hidden"]')).includes('merged at this zoom'), 'the hidden count is shown');
    // Windows are parsed off the main thread (the page's CSP allows the same-origin worker).
    assertEqual(await page.locator('[data-chart="trace"]').getAttribute('data-window-loader'), 'worker', 'window loader');
    await shot();
  });

  /** Holds `key` for about `ms` (the view moves on every animation frame while it is down). */
  const hold = async (page, key, ms) => {
    await page.keyboard.down(key);
    await page.waitForTimeout(ms);
    await page.keyboard.up(key);
    // The tap's minimum run, then the fetch.
    await page.waitForTimeout(250);
    await waitReady(page);
  };

  await h.test('trace viewer: W/S/A/D held zoom and pan smoothly, kept in the URL', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    await page.focus('[data-chart="trace"]');
    await hold(page, 'w', 400);
    const z1 = urlSpan(page);
    assert(z1.end - z1.start < (full.end - full.start) * 0.8 && z1.end > z1.start, `W zooms in: ${JSON.stringify(z1)}`);
    assertEqual(await shown(page), z1, 'shown window = URL');
    await checkCounts(page, z1);
    await hold(page, 'd', 300);
    const z2 = urlSpan(page);
    assert(z2.start > z1.start && Math.abs(z2.end - z2.start - (z1.end - z1.start)) <= 1, `D pans right: ${JSON.stringify(z2)}`);
    await hold(page, 'w', 300);
    const z3 = urlSpan(page);
    assert(z3.end - z3.start < z2.end - z2.start, `W zooms in again: ${JSON.stringify(z3)}`);
    await checkCounts(page, z3);
    await hold(page, 's', 300);
    const z4 = urlSpan(page);
    assert(z4.end - z4.start > z3.end - z3.start, `S zooms out: ${JSON.stringify(z4)}`);
    await shot();
  });

  await h.test('trace viewer: ctrl+wheel zooms around the pointer, the wheel alone scrolls the tracks', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const box = await canvasBox(page);
    const before = await shown(page);
    const px = box.x + box.width * 0.25;
    const anchor = before.start + 0.25 * (before.end - before.start);
    await page.mouse.move(px, box.y + 40);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -300);
    await page.keyboard.up('Control');
    await waitReady(page);
    const after = urlSpan(page);
    assertEqual(await shown(page), after, 'shown window = URL');
    assert(after.end - after.start < (before.end - before.start) * 0.8, `ctrl+wheel up zooms in: ${JSON.stringify(after)}`);
    const anchorAfter = after.start + 0.25 * (after.end - after.start);
    assert(Math.abs(anchorAfter - anchor) <= (before.end - before.start) / box.width, 'the time under the pointer stays under it');
    await checkCounts(page, after);
    // The wheel alone scrolls the tracks and leaves the time window alone.
    const scroll = page.locator('[data-role="trace-scroll"]');
    const top0 = await scroll.evaluate((el) => el.scrollTop);
    await page.mouse.wheel(0, 200);
    await page.waitForFunction((t) => document.querySelector('[data-role="trace-scroll"]').scrollTop > t, top0);
    assertEqual(await shown(page), after, 'the wheel does not zoom');
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, 300);
    await page.keyboard.up('Control');
    await waitReady(page);
    const out = await shown(page);
    assert(out.end - out.start > after.end - after.start, 'ctrl+wheel down zooms out');
    await shot();
  });

  await h.test('trace viewer: the pan tool drags the window and the zoom tool zooms to a dragged interval', async ({ page, shot }) => {
    const len = full.end - full.start;
    const start = { start: full.start + Math.round(len * 0.4), end: full.start + Math.round(len * 0.5) };
    await open(page, base, { run: traceRun, tool: 'trace_viewer', start_ps: String(start.start), end_ps: String(start.end) });
    const box = await canvasBox(page);
    const y = box.y + 40;
    await page.focus('[data-chart="trace"]');
    await page.keyboard.press('2');
    assertEqual(await page.getAttribute('[data-tool="pan"]', 'aria-pressed'), 'true', 'key 2 picks the pan tool');
    await page.mouse.move(box.x + 600, y);
    await page.mouse.down();
    await page.mouse.move(box.x + 400, y, { steps: 8 });
    await page.mouse.up();
    await waitReady(page);
    const panned = await shown(page);
    const expected = start.start + (200 / box.width) * (start.end - start.start);
    assert(Math.abs(panned.start - expected) <= (start.end - start.start) / box.width, `dragging left by 200 px pans right: ${panned.start} ≈ ${expected}`);
    assertEqual(panned.end - panned.start, start.end - start.start, 'panning keeps the length');
    assertEqual(urlSpan(page), panned, 'URL follows');
    await checkCounts(page, panned);
    await page.click('[data-tool="zoom"]');
    await page.mouse.move(box.x + 300, y);
    await page.mouse.down();
    await page.mouse.move(box.x + 500, y, { steps: 8 });
    await page.mouse.up();
    await waitReady(page);
    const zoomed = await shown(page);
    const ps = (x) => panned.start + (x / box.width) * (panned.end - panned.start);
    const tol = (panned.end - panned.start) / box.width;
    assert(Math.abs(zoomed.start - ps(300)) <= tol && Math.abs(zoomed.end - ps(500)) <= tol, `zoomed to the dragged interval: ${JSON.stringify(zoomed)}`);
    await checkCounts(page, zoomed);
    await shot();
  });

  await h.test('trace viewer: clicking a slice shows its details (self time, arguments) as the API gives them', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const span = await shown(page);
    const box = page.locator('[data-role="trace-hidden"]');
    const win = await traceApi('window', {
      run: traceRun,
      start_ps: await box.getAttribute('data-fetch-start'),
      end_ps: await box.getAttribute('data-fetch-end'),
      width: await box.getAttribute('data-fetch-width'),
    });
    // The longest event of a track is at depth 0; prefer one with arguments.
    let target = null;
    for (const t of win.tracks) {
      const inView = (t.events ?? []).filter((e) => e.ts_ps >= span.start && e.ts_ps + e.dur_ps <= span.end);
      if (!inView.length) continue;
      const longest = inView.reduce((a, b) => (b.dur_ps > a.dur_ps ? b : a));
      const details = await traceApi('event', { run: traceRun, id: longest.id });
      const key = [Object.keys(details.args).length ? 1 : 0, longest.dur_ps];
      if (!target || key[0] > target.key[0] || (key[0] === target.key[0] && key[1] > target.key[1])) target = { track: t.id, event: longest, details, key };
    }
    assert(target, 'an event to click');
    await page.locator(`[data-track="${target.track}"]`).scrollIntoViewIfNeeded();
    const canvas = await canvasBox(page);
    const label = await page.locator(`[data-track="${target.track}"]`).boundingBox();
    await page.mouse.click(xOf(canvas, span, target.event.ts_ps + target.event.dur_ps / 2), label.y + 9);
    await waitDetails(page, target.event.id);
    await waitReady(page);
    const d = target.details;
    assertEqual(await text(page, '[data-role="trace-details"] [data-field="name"]'), d.name, 'name');
    assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="start"]', 'data-ps'), String(d.ts_ps), 'start');
    assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="duration"]', 'data-ps'), String(d.dur_ps), 'duration');
    assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="self"]', 'data-ps'), String(d.self_ps), 'self time');
    const args = await page.locator('[data-role="trace-details"] [data-arg]').evaluateAll((rows) => rows.map((r) => [r.dataset.arg, r.querySelector('td').textContent]));
    assertEqual(args, Object.entries(d.args).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]), 'arguments');
    assertEqual(urlParam(page, 'sel'), String(d.id), 'the selection is in the URL');
    await shot();
  });

  await h.test('trace viewer: a fixed workspace: the page does not scroll, tracks scroll inside it under a ruler that stays, clicks still hit', async ({ page, shot }) => {
    await page.setViewportSize({ width: 1280, height: 640 });
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const pageSize = await page.evaluate(() => ({ sh: document.documentElement.scrollHeight, ih: innerHeight, sw: document.documentElement.scrollWidth, iw: innerWidth }));
    assert(pageSize.sh <= pageSize.ih && pageSize.sw <= pageSize.iw, `the page itself does not scroll: ${JSON.stringify(pageSize)}`);
    const scroller = page.locator('[data-role="trace-scroll"]');
    const sizes = await scroller.evaluate((el) => ({ scroll: el.scrollHeight, client: el.clientHeight }));
    assert(sizes.scroll > sizes.client, `the tracks are taller than their box (${JSON.stringify(sizes)})`);
    const canvasHeight = await page.locator('[data-role="trace-canvas"]').evaluate((c) => c.getBoundingClientRect().height);
    assert(canvasHeight <= sizes.client + 1, `the canvas is at most the box high (${canvasHeight})`);
    const rulerBefore = await page.locator('[data-role="trace-ruler"]').boundingBox();
    await scroller.evaluate((el) => (el.scrollTop = el.scrollHeight));
    await page.waitForFunction(() => Number(document.querySelector('[data-role="trace-canvas"]').dataset.offset) > 0);
    const rulerAfter = await page.locator('[data-role="trace-ruler"]').boundingBox();
    assertEqual(rulerAfter.y, rulerBefore.y, 'the ruler stays in place');
    const cover = await page.locator('[data-role="trace-canvas"]').evaluate((c) => {
      const r = c.getBoundingClientRect();
      const box = document.querySelector('[data-role="trace-scroll"]').getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, want: [box.top, box.bottom] };
    });
    assert(Math.abs(cover.top - cover.want[0]) <= 1 && cover.bottom <= cover.want[1] + 1, `the canvas covers the visible part of the tracks: ${JSON.stringify(cover)}`);
    // The last thread track (below the first screen) answers clicks on its events, and its
    // details show in the docked panel, on screen.
    const last = allTracks.filter((t) => t.kind === 'thread').at(-1);
    const span = await shown(page);
    const box = page.locator('[data-role="trace-hidden"]');
    const win = await traceApi('window', { run: traceRun, start_ps: await box.getAttribute('data-fetch-start'), end_ps: await box.getAttribute('data-fetch-end'), width: await box.getAttribute('data-fetch-width'), tracks: last.id });
    const ev = (win.tracks[0].events ?? []).reduce((a, b) => (!a || b.dur_ps > a.dur_ps ? b : a), null);
    assert(ev, 'an event on the last track');
    const label = await page.locator(`[data-track="${last.id}"]`).boundingBox();
    await page.mouse.click(xOf(await canvasBox(page), span, ev.ts_ps + ev.dur_ps / 2), label.y + 9);
    await waitDetails(page, ev.id);
    const panel = await page.locator('[data-role="trace-details"]').boundingBox();
    assert(panel.y + 20 < 640, `the details are on screen (panel at ${panel.y})`);
    await shot();
  });

  await h.test('trace viewer: drag-selecting lists every slice of the area, wall times clipped to it', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const canvas = await canvasBox(page);
    const labelsOf = await page.locator('[data-track][data-kind="thread"]').evaluateAll((els) => els.map((e) => ({ id: Number(e.dataset.track), top: e.getBoundingClientRect().top, bottom: e.getBoundingClientRect().bottom })));
    assert(labelsOf.length >= 3, 'three thread tracks');
    const y0 = labelsOf[0].top + 4;
    const y1 = labelsOf[Math.min(4, labelsOf.length - 1)].bottom - 4;
    await dragArea(page, canvas.x + canvas.width * 0.3, y0, canvas.x + canvas.width * 0.6, y1);
    await waitReady(page);
    const [start, end] = urlParam(page, 'range').split('_').map(Number);
    const selTracks = urlParam(page, 'range_tracks');
    assertEqual(selTracks, labelsOf.slice(0, Math.min(5, labelsOf.length)).map((l) => l.id).join(','), 'the tracks under the drag');
    const want = await clippedFromTraceApi(traceApi, { run: traceRun }, start, end, selTracks.split(',').map(Number));
    assert(want.numEvents > 0, 'the selection holds events');
    const tab = await slicesTab(page);
    assertEqual(tab.summary.count, want.numEvents, 'every slice overlapping the area is counted');
    sameRows(tab.rows, want.byName, ['count', 'wall'], 'slices clipped to the area (trace routes)');
    // More events than the page drew: the selection is exact, not limited to the drawn slices.
    const win = await traceApi('window', { run: traceRun, start_ps: start, end_ps: end, width: Math.round(canvas.width * 0.3), tracks: selTracks });
    assertEqual(want.numEvents, win.total_in_window, 'every event in the selection is counted');
    await shot();
    // A reload restores the selection and its tabs.
    await page.reload();
    await waitReady(page);
    await page.waitForSelector('[data-area-body="slices"][data-ready="true"]', { timeout: 20_000 });
    assertEqual((await slicesTab(page)).summary.count, want.numEvents, 'the selection after a reload');
  });

  await h.test('trace viewer: search (substring, any case) finds an event outside the window and moves there', async ({ page, shot }) => {
    const len = full.end - full.start;
    const view = { start: full.start, end: full.start + Math.round(len * 0.02) };
    // A name whose first match starts after the window.
    const names = (await traceApi('window', { run: traceRun, width: 400 })).names;
    let found = null;
    for (const name of names) {
      if (!name) continue;
      const prefix = name.slice(0, Math.min(name.length, 12));
      const r = await traceApi('search', { run: traceRun, q: prefix, limit: 5 });
      if (r.matches.length && r.matches[0].ts_ps > view.end) {
        found = { prefix, result: r };
        break;
      }
    }
    assert(found, 'a name found only after the window');
    await open(page, base, { run: traceRun, tool: 'trace_viewer', start_ps: String(view.start), end_ps: String(view.end) });
    await page.fill('[data-role="trace-search"]', found.prefix);
    await page.press('[data-role="trace-search"]', 'Enter');
    const first = found.result.matches[0];
    await waitDetails(page, first.id);
    await waitReady(page);
    const status = page.locator('[data-role="search-status"]');
    assertEqual(await status.getAttribute('data-total'), String(found.result.total), 'match count');
    assertEqual(await status.getAttribute('data-match-id'), String(first.id), 'the first match');
    const now = await shown(page);
    assert(now.start <= first.ts_ps && now.end >= first.ts_ps + first.dur_ps, `the window moved to the match: ${JSON.stringify(now)} vs ${first.ts_ps}`);
    assertEqual(urlParam(page, 'q'), found.prefix, 'the search is in the URL');
    if (found.result.total > 1) {
      await page.click('[data-role="search-next"]');
      const second = found.result.matches[1];
      await waitDetails(page, second.id);
      assertEqual(await status.getAttribute('data-index'), '1', 'next match');
      await page.click('[data-role="search-prev"]');
      await waitDetails(page, first.id);
      assertEqual(await status.getAttribute('data-index'), '0', 'previous match');
    }
    await shot();
  });

  await h.test('trace viewer: the timing tool measures an interval', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    await page.click('[data-tool="timing"]');
    assertEqual(await page.getAttribute('[data-tool="timing"]', 'aria-pressed'), 'true', 'timing tool active');
    const canvas = await canvasBox(page);
    const span = await shown(page);
    const [xa, xb] = [canvas.x + 200, canvas.x + 500];
    await page.mouse.move(xa, canvas.y + 60);
    await page.mouse.down();
    await page.mouse.move(xb, canvas.y + 80, { steps: 6 });
    await page.mouse.up();
    await page.waitForSelector('[data-role="trace-timing"][data-ps]');
    const ps = Number(await page.getAttribute('[data-role="trace-timing"]', 'data-ps'));
    const expected = ((xb - xa) / canvas.width) * (span.end - span.start);
    const pxPs = (span.end - span.start) / canvas.width;
    assert(Math.abs(ps - expected) <= 2 * pxPs, `interval ${ps} ps ≈ ${expected}`);
    assert((await text(page, '[data-role="trace-timing"]')).includes('Interval'), 'the interval is shown');
    assertEqual(urlParam(page, 'tool_mode'), 'timing', 'the tool is in the URL');
    assert(urlParam(page, 'timing'), 'the mark is in the URL');
    assertEqual(await shown(page), span, 'timing does not move the window');
    await shot();
  });

  await h.test('trace viewer: a deep link restores the window and the selection', async ({ page, shot }) => {
    const len = full.end - full.start;
    const span = { start: full.start + Math.round(len * 0.4), end: full.start + Math.round(len * 0.45) };
    const win = await traceApi('window', { run: traceRun, start_ps: span.start, end_ps: span.end, width: 500 });
    const ev = win.tracks.flatMap((t) => t.events ?? []).find((e) => e.dur_ps > 0);
    assert(ev, 'an event in the window');
    await open(page, base, { run: traceRun, tool: 'trace_viewer', start_ps: String(span.start), end_ps: String(span.end), sel: String(ev.id) });
    await waitDetails(page, ev.id);
    assertEqual(await shown(page), span, 'shown window');
    assertEqual(urlSpan(page), span, 'URL keeps the window');
    await checkCounts(page, span);
    await page.reload();
    await waitReady(page);
    await waitDetails(page, ev.id);
    assertEqual(await shown(page), span, 'window after reload');
    assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="start"]', 'data-ps'), String(ev.ts_ps), 'selected event after reload');
    await shot();
  });

  await h.test('trace viewer: collapsing a section hides its tracks', async ({ page, shot }) => {
    await open(page, base, { run: traceRun, tool: 'trace_viewer' });
    const section = tracks.sections[0];
    const before = await page.locator('[data-track]').count();
    await page.click(`[data-section="${section.pid}"]`);
    await waitReady(page);
    assertEqual(await page.getAttribute(`[data-section="${section.pid}"]`, 'data-collapsed'), 'true', 'collapsed');
    assertEqual(await page.locator('[data-track]').count(), before - section.tracks.length, 'its tracks are hidden');
    assertEqual(urlParam(page, 'collapsed'), String(section.pid), 'collapsed sections are in the URL');
    await page.reload();
    await waitReady(page);
    assertEqual(await page.locator('[data-track]').count(), before - section.tracks.length, 'still collapsed after reload');
    await page.click(`[data-section="${section.pid}"]`);
    await waitReady(page);
    assertEqual(await page.locator('[data-track]').count(), before, 'expanded again');
    assertEqual(urlParam(page, 'collapsed'), null, 'URL cleared');
    await shot();
  });

  await h.test('trace viewer: flow arrows are drawn for a selected event with a flow', async ({ page, shot }) => {
    const win = await traceApi('window', { run: traceRun, exact_limit: 100000000 });
    let target = null;
    for (const e of win.tracks.flatMap((t) => t.events ?? []).filter((x) => x.flow)) {
      assertEqual(typeof e.flow[0], 'string', 'flow ids are strings');
      const f = await traceApi('flow', { run: traceRun, id: e.flow[0] });
      if (f.events.length >= 2 && new Set(f.events.map((x) => x.track)).size >= 2) {
        target = { event: e, flow: f };
        break;
      }
    }
    assert(target, 'an event whose flow links two tracks');
    const ev = target.flow.events;
    const lo = Math.min(...ev.map((x) => x.ts_ps));
    const hi = Math.max(...ev.map((x) => x.ts_ps + x.dur_ps));
    const pad = Math.max(1_000_000, (hi - lo) * 0.5);
    const span = { start: Math.max(full.start, Math.round(lo - pad)), end: Math.min(full.end, Math.round(hi + pad)) };
    await open(page, base, { run: traceRun, tool: 'trace_viewer', start_ps: String(span.start), end_ps: String(span.end), sel: String(target.event.id) });
    await waitDetails(page, target.event.id);
    await page.waitForFunction((want) => document.querySelector('[data-role="trace-canvas"]')?.dataset.flowId === want, target.event.flow[0], { timeout: 15_000 });
    await waitReady(page);
    assertEqual(await page.getAttribute('[data-role="trace-canvas"]', 'data-flow-arrows'), String(ev.length - 1), 'one arrow per consecutive pair of flow events');
    assertEqual(await page.getAttribute('[data-role="trace-details"] [data-field="flow"]', 'data-flow-id'), target.event.flow[0], 'the flow id in the details');
    // The arrow is drawn: red pixels between the two ends.
    const canvas = await canvasBox(page);
    const red = await page.locator('[data-role="trace-canvas"]').evaluate((c) => {
      const g = c.getContext('2d');
      const d = g.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] > 200 && d[i + 1] < 80 && d[i + 2] < 80) n++;
      return n;
    });
    assert(red > 10, `arrow pixels drawn (${red}) on a ${canvas.width}px canvas`);
    await shot();
  });

  // A GPU profile (JAX on MI300X): device sections with XProf's derived tracks, and the
  // links of an XLA op's kernel to the graph viewer and the op profile.
  const gpuDir = join(external, 'AMD-AGI-TraceLens/tests/traces/mi300/jax08_gemm');
  if (!existsSync(gpuDir) || !process.env.OXPROF_BIN) {
    h.skip('trace viewer: GPU sections and XLA op links', `no ${gpuDir}`);
  } else {
    await h.test('trace viewer: GPU sections and XLA op links', async ({ page, shot }) => {
      const server = await startServer(process.env.OXPROF_BIN, gpuDir);
      try {
        const gpuApi = async (route, params = {}) => {
          const url = new URL(`/oxprof/api/trace/${route}`, server.url);
          for (const [k, v] of Object.entries(params)) url.searchParams.set(k, String(v));
          return (await fetch(url)).json();
        };
        const t = await gpuApi('tracks');
        await open(page, server.url, { run: 'jax08_gemm', tool: 'trace_viewer' });
        assertEqual(await page.locator('[data-section]').evaluateAll((els) => els.map((e) => e.dataset.name)), t.sections.map((s) => s.name), 'one section per device and the host');
        const names = await page.locator('[data-track]').evaluateAll((els) => els.map((e) => e.getAttribute('title')));
        for (const want of ['XLA Modules', 'XLA Ops', 'Framework Ops', 'Framework Name Scope']) assert(names.some((n) => n.startsWith(want)), `a ${want} track`);
        // A kernel of an XLA op (hlo_op argument): links name its module as the graph viewer lists it.
        const kernels = t.sections[0].tracks.find((x) => x.name.startsWith('Stream'));
        const w = await gpuApi('window', { tracks: kernels.id });
        const kernel = w.tracks[0].events[0];
        const details = await gpuApi('event', { id: kernel.id });
        assert(details.args.hlo_op, 'a kernel with hlo_op');
        await open(page, server.url, { run: 'jax08_gemm', tool: 'trace_viewer', sel: String(kernel.id) });
        await page.waitForSelector('[data-role="trace-link"][data-link="graph_viewer"]', { timeout: 15_000 });
        const links = page.locator('[data-role="trace-links"]');
        const module = await links.getAttribute('data-module');
        assertEqual(await links.getAttribute('data-node'), details.args.hlo_op, 'node name');
        const listed = (await (await fetch(new URL('/module_list?run=jax08_gemm', server.url))).text()).split(',');
        assert(listed.includes(module), `module ${module} is one the graph viewer lists`);
        const href = new URL(await page.getAttribute('[data-link="graph_viewer"]', 'href'), server.url).searchParams;
        assertEqual([href.get('tool'), href.get('module_name'), href.get('node_name'), href.get('run')], ['graph_viewer', module, details.args.hlo_op, 'jax08_gemm'], 'graph viewer link');
        await shot();
      } finally {
        await server.stop();
      }
    });
  }
}
