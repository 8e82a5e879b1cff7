// Helpers of the browser tests for area selections: what the page's Slices tab shows, and
// the same numbers computed independently — from the trace routes (the whole-slice
// aggregate minus the time the edge slices spend outside the range) and from SQL (clipped
// wall and self times over the `slice` table).

/** Drags an area over the canvas from (x0, y0) to (x1, y1) (page coordinates) with the select tool. */
export async function dragArea(page, x0, y0, x1, y1) {
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  await page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, { steps: 5 });
  await page.mouse.move(x1, y1, { steps: 5 });
  await page.mouse.up();
  await page.waitForSelector('[data-role="trace-area"] [data-area-body="slices"][data-ready="true"]', { timeout: 30_000 });
}

/** The Slices tab's rows: name → { count, wall, self } (picoseconds), and its summary. */
export async function slicesTab(page) {
  const rows = await page.locator('[data-area-body="slices"] [data-role="trace-aggregate"] tbody tr').evaluateAll((trs) =>
    trs.map((tr) => {
      const f = (k) => tr.querySelector(`[data-field="${k}"]`);
      return { name: tr.dataset.aggName, count: Number(f('count').textContent.replace(/,/g, '')), wall: Number(f('wall').dataset.ps), self: f('self').dataset.ps === '' ? null : Number(f('self').dataset.ps), exact: tr.dataset.exact === 'true' };
    }),
  );
  const s = page.locator('[data-area-body="slices"] [data-role="slices-summary"]');
  const summary = { count: Number(await s.getAttribute('data-count')), wall: Number(await s.getAttribute('data-wall-ps')), selfClipped: await s.getAttribute('data-self-clipped') };
  return { rows: new Map(rows.map((r) => [r.name, r])), summary };
}

/** Waits until the Slices tab's self times are clipped (refined by SQL): for every row (`all`) or those SQL holds alike (`some`). */
export async function waitSelfClipped(page, which = ['all', 'some']) {
  await page.waitForFunction((w) => w.includes(document.querySelector('[data-area-body="slices"] [data-role="slices-summary"]')?.dataset.selfClipped), which, { timeout: 30_000 });
}

/**
 * Name → { count, wall } of the slices of `tracks` overlapping [start, end], wall clipped,
 * from the trace routes: the aggregate's whole durations minus the edge slices' outside time.
 */
export async function clippedFromTraceApi(traceApi, params, start, end, tracks) {
  const agg = await traceApi('aggregate', { ...params, start_ps: start, end_ps: end, tracks: tracks.join(',') });
  const out = new Map(agg.rows.map((r) => [r.name, { count: r.count, wall: r.total_ps }]));
  const seen = new Set();
  for (const at of [start, Math.max(start, end - 1)]) {
    const w = await traceApi('window', { ...params, start_ps: at, end_ps: at + 1, width: 1, tracks: tracks.join(','), exact_limit: 50000 });
    for (const t of w.tracks) {
      for (const e of t.events ?? []) {
        if (seen.has(e.id) || e.ts_ps > end || e.ts_ps + e.dur_ps < start) continue;
        seen.add(e.id);
        const cut = Math.max(0, start - e.ts_ps) + Math.max(0, e.ts_ps + e.dur_ps - end);
        const row = out.get(w.names[e.name]);
        if (row) row.wall -= cut;
      }
    }
  }
  return { byName: out, numEvents: agg.num_events };
}

/**
 * Name → { count, wall, self } from SQL (`/oxprof/api/query`): the slices of the tracks named
 * `[process, track]` on `host` overlapping [start, end] (as the trace counts them: starts
 * ≤ end, ends ≥ start), wall and self time clipped to the range.
 */
export async function clippedFromSql(base, run, host, tracks, start, end) {
  const q = (s) => `'${String(s).replace(/'/g, "''")}'`;
  const which = tracks.map(([p, t]) => `(p.name = ${q(p)} AND t.name = ${q(t)})`).join(' OR ');
  const sql = `WITH tt AS (SELECT t.id FROM thread_track t JOIN process_track p ON p.id = t.parent_id AND p.host = t.host WHERE t.host = ${q(host)} AND (${which})),
s AS (SELECT id, parent_id, name, least(ts_ps + dur_ps, ${end}) - greatest(ts_ps, ${start}) AS wall FROM slice WHERE host = ${q(host)} AND track_id IN (SELECT id FROM tt) AND ts_ps <= ${end} AND ts_ps + dur_ps >= ${start}),
k AS (SELECT parent_id, sum(wall) AS kids FROM s WHERE parent_id IS NOT NULL GROUP BY parent_id)
SELECT s.name, count(*) AS n, sum(s.wall) AS wall, sum(s.wall - coalesce(k.kids, 0)) AS self FROM s LEFT JOIN k ON k.parent_id = s.id GROUP BY s.name`;
  const url = new URL('/oxprof/api/query', base);
  url.searchParams.set('run', run);
  url.searchParams.set('sql', sql);
  url.searchParams.set('max_rows', '10000');
  const r = await fetch(url);
  if (!r.ok) throw new Error(`SQL: HTTP ${r.status} ${await r.text()}`);
  const a = await r.json();
  return new Map(a.rows.map(([name, n, wall, self]) => [name, { count: n, wall, self }]));
}

/**
 * Compares the page's rows with expected ones (name → fields), every name both ways; with
 * `exactOnly`, the page's rows SQL refined (the names both sides hold alike), at least one.
 */
export function sameRows(got, want, fields, what, { exactOnly = false } = {}) {
  const names = exactOnly ? [...got.keys()].filter((n) => got.get(n).exact).sort() : [...new Set([...got.keys(), ...want.keys()])].sort();
  if (exactOnly && !names.length) throw new Error(`${what}: no row refined by SQL`);
  const bad = [];
  for (const n of names) {
    const g = got.get(n);
    const w = want.get(n);
    for (const f of fields) if (!g || !w || g[f] !== w[f]) bad.push(`${n}.${f}: page ${g?.[f]}, expected ${w?.[f]}`);
  }
  if (bad.length) throw new Error(`${what}: ${bad.length} differences:\n  ${bad.slice(0, 10).join('\n  ')}`);
}
