// The trace viewer on par with Perfetto (issue 41), on an XSpace run (jax_train) and a
// PyTorch run (the demo's A100 DDP trace), at 1440×900 and 1024×768: Perfetto's navigation
// with real wheel and key events measuring the view (the wheel scrolls the tracks,
// ctrl+wheel zooms at the pointer, shift+wheel pans, W/A/S/D held move smoothly at the
// pointer and key repeats do not compound, PageDown / arrows scroll, the overview strip
// jumps); area selections equal to SQL over the same range (Slices, Pivot, Flows,
// Counters); the slices of the same name; track management (filter, picking several to pin
// or hide, pinned tracks named with their process, collapsed sections drawing activity,
// the panel closed until something is selected, named flags in the URL); a 74-track
// two-host trace (hosts=ALL_HOSTS, ≥ 30 tracks on screen, every track reachable by the
// wheel); "Show in timeline" from every kind of table; the SQL page's grid, history, chart
// and debug track. Every page: no horizontal scroll, no page error (the harness).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { assert, assertEqual, startServer } from '../harness.mjs';
import { clippedFromSql, clippedFromTraceApi, dragArea, sameRows, slicesTab, waitSelfClipped } from '../area.mjs';

const SIZES = [
  { width: 1440, height: 900 },
  { width: 1024, height: 768 },
];
const PYTORCH = 'pytorch_a100_ddp';
const GEMM = 'mi300x_jax_gemm/jax08_gemm';

export async function register(ctx) {
  const { h, base, runs, open, waitReady, external } = ctx;
  const jaxRun = runs.find((r) => r.includes('jax_train'));
  if (!jaxRun) return h.skip('trace viewer (Perfetto model)', 'no jax_train run');
  const bin = process.env.OXPROF_BIN;
  const demo = await startServer(bin, null);
  const gpuDir = join(external, 'openxla-xprof/demo/plugins/profile/GPU-multi-worker');
  const gpu = existsSync(gpuDir) ? await startServer(bin, gpuDir) : null;
  try {
    const traceApi = (server) => async (route, params) => {
      const url = new URL(`/oxprof/api/trace/${route}`, server);
      for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
      const r = await fetch(url);
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
      return r.json();
    };
    const sql = async (server, run, query) => {
      const url = new URL('/oxprof/api/query', server);
      url.searchParams.set('run', run);
      url.searchParams.set('sql', query);
      const r = await fetch(url);
      if (!r.ok) throw new Error(`SQL: HTTP ${r.status} ${await r.text()}`);
      return r.json();
    };
    const shown = async (page) => {
      const w = page.locator('[data-role="trace-window"]');
      return { start: Number(await w.getAttribute('data-start-ps')), end: Number(await w.getAttribute('data-end-ps')) };
    };
    const urlParam = (page, key) => new URL(page.url()).searchParams.get(key);
    const noHorizontalScroll = async (page, what) => {
      const [sw, cw] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      assert(sw <= cw, `${what}: no horizontal scroll (${sw} > ${cw})`);
    };
    const canvasBox = (page) => page.locator('[data-role="trace-canvas"]').boundingBox();
    const len = (s) => s.end - s.start;
    /** The time at x (page px) in span `s` over the canvas box. */
    const psAt = (box, s, x) => s.start + ((x - box.x) / box.width) * len(s);
    const settle = async (page) => {
      // A held key's tap keeps moving for 200 ms; then the fetch and the URL.
      await page.waitForTimeout(300);
      await waitReady(page);
    };

    const cases = [
      { name: 'XSpace', server: base, run: jaxRun },
      { name: 'PyTorch', server: demo.url, run: PYTORCH },
    ];

    // ---- navigation ----------------------------------------------------------------------------
    for (const c of cases) {
      for (const size of SIZES) {
        await h.test(`perfetto navigation (${c.name}, ${size.width}x${size.height}): wheel scrolls, ctrl+wheel zooms at the pointer, shift+wheel pans, held keys, overview`, async ({ page, shot }) => {
          await open(page, c.server, { run: c.run, tool: 'trace_viewer' });
          await noHorizontalScroll(page, 'trace viewer');
          assertEqual(await page.getAttribute('[data-chart="trace"]', 'data-panel'), 'closed', 'no empty details panel');
          const box = await canvasBox(page);
          const full = await shown(page);
          const scroll = page.locator('[data-role="trace-scroll"]');
          const [scrollH, clientH] = await scroll.evaluate((el) => [el.scrollHeight, el.clientHeight]);

          // The wheel alone: the tracks scroll, the time window stays.
          await page.mouse.move(box.x + box.width / 2, box.y + 20);
          await page.mouse.wheel(0, 120);
          await page.waitForTimeout(100);
          assertEqual(await shown(page), full, 'the wheel leaves the time window alone');
          if (scrollH > clientH) assert((await scroll.evaluate((el) => el.scrollTop)) > 0, 'the wheel scrolled the tracks');

          // Ctrl+wheel: zoom at the pointer (the time under it stays under it).
          const px = box.x + box.width * 0.25;
          const anchor = psAt(box, full, px);
          await page.mouse.move(px, box.y + 20);
          await page.keyboard.down('Control');
          await page.mouse.wheel(0, -400);
          await page.keyboard.up('Control');
          await waitReady(page);
          const z = await shown(page);
          assert(len(z) < len(full) * 0.7, `ctrl+wheel zoomed in: ${len(full)} → ${len(z)}`);
          assert(Math.abs(psAt(box, z, px) - anchor) <= len(full) / box.width, 'the time under the pointer stayed under it');

          // Shift+wheel: pan by the wheel, same length.
          await page.keyboard.down('Shift');
          await page.mouse.wheel(0, 100);
          await page.keyboard.up('Shift');
          await waitReady(page);
          const p = await shown(page);
          assert(Math.abs(len(p) - len(z)) <= 2 && p.start !== z.start, `shift+wheel panned: ${JSON.stringify(z)} → ${JSON.stringify(p)}`);

          // W held: zooms in smoothly at the pointer, several times, not 2× per key repeat.
          const px2 = box.x + box.width * 0.7;
          await page.mouse.move(px2, box.y + 20);
          const anchor2 = psAt(box, p, px2);
          await page.focus('[data-chart="trace"]');
          await page.keyboard.down('w');
          await page.waitForTimeout(400);
          await page.keyboard.up('w');
          await settle(page);
          const w = await shown(page);
          const f = len(p) / len(w);
          assert(f > 1.3 && f < 60, `W held 0.4 s zoomed ${f.toFixed(2)}×`);
          assert(Math.abs(psAt(box, w, px2) - anchor2) <= (2 * len(p)) / box.width, 'W zooms at the pointer');
          // Twelve key repeats in a row: one held key, not 2^12.
          for (let i = 0; i < 12; i++) await page.keyboard.down('s');
          await page.keyboard.up('s');
          await settle(page);
          const s = await shown(page);
          const g = len(s) / len(w);
          assert(g > 1.05 && g < 4, `12 repeats of S zoomed out ${g.toFixed(2)}× (not 4096×)`);
          // D held pans right, the length kept.
          await page.keyboard.down('d');
          await page.waitForTimeout(250);
          await page.keyboard.up('d');
          await settle(page);
          const d = await shown(page);
          assert(d.start > s.start || d.end === full.end, 'D panned right');

          // PageDown / ArrowUp scroll the tracks.
          const [sh, ch] = await scroll.evaluate((el) => [el.scrollHeight, el.clientHeight]);
          if (sh > ch) {
            await scroll.evaluate((el) => (el.scrollTop = 0));
            await page.keyboard.press('PageDown');
            const afterPage = await scroll.evaluate((el) => el.scrollTop);
            assert(afterPage > ch * 0.5 || afterPage >= sh - ch - 1, `PageDown scrolled a page (${afterPage} of ${ch}, at most ${sh - ch})`);
            await page.keyboard.press('ArrowUp');
            assert((await scroll.evaluate((el) => el.scrollTop)) < afterPage, 'ArrowUp scrolled up');
          }

          // The overview: drag the window's box right, then brush a new window, then click.
          const ov = await page.locator('[data-role="trace-overview"]').boundingBox();
          const before = await shown(page);
          const bx0 = ov.x + ((before.start - full.start) / len(full)) * ov.width;
          const bx1 = ov.x + ((before.end - full.start) / len(full)) * ov.width;
          const grab = (bx0 + bx1) / 2;
          const room = Math.min(ov.width * 0.2, ov.x + ov.width - bx1 - 2);
          if (room > 10) {
            await page.mouse.move(grab, ov.y + ov.height / 2);
            await page.mouse.down();
            await page.mouse.move(grab + room, ov.y + ov.height / 2, { steps: 5 });
            await page.mouse.up();
            await waitReady(page);
            const moved = await shown(page);
            assert(moved.start > before.start && Math.abs(len(moved) - len(before)) <= 2, `dragging the box moved the view: ${JSON.stringify(before)} → ${JSON.stringify(moved)}`);
          }
          // The whole trace (key 0), then a new view brushed over it.
          await page.focus('[data-chart="trace"]');
          await page.keyboard.press('0');
          await waitReady(page);
          const a = ov.x + ov.width * 0.1;
          const b = ov.x + ov.width * 0.3;
          await page.mouse.move(a, ov.y + ov.height / 2);
          await page.mouse.down();
          await page.mouse.move(b, ov.y + ov.height / 2, { steps: 6 });
          await page.mouse.up();
          await waitReady(page);
          const brushed = await shown(page);
          const want = { start: full.start + 0.1 * len(full), end: full.start + 0.3 * len(full) };
          assert(Math.abs(brushed.start - want.start) <= (2 * len(full)) / ov.width && Math.abs(brushed.end - want.end) <= (2 * len(full)) / ov.width, `the brush chose the view: ${JSON.stringify(brushed)} ≈ ${JSON.stringify(want)}`);
          await page.mouse.click(ov.x + ov.width * 0.6, ov.y + ov.height / 2);
          await waitReady(page);
          const centred = await shown(page);
          const mid = (centred.start + centred.end) / 2;
          assert(Math.abs(mid - (full.start + 0.6 * len(full))) <= (2 * len(full)) / ov.width || centred.end === full.end, 'a click centred the view there');
          await noHorizontalScroll(page, 'after navigating');
          if (size.width === 1440) await shot();
        }, { viewport: size });
      }
    }

    // ---- area selection = SQL --------------------------------------------------------------------
    {
      const api = traceApi(base);
      const tracks = await api('tracks', { run: jaxRun });
      const host = tracks.host;
      const cpu = tracks.sections.find((s) => s.name.endsWith('/host:CPU'));
      const python = cpu.tracks.find((t) => t.name === 'python');
      const plane = cpu.name.startsWith(`${host} `) ? cpu.name.slice(host.length + 1) : cpu.name;
      for (const size of SIZES) {
        await h.test(`perfetto area selection (XSpace, ${size.width}x${size.height}): Slices and Pivot equal SQL over the same range; Flows and Counters tabs`, async ({ page, shot }) => {
          // A middle part of the run, where the python thread nests deeply.
          const span = { start: tracks.start_ps + Math.round((tracks.end_ps - tracks.start_ps) * 0.45), end: tracks.start_ps + Math.round((tracks.end_ps - tracks.start_ps) * 0.75) };
          await open(page, base, { run: jaxRun, tool: 'trace_viewer', start_ps: String(span.start), end_ps: String(span.end), pinned: String(python.id) });
          const canvas = await page.locator('[data-role="trace-pinned-canvas"]').boundingBox();
          const row = await page.locator(`[data-role="trace-pinned-labels"] [data-track="${python.id}"]`).boundingBox();
          await dragArea(page, canvas.x + canvas.width * 0.2, row.y + 3, canvas.x + canvas.width * 0.8, row.y + Math.min(row.height, 60) - 3);
          await waitReady(page);
          assertEqual(urlParam(page, 'range_tracks'), String(python.id), 'the python thread selected');
          const [start, end] = urlParam(page, 'range').split('_').map(Number);
          const want = await clippedFromSql(base, jaxRun, host, [[plane, 'python']], start, end);
          assert(want.size > 5, 'slices in the area');
          await waitSelfClipped(page);
          const tab = await slicesTab(page);
          // The trace adds slices SQL's table does not hold (XProf's "train N" step names,
          // thread-pool regions): the slices both hold equal SQL's numbers.
          sameRows(tab.rows, want, ['count', 'wall', 'self'], 'Slices tab = SQL (count, wall and self clipped to the range)', { exactOnly: true });
          await noHorizontalScroll(page, 'area selection');
          if (size.width === 1440) await shot('-slices');

          // Pivot: by name (= Slices), then by name and process, then by an argument.
          await page.click('[data-area-tab="pivot"]');
          await page.waitForSelector('[data-area-body="pivot"][data-ready="true"] [data-role="pivot-table"]', { timeout: 30_000 });
          const pivotRows = async () =>
            page.locator('[data-area-body="pivot"] [data-role="pivot-table"] tbody tr').evaluateAll((trs) => trs.map((tr) => ({ keys: tr.dataset.keys, count: Number(tr.querySelector('[data-field="count"]').textContent.replace(/,/g, '')), wall: Number(tr.querySelector('[data-field="wall"]').dataset.ps) })));
          const byName = await pivotRows();
          sameRows(new Map(byName.map((r) => [r.keys, r])), new Map([...tab.rows].map(([k, v]) => [k, v])), ['count', 'wall'], 'pivot by name = the Slices tab');
          await page.selectOption('[data-role="pivot-add"]', 'process');
          await page.waitForFunction(() => document.querySelector('[data-area-body="pivot"] [data-role="pivot-table"] tbody tr')?.dataset.keys.includes(' › '), null, { timeout: 30_000 });
          await page.waitForSelector('[data-area-body="pivot"][data-ready="true"]');
          const byNameProcess = await pivotRows();
          assertEqual(byNameProcess.length, byName.length, 'one process: as many groups');
          assert(byNameProcess.every((r) => r.keys.endsWith(` › ${cpu.label ?? cpu.name}`) || r.keys.includes('/host:CPU')), `grouped by process: ${byNameProcess[0]?.keys}`);
          assert(urlParam(page, 'pivot') === 'name,process' && urlParam(page, 'area_tab') === 'pivot', 'the pivot is in the URL');
          await page.selectOption('[data-role="pivot-add"]', 'arg:');
          await page.fill('[data-role="pivot-arg"]', 'group_id');
          await page.press('[data-role="pivot-arg"]', 'Enter');
          await page.waitForFunction(() => (document.querySelector('[data-area-body="pivot"] [data-role="pivot-table"] tbody tr')?.dataset.keys.split(' › ').length ?? 0) === 3, null, { timeout: 30_000 });
          await page.waitForSelector('[data-area-body="pivot"][data-ready="true"]');
          const byArg = await pivotRows();
          assertEqual(byArg.reduce((t, r) => t + r.count, 0), tab.summary.count, 'grouping by an argument counts every slice once');
          if (size.width === 1440) await shot('-pivot');
          // Flows and counters.
          await page.click('[data-area-tab="flows"]');
          await page.waitForSelector('[data-area-body="flows"][data-ready="true"] [data-role="flows-summary"]', { timeout: 30_000 });
          await page.click('[data-area-tab="counters"]');
          await page.waitForSelector('[data-area-body="counters"][data-ready="true"]', { timeout: 30_000 });
          assert((await page.locator('[data-area-body="counters"] [data-role="counters-none"], [data-area-body="counters"] [data-role="counters-table"]').count()) === 1, 'the counters tab says what it has');
          // A reload restores the area and its tab.
          await page.reload();
          await waitReady(page);
          await page.waitForSelector('[data-area-body="counters"][data-ready="true"]', { timeout: 30_000 });
        }, { viewport: size });
      }

      // The pivot by name, track or process comes from the trace routes: it is shown before SQL
      // answers anything (SQL's first query on a large trace builds its tables: seconds on the
      // 50 M-event one), SQL only refining its self times afterwards.
      await h.test('perfetto area selection: the pivot by name and process is shown from the trace routes while SQL is held back', async ({ page }) => {
        const span = { start: tracks.start_ps + Math.round((tracks.end_ps - tracks.start_ps) * 0.45), end: tracks.start_ps + Math.round((tracks.end_ps - tracks.start_ps) * 0.75) };
        // Held, never answered (the page stays "loading": no waitReady).
        await page.route('**/oxprof/api/query?*', () => undefined);
        const url = new URL('/', base);
        for (const [k, v] of Object.entries({ run: jaxRun, tool: 'trace_viewer', range: `${span.start}_${span.end}`, range_tracks: String(python.id), area_tab: 'pivot', pivot: 'name,process' })) url.searchParams.set(k, v);
        await page.goto(url.toString());
        await page.waitForSelector('[data-area-body="pivot"][data-shown="true"] [data-role="pivot-table"]', { timeout: 30_000 });
        const rows = await page.locator('[data-area-body="pivot"] [data-role="pivot-table"] tbody tr').evaluateAll((trs) => trs.map((tr) => ({ keys: tr.dataset.keys, count: Number(tr.querySelector('[data-field="count"]').textContent.replace(/,/g, '')), wall: Number(tr.querySelector('[data-field="wall"]').dataset.ps) })));
        const want = (await clippedFromTraceApi(api, { run: jaxRun }, span.start, span.end, [python.id])).byName;
        sameRows(new Map(rows.map((r) => [r.keys.split(' › ')[0], r])), want, ['count', 'wall'], 'pivot by name and process = the trace routes (clipped wall)');
        assert(rows.every((r) => r.keys.split(' › ').length === 2), 'grouped by name and process');
      });

      await h.test('perfetto: a slice shows the slices of the same name (count, total, min/median/max, histogram) and steps to the next one', async ({ page, shot }) => {
        await open(page, base, { run: jaxRun, tool: 'trace_viewer' });
        // The longest "$core.py:660 bind"-like name that occurs several times on the python thread.
        const w = await api('window', { run: jaxRun, tracks: python.id, exact_limit: 50000 });
        const counts = new Map();
        for (const e of w.tracks[0].events) counts.set(e.name, (counts.get(e.name) ?? 0) + 1);
        const [nameIndex] = [...counts.entries()].filter(([, n]) => n >= 3 && n < 200).sort((a, b) => b[1] - a[1])[0];
        const name = w.names[nameIndex];
        const occ = w.tracks[0].events.filter((e) => e.name === nameIndex).sort((a, b) => a.ts_ps - b.ts_ps);
        const first = occ[0];
        await open(page, base, { run: jaxRun, tool: 'trace_viewer', sel: String(first.id), start_ps: String(first.ts_ps - first.dur_ps), end_ps: String(first.ts_ps + 2 * first.dur_ps) });
        await page.waitForSelector('[data-role="same-name-stats"]', { timeout: 30_000 });
        const found = await api('search', { run: jaxRun, prefix: name, limit: 10000 });
        const exact = found.matches.filter((m) => m.name === name);
        const stats = page.locator('[data-role="same-name-stats"]');
        assertEqual(Number(await stats.getAttribute('data-count')), exact.length, `slices named ${name}`);
        assertEqual(Number(await stats.getAttribute('data-total-ps')), exact.reduce((t, m) => t + m.dur_ps, 0), 'their total');
        assert((await page.locator('[data-role="same-name-histogram"] .trace-histo-bar').count()) >= 1, 'a histogram');
        await page.click('[data-role="same-next"]');
        const second = exact.sort((a, b) => a.ts_ps - b.ts_ps || a.id - b.id)[1];
        await page.waitForFunction((id) => document.querySelector('[data-role="trace-details"]')?.dataset.eventId === id, String(second.id), { timeout: 20_000 });
        await waitReady(page);
        assertEqual(urlParam(page, 'sel'), String(second.id), 'Next selected the next slice of that name');
        await shot();
      });

      await h.test('perfetto tracks: filter by name, pick several to pin (named with their process, not counted as hidden) or hide, collapsed sections draw activity, flags in the URL, the panel closes', async ({ page, shot }) => {
        await open(page, base, { run: jaxRun, tool: 'trace_viewer' });
        // Filter.
        await page.fill('[data-role="track-filter"]', 'EIGEN');
        await page.waitForFunction(() => [...document.querySelectorAll('[data-role="trace-labels"] [data-track]')].every((e) => /eigen/i.test(e.textContent)), null, { timeout: 10_000 });
        await waitReady(page);
        assertEqual(urlParam(page, 'track_q'), 'EIGEN', 'the filter is in the URL');
        const eigen = cpu.tracks.filter((t) => /eigen/i.test(t.name)).map((t) => t.id);
        assertEqual(await page.locator('[data-role="trace-labels"] [data-track]').evaluateAll((els) => els.map((e) => Number(e.dataset.track))), eigen, 'only the matching tracks');
        await page.fill('[data-role="track-filter"]', '');
        await page.waitForFunction((n) => document.querySelectorAll('[data-role="trace-labels"] [data-track]').length === n, cpu.tracks.length, { timeout: 10_000 });
        // Pick two (click, ctrl+click) and pin them together.
        const [a, b] = [cpu.tracks[0].id, cpu.tracks[2].id];
        await page.click(`[data-role="trace-labels"] [data-track="${a}"] .trace-track-name`);
        await page.click(`[data-role="trace-labels"] [data-track="${b}"] .trace-track-name`, { modifiers: ['Control'] });
        assertEqual(await page.getAttribute('[data-role="track-picks"]', 'data-count'), '2', 'two tracks picked');
        await page.click('[data-role="picks-pin"]');
        await waitReady(page);
        assertEqual(urlParam(page, 'pinned'), `${a},${b}`, 'both pinned, in order');
        const pinnedLabels = await page.locator('[data-role="trace-pinned-labels"] [data-track]').evaluateAll((els) => els.map((e) => e.querySelector('[data-role="track-process"]')?.textContent ?? ''));
        assert(pinnedLabels.length === 2 && pinnedLabels.every((t) => t.includes('/host:CPU') || t.includes(cpu.label ?? '\u0000')), `pinned tracks keep their process name: ${pinnedLabels}`);
        assertEqual(await page.locator(`[data-section="${cpu.pid}"] [data-role="pinned-count"]`).innerText(), '2 pinned', 'counted as pinned');
        assertEqual(await page.locator(`[data-section="${cpu.pid}"] [data-role="unhide"]`).count(), 0, 'not counted as hidden');
        // Pick two and hide them.
        const [c, d] = [cpu.tracks[3].id, cpu.tracks[4].id];
        await page.click(`[data-role="trace-labels"] [data-track="${c}"] .trace-track-name`);
        await page.click(`[data-role="trace-labels"] [data-track="${d}"] .trace-track-name`, { modifiers: ['Shift'] });
        await page.click('[data-role="picks-hide"]');
        await waitReady(page);
        assertEqual(await page.locator(`[data-section="${cpu.pid}"] [data-role="unhide"]`).innerText(), '2 hidden', 'two hidden');
        // A collapsed section draws its threads' activity in its header.
        await page.click(`[data-section="${cpu.pid}"] .trace-section-toggle`);
        await page.waitForSelector(`[data-section="${cpu.pid}"][data-density="true"]`, { timeout: 20_000 });
        // Flags: two clicks on the ruler, one renamed; both in the URL, both after a reload.
        const ruler = await page.locator('[data-role="trace-ruler"]').boundingBox();
        await page.mouse.click(ruler.x + ruler.width * 0.3, ruler.y + ruler.height / 2);
        await page.mouse.click(ruler.x + ruler.width * 0.6, ruler.y + ruler.height / 2);
        assertEqual(await page.getAttribute('[data-chart="trace"]', 'data-panel'), 'open', 'the Flags tab opened');
        const names = page.locator('[data-role="flag-name"]');
        assertEqual(await names.count(), 2, 'two flags listed');
        await names.first().fill('before the steps');
        await names.first().press('Enter');
        await waitReady(page);
        const flags = urlParam(page, 'flags');
        assert(flags && flags.split(',').length === 2 && flags.includes('before%20the%20steps'), `flags in the URL: ${flags}`);
        await page.reload();
        await waitReady(page);
        await page.click('[data-role="panel-toggle"]');
        await page.click('[data-tab="flags"]');
        assertEqual(await page.locator('[data-role="flag-name"]').evaluateAll((els) => els.map((e) => e.value)), ['before the steps', 'Flag 2'], 'flags restored');
        // The panel's × closes it; the tracks get the room.
        const h0 = await page.locator('[data-role="trace-scroll"]').evaluate((el) => el.clientHeight);
        await page.click('[data-role="panel-close"]');
        assertEqual(await page.getAttribute('[data-chart="trace"]', 'data-panel'), 'closed', 'closed');
        assert((await page.locator('[data-role="trace-scroll"]').evaluate((el) => el.clientHeight)) > h0, 'the tracks got the room');
        await shot();
      });
    }

    // ---- 74 tracks of two hosts ------------------------------------------------------------------
    if (gpu) {
      await h.test('perfetto two hosts: hosts=ALL_HOSTS shows both hosts\' 74 tracks, ≥ 30 on a 1440×900 screen, every one reachable with the wheel', async ({ page, shot }) => {
        const api = traceApi(gpu.url);
        const both = await api('tracks', { run: 'GPU-multi-worker', hosts: 'ALL_HOSTS' });
        const all = both.sections.flatMap((s) => s.tracks.map((t) => t.id));
        assertEqual(all.length, 74, 'the run has 74 tracks on two hosts');
        // The page's host ALL_HOSTS (a link from an ALL_HOSTS page) means the same as hosts=ALL_HOSTS.
        await open(page, gpu.url, { run: 'GPU-multi-worker', tool: 'trace_viewer', host: 'ALL_HOSTS' });
        assertEqual(await page.locator('[data-role="trace-labels"] [data-host]').count(), 2, 'host=ALL_HOSTS: both hosts');
        await open(page, gpu.url, { run: 'GPU-multi-worker', tool: 'trace_viewer', hosts: 'ALL_HOSTS' });
        assertEqual(await page.locator('[data-role="trace-labels"] [data-host]').count(), 2, 'both hosts');
        assertEqual(await page.locator('[data-role="trace-labels"] [data-track]').count(), 74, 'every track');
        assertEqual(await page.getAttribute('[data-chart="trace"]', 'data-panel'), 'closed', 'the panel is closed');
        const visible = () =>
          page.evaluate(() => {
            const r = document.querySelector('[data-role="trace-scroll"]').getBoundingClientRect();
            return [...document.querySelectorAll('[data-role="trace-labels"] [data-track]')].filter((l) => {
              const b = l.getBoundingClientRect();
              return b.top >= r.top - 1 && b.bottom <= r.bottom + 1;
            }).map((l) => Number(l.dataset.track));
          });
        const first = await visible();
        assert(first.length >= 30, `≥ 30 tracks on screen: ${first.length}`);
        await shot();
        const seen = new Set(first);
        const box = await canvasBox(page);
        await page.mouse.move(box.x + box.width / 2, box.y + 100);
        for (let i = 0; i < 40 && seen.size < all.length; i++) {
          await page.mouse.wheel(0, 240);
          await page.waitForTimeout(50);
          for (const id of await visible()) seen.add(id);
        }
        assertEqual(all.filter((id) => !seen.has(id)), [], 'every track came on screen with the wheel');
      }, { viewport: { width: 1440, height: 900 } });
    } else h.skip('perfetto two hosts', `no two-host profile at ${gpuDir}`);

    // ---- show in timeline ------------------------------------------------------------------------
    /** Follows the first "Show in timeline" link of `scope` and checks the trace viewer opens on a slice named as `nameOf(link)` says. */
    const followTimeline = async (page, scope, expectName) => {
      const link = page.locator(`${scope} [data-role="show-in-timeline"]`).first();
      await link.waitFor({ timeout: 30_000 });
      const href = await link.getAttribute('href');
      await link.click();
      await page.waitForFunction(() => document.querySelector('[data-chart="trace"]')?.dataset.reveal, null, { timeout: 60_000 });
      await waitReady(page);
      const reveal = await page.getAttribute('[data-chart="trace"]', 'data-reveal');
      assert(/^\d+$/.test(reveal), `the link found its slice (${href}): ${reveal}`);
      assertEqual(await page.locator('[data-role="trace-details"]').getAttribute('data-event-id'), reveal, 'and selected it');
      const title = await page.locator('[data-role="event-title"]').innerText();
      if (expectName) assertEqual(title, expectName, 'the slice the row names');
      const sp = await shown(page);
      const ev = await page.evaluate(async (id) => (await fetch(`/oxprof/api/trace/event?${new URLSearchParams({ ...Object.fromEntries(new URL(location.href).searchParams), id })}`)).json(), reveal);
      assert(ev.ts_ps >= sp.start && ev.ts_ps + ev.dur_ps <= sp.end, 'zoomed to it');
      assert(Number(await page.getAttribute('[data-role="search-status"]', 'data-total')) >= 1, 'every slice of its name highlighted');
      await noHorizontalScroll(page, 'trace viewer');
      return title;
    };
    const rowValue = async (page, table, col) => page.locator(`[data-table="${table}"] tbody tr:not(.spacer-row)`).first().locator(`[data-col="${col}"]`).getAttribute('data-value');

    if (gpu) {
      await h.test('perfetto show in timeline: a kernel stats row opens its kernel on the GPU stream', async ({ page }) => {
        const hosts = (await (await fetch(new URL('/data/plugin/profile/hosts?run=GPU-multi-worker&tag=kernel_stats', gpu.url))).json()).map((x) => x.hostname).filter((x) => x !== 'ALL_HOSTS');
        await open(page, gpu.url, { run: 'GPU-multi-worker', tool: 'kernel_stats', host: hosts[0] });
        const name = await rowValue(page, 'kernels', 'kernel_name');
        await followTimeline(page, '[data-table="kernels"]', name);
      });
    }
    await h.test('perfetto show in timeline: PyTorch operators, kernels, steps and an HTA launch delay (by correlation id) open their slices', async ({ page, shot }) => {
      await open(page, demo.url, { run: PYTORCH, tool: 'pytorch_op_stats' });
      const op = await rowValue(page, 'by_name', 'name');
      await followTimeline(page, '[data-table="by_name"]', op);
      await open(page, demo.url, { run: PYTORCH, tool: 'pytorch_kernel_stats' });
      const kernel = await rowValue(page, 'by_name', 'name');
      await followTimeline(page, '[data-table="by_name"]', kernel);
      await open(page, demo.url, { run: PYTORCH, tool: 'pytorch_overview' });
      const step = await rowValue(page, 'steps', 'step');
      await followTimeline(page, '[data-table="steps"]', `ProfilerStep#${step}`);
      await open(page, demo.url, { run: PYTORCH, tool: 'hta_gpu_idle' });
      const corrCell = page.locator('[data-table="hta-worst"] tbody tr:not(.spacer-row)').first().locator('[data-col="correlation"]');
      const corr = await corrCell.getAttribute('data-value');
      assertEqual(await corrCell.innerText(), corr, 'correlation ids without thousands separators');
      const title = await followTimeline(page, '[data-table="hta-worst"]', null);
      const ev = await page.evaluate(async (id) => (await fetch(`/oxprof/api/trace/event?${new URLSearchParams({ run: new URL(location.href).searchParams.get('run'), host: new URL(location.href).searchParams.get('host') ?? '', id })}`)).json(), await page.getAttribute('[data-chart="trace"]', 'data-reveal'));
      assertEqual(String(ev.args.correlation ?? ev.args.correlation_id), corr, `the slice of that correlation id (${title})`);
      await shot();
    });
    await h.test('perfetto show in timeline: op profile and HLO stats rows open their XLA op; the trace links back to the op in op profile', async ({ page }) => {
      await open(page, demo.url, { run: GEMM, tool: 'hlo_stats' });
      const op = await rowValue(page, 'hlo', 'hlo_op_name');
      await followTimeline(page, '[data-table="hlo"]', op);
      // The event's "Open in op profile" keeps the op.
      const link = page.locator('[data-role="trace-link"][data-link="op_profile"]');
      await link.waitFor({ timeout: 20_000 });
      await link.click();
      await waitReady(page);
      assert((await page.locator('[data-role="op-details"] [data-role="detail-name"]').innerText()).startsWith(op), 'op profile opened on the op');
      await followTimeline(page, '[data-role="op-details"]', op);
    });
    await h.test('perfetto show in timeline: an SQL row with a slice id opens that slice', async ({ page }) => {
      const q = 'SELECT id, name, ts_ps, dur_ps, host FROM slice ORDER BY dur_ps DESC, id LIMIT 5';
      await open(page, base, { run: jaxRun, tool: 'query', sql: q });
      await page.locator('[data-role="sql-status"]', { hasText: 'rows' }).waitFor();
      const ts = await rowValue(page, 'sql', 'ts_ps');
      const dur = await rowValue(page, 'sql', 'dur_ps');
      // (SQL names the step "train", the trace "train 0": the slice is found by its time.)
      await followTimeline(page, '[data-table="sql"]', null);
      assertEqual(await page.locator('[data-role="trace-details"] [data-field="start"]').getAttribute('data-ps'), ts, 'the very slice of the row: its start');
      assertEqual(await page.locator('[data-role="trace-details"] [data-field="duration"]').getAttribute('data-ps'), dur, 'and its duration');
    });

    // ---- pages that fit the run, one line of header and toolbar, key columns in view -------------
    await h.test('perfetto pages: a PyTorch run opens on its PyTorch overview; XProf\'s TensorFlow/JAX pages say why they are empty; header and trace toolbar on one line at 1440 px; a wide table keeps its key column in view', async ({ page, shot }) => {
      await open(page, demo.url, { run: PYTORCH });
      assertEqual(await page.locator('[data-role="tool"]').inputValue(), 'pytorch_overview', 'the PyTorch overview first');
      assertEqual(await page.locator('[data-role="tool"] optgroup').count(), 2, 'its tools, then XProf\'s');
      await open(page, demo.url, { run: PYTORCH, tool: 'op_profile' });
      assert((await page.locator('[data-role="pytorch-tool-note"]').innerText()).includes('PyTorch overview'), 'op profile says why it is empty');
      const oneLine = async (selector, what) => {
        const hgt = await page.locator(selector).evaluate((el) => el.getBoundingClientRect().height);
        const line = await page.locator(`${selector} button, ${selector} select`).first().evaluate((el) => el.getBoundingClientRect().height);
        assert(hgt < line * 2, `${what} on one line (${hgt} px for ${line} px controls)`);
      };
      for (const tool of ['pytorch_kernel_stats', 'hta_gpu_idle', 'trace_viewer']) {
        await open(page, demo.url, { run: PYTORCH, tool });
        await oneLine('.app-header', `header (${tool})`);
        await noHorizontalScroll(page, tool);
      }
      await oneLine('[data-role="trace-toolbar"]', 'trace toolbar');
      // The XProf kernel stats of this run: more columns than fit; scrolled to the right,
      // the kernel names (and their Timeline links) stay in view.
      await open(page, demo.url, { run: PYTORCH, tool: 'kernel_stats' });
      const card = page.locator('[data-table="kernels"]');
      const scroller = card.locator('.table-scroll');
      const wider = await scroller.evaluate((el) => el.scrollWidth > el.clientWidth);
      if (wider) await scroller.evaluate((el) => (el.scrollLeft = el.scrollWidth));
      const box = await scroller.boundingBox();
      const key = await card.locator('tbody tr:not(.spacer-row) td[data-col="kernel_name"]').first().boundingBox();
      assert(key.x >= box.x - 1 && key.x + 40 <= box.x + box.width, `the kernel name stays in view (${key.x} in ${box.x}..${box.x + box.width}, scrolled: ${wider})`);
      assert(await card.locator('tbody [data-role="show-in-timeline"]').first().isVisible(), 'its Timeline link too');
      await shot();
    }, { viewport: { width: 1440, height: 900 } });

    // ---- the SQL page ----------------------------------------------------------------------------
    for (const size of SIZES) {
      await h.test(`perfetto SQL page (${size.width}x${size.height}): the grid sorts and picks columns, the history reruns, the chart keeps ORDER BY, a result becomes a timeline track`, async ({ page, shot }) => {
        const q1 = 'SELECT name, count(*) AS n, sum(dur_ps) AS total_ps FROM slice GROUP BY name ORDER BY n ASC, name LIMIT 12';
        await open(page, base, { run: jaxRun, tool: 'query', sql: q1 });
        await page.locator('[data-role="sql-status"]', { hasText: 'rows' }).waitFor();
        const answer = await sql(base, jaxRun, q1);
        // The chart follows the query's order.
        await page.waitForFunction(() => document.querySelector('[data-role="sql-chart"] [data-chart]')?.dataset.ready === 'true');
        assertEqual(JSON.parse(await page.getAttribute('[data-role="sql-chart"]', 'data-labels')), answer.rows.map((r) => r[0]), 'chart bars in ORDER BY order');
        // Sort by a column (numbers: descending first), then the other way.
        const col = (id) => page.locator(`[data-table="sql"] tbody td[data-col="${id}"]`).evaluateAll((tds) => tds.map((td) => Number(td.dataset.value)));
        await page.click('[data-table="sql"] th[data-col="total_ps"]');
        const desc = await col('total_ps');
        assertEqual(desc, [...answer.rows.map((r) => r[2])].sort((a, b) => b - a), 'sorted by total_ps, descending');
        await page.click('[data-table="sql"] th[data-col="total_ps"]');
        assertEqual(await col('total_ps'), [...desc].reverse(), 'then ascending');
        assert(urlParam(page, 'sql.sort') === 'total_ps.asc', 'the sort is in the URL');
        // The column picker hides a column.
        await page.click('[data-table="sql"] [data-role="columns"] summary');
        await page.uncheck('[data-table="sql"] [data-column="n"]');
        assertEqual(await page.locator('[data-table="sql"] thead th[data-col]').evaluateAll((ths) => ths.map((t) => t.dataset.col)), ['name', 'total_ps'], 'n hidden');
        assertEqual(urlParam(page, 'sql.hide'), 'n', 'hidden columns in the URL');
        await noHorizontalScroll(page, 'SQL page');
        // History: a second query, then the first from the history.
        const q2 = 'SELECT name, ts_ps, dur_ps FROM slice ORDER BY dur_ps DESC LIMIT 20';
        await page.fill('[data-role="sql-editor"]', q2);
        await page.click('[data-role="sql-run"]');
        await page.locator('[data-role="sql-status"]', { hasText: '20 rows' }).waitFor();
        await page.click('.sql-history-box summary');
        const entries = page.locator('[data-role="sql-history-entry"]');
        assert((await entries.count()) >= 2, 'both queries in the history');
        await entries.nth(1).click();
        await page.locator('[data-role="sql-status"]', { hasText: '12 rows' }).waitFor();
        assertEqual(urlParam(page, 'sql'), q1, 'the first query again');
        if (size.width === 1440) await shot('-grid');
        // The timed result as a debug track at the top of the trace viewer.
        await entries.filter({ hasText: 'ORDER BY dur_ps DESC LIMIT 20' }).click();
        await page.locator('[data-role="sql-status"]', { hasText: '20 rows' }).waitFor();
        await page.click('[data-role="sql-debug-track"]');
        await waitReady(page);
        await page.waitForFunction(() => document.querySelector('[data-chart="trace"]')?.dataset.debugRows === '20', null, { timeout: 30_000 });
        assertEqual(await page.locator('[data-role="trace-pinned-labels"] [data-debug="true"]').count(), 1, 'a debug track pinned at the top');
        await noHorizontalScroll(page, 'trace viewer with a debug track');
        if (size.width === 1440) await shot('-debug-track');
      }, { viewport: size });
    }
  } finally {
    await demo.stop();
    await gpu?.stop();
  }
}
