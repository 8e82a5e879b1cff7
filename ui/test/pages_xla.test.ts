// Unit tests of the XLA pages (op profile, HLO stats, roofline, graph viewer) on XProf's
// own outputs (fixtures from shared/testdata/external-xprof-out) and on XProf's graph
// viewer HTML of the committed jax_train profile.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DataTable } from '../src/datatable';
import {
  type OpNode,
  bwColor,
  flameColor,
  flopsColor,
  flopsUtilization,
  graphViewerHref,
  instructionName,
  memoryBandwidthUtilization,
  moduleForProgram,
  parseFrameworkOpType,
  parseSourceInfo,
  percent,
  timeFraction,
  timeWasted,
} from '../src/components/xla';
import { flopRatePoints, hloStatsPage, opSlices, selfTimeBy } from '../src/pages/hlo_stats';
import { type OpProfile, matchesFilter, nodeAtPath, opProfilePage, rootFor, visibleChildren } from '../src/pages/op_profile';
import { AXIS, attainable, gigaflopsText, rooflinePage, rooflinePoints, rooflines, scatterPoints } from '../src/pages/roofline';
import {
  extractDot,
  graphViewerPage,
  panBox,
  prepareSvg,
  setDotRenderer,
  splitStylesheet,
  zoomBox,
} from '../src/pages/graph_viewer';
import { context, fixture } from './helpers';

const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
const settle = () => new Promise((r) => setTimeout(r, 0));
const gemm = fixture('op_profile.jax08_gemm.json') as OpProfile;
const tpuByCategory = fixture('op_profile.by_category.tpu_inference_2.json') as OpProfile;

describe('utilisation maths and colours (XProf utils.ts)', () => {
  it('colours go red (low) → yellow → green (high), grey for unknown', () => {
    expect(flopsColor(0)).toBe('rgba(179,0,0,1)');
    expect(flopsColor(0.25)).toBe('rgba(179,179,0,1)'); // sqrt(0.25) = 0.5: yellow
    expect(flopsColor(1)).toBe('rgba(0,179,0,1)');
    expect(flopsColor(7)).toBe('rgba(0,179,0,1)'); // capped at 100%
    expect(flopsColor(NaN)).toBe('rgba(179,179,179,1)');
    // Memory bandwidth: XProf's inverted scale (a saturated memory is red).
    // The same direction as FLOPS (issue: HBM colours were inverted): high use is green.
    expect(bwColor(1)).toBe('rgba(0,179,0,1)');
    expect(bwColor(0)).toBe('rgba(179,0,0,1)');
    expect(bwColor(0.8)).toBe(flopsColor(0.8));
    expect(flameColor(0.5, 1, 0.25, Math.sqrt)).toBe('rgba(149,255,0,0.25)');
  });
  it('percent, framework op types, instruction names, source info', () => {
    expect(percent(0.123456)).toBe('12.35%');
    expect(percent(0.000001)).toBe('0.0%');
    expect(percent(NaN)).toBe('-');
    expect(parseFrameworkOpType('gradients/layer/Einsum_1:Einsum')).toBe('Einsum');
    expect(parseFrameworkOpType('jit(dot)/dot_general:')).toBe('dot_general');
    expect(parseFrameworkOpType('')).toBe('-');
    expect(instructionName('%custom-call.1 = (bf16[8192,8192]{1,0}) custom-call()')).toBe('custom-call.1');
    expect(instructionName('ROOT add.3 = f32[] add(a, b)')).toBe('add.3');
    const s = parseSourceInfo("<div class='source-info-cell' title='/a.py:37:16\n/b.py:76:4\n'>/a.py:37</div>");
    expect(s).toEqual({ text: '/a.py:37', stack: '/a.py:37:16\n/b.py:76:4\n' });
    expect(moduleForProgram(['jit_dot(49)', 'jit_dot(5)'], '5')).toBe('jit_dot(5)');
    expect(graphViewerHref('r', 'h', 'fusion.1', { module: 'jit_f(5)' })).toBe('?run=r&tool=graph_viewer&host=h&module_name=jit_f%285%29&node_name=fusion.1');
    expect(graphViewerHref('r', 'h', 'add', { programId: '5' })).toBe('?run=r&tool=graph_viewer&host=h&node_name=add&program_id=5');
  });
  it('overall FLOPS utilisation of the root is its uncapped FLOPS; wasted time as XProf', () => {
    const root = gemm.byProgramExcludeIdle as OpNode;
    expect(flopsUtilization(root, root)).toBe(root.metrics?.uncappedFlops);
    expect(memoryBandwidthUtilization(root, 0)).toBe(root.metrics?.bandwidthUtils?.[0]);
    const program = root.children?.[0] as OpNode;
    expect(timeFraction(program, root)).toBeCloseTo(1833003000 / 3415244000, 12);
    // No FLOPs and no HBM utilisation: wasted time is unknown (max with NaN), as XProf.
    expect(timeWasted(program, root)).toBeNaN();
  });
});

describe('op profile tree', () => {
  const opts = { limit: 10, sort: 'time' as const, p90: false };
  it('picks the tree of the grouping, with or without IDLE', () => {
    expect(rootFor(gemm, 'program', true)?.name).toBe('by_program');
    expect(rootFor(gemm, 'program', false)?.children?.[0]?.name).toBe('IDLE');
    expect(rootFor(gemm, 'program', true)?.children?.some((c) => c.name === 'IDLE')).toBe(false);
    // The by-program response has no category tree: falls back to the program one.
    expect(rootFor(gemm, 'category', true)).toBe(gemm.byProgramExcludeIdle);
    expect(rootFor(tpuByCategory, 'category', true)?.children?.map((c) => c.name)).toEqual(['copy-done', 'loop fusion', 'all-reduce', 'broadcast', 'copy-start']);
  });
  it('shows every child of the root, `limit` children deeper, and counts the left-out ones', () => {
    const root = rootFor(gemm, 'program', true) as OpNode;
    expect(visibleChildren(root, root, 0, opts).children).toHaveLength(16);
    const node: OpNode = { name: 'g', metrics: { rawTime: 100 }, numChildren: 40, children: Array.from({ length: 30 }, (_, i) => ({ name: `op${i}`, metrics: { rawTime: 30 - i } })) };
    const limited = visibleChildren(node, node, 1, opts);
    expect(limited.children.map((c) => c.name)).toEqual(Array.from({ length: 10 }, (_, i) => `op${i}`));
    expect(limited.leftOut).toBe(30); // 40 known to the server − 10 shown
    expect(visibleChildren(node, node, 1, { ...opts, limit: 25 }).leftOut).toBe(15);
    // Top 90%: stop once 90 of 100 ps are covered (30 + 29 + 28 = 87 < 90, + 27 = 114).
    expect(visibleChildren(node, node, 1, { ...opts, p90: true }).children).toHaveLength(4);
    // Sort by name.
    expect(visibleChildren(node, node, 1, { ...opts, sort: 'name' }).children[2]?.name).toBe('op10');
  });
  it('sorts by wasted time with unknown values last', () => {
    const root: OpNode = { metrics: { rawTime: 100 } };
    const parent: OpNode = {
      metrics: { rawTime: 100 },
      children: [
        { name: 'a', metrics: { rawTime: 10, uncappedFlops: 0.09, bandwidthUtils: [0.1] } }, // 0.1 × (1 − 0.9) = 0.01
        { name: 'b', metrics: { rawTime: 50, uncappedFlops: 0.05, bandwidthUtils: [0.2] } }, // 0.5 × 0.8 = 0.4
        { name: 'c', metrics: { rawTime: 40 } }, // NaN
        { name: 'd', metrics: { rawTime: 20, uncappedFlops: 0, bandwidthUtils: [0.5] } }, // 0.2 × 0.5 = 0.1
      ],
    };
    expect(visibleChildren(parent, root, 1, { ...opts, sort: 'wasted' }).children.map((c) => c.name)).toEqual(['b', 'd', 'a', 'c']);
  });
  it('keeps fusion children under their fusion and finds nodes by path and by filter', () => {
    const root = rootFor(tpuByCategory, 'category', true) as OpNode;
    const chain = nodeAtPath(root, 'loop fusion|broadcast_add_fusion.1 and its duplicate(s)|broadcast_add_fusion.1|add.4');
    expect(chain?.map((n) => n.name)).toEqual(['loop fusion', 'broadcast_add_fusion.1 and its duplicate(s)', 'broadcast_add_fusion.1', 'add.4']);
    expect(nodeAtPath(root, 'loop fusion|nope')).toBeNull();
    const memo = new Map<OpNode, boolean>();
    expect(matchesFilter(root.children?.[1] as OpNode, 'add.4', memo)).toBe(true);
    expect(matchesFilter(root.children?.[0] as OpNode, 'add.4', memo)).toBe(false);
  });
});

describe('op profile page', () => {
  it('shows the overall utilisation, the tree, and a details card with a graph viewer link', async () => {
    const ctx = context('op_profile', gemm);
    const el = opProfilePage(ctx);
    document.body.append(el);
    await settle();
    const root = gemm.byProgramExcludeIdle as OpNode;
    expect(el.querySelector('[data-role="overall-flops"]')?.textContent).toBe(percent(root.metrics?.uncappedFlops ?? 0));
    expect(el.querySelector('[data-role="overall-bw-0"]')?.getAttribute('data-value')).toBe(String(root.metrics?.bandwidthUtils?.[0]));
    expect(el.querySelector('[data-role="device-type"]')?.textContent).toBe('GPU');
    const rows = () => [...el.querySelectorAll<HTMLElement>('tr[data-path]')];
    expect(rows().map((r) => r.dataset.name)).toEqual(root.children?.map((c) => c.name));
    // Expand the first program, then its category, then select the op.
    rows()[0]?.click();
    expect(ctx.store.values['op.sel']).toBe('jit_dot(49)');
    rows()[1]?.click();
    rows()[2]?.click();
    expect(ctx.store.values['op.sel']).toBe('jit_dot(49)|custom-call|custom-call.1');
    const details = el.querySelector('[data-role="op-details"]');
    expect(details?.querySelector('[data-role="detail-name"]')?.textContent).toBe('custom-call.1');
    expect(details?.querySelector('[data-field="expression"]')?.textContent).toContain('__cublas$gemm');
    expect(details?.querySelector('[data-field="occurrences"]')?.textContent).toBe('3');
    const link = details?.querySelector<HTMLAnchorElement>('[data-role="graph-link"]');
    expect(link?.getAttribute('href')).toBe(graphViewerHref('run1', 'host1', 'custom-call.1', { module: 'jit_dot(49)' }));
    el.remove();
  });
  it('restores its controls and selection from the URL, and loads the category grouping on demand', async () => {
    const ctx = context('op_profile', gemm, { 'op.q': 'broadcast', 'op.limit': '25', 'op.sel': 'jit_dot(5)|custom fusion|gemm_fusion_dot_general.1' });
    const calls: unknown[] = [];
    ctx.api = { ...ctx.api, data: async (run, tool, host, params) => (calls.push({ run, tool, host, params }), tpuByCategory) };
    const el = opProfilePage(ctx);
    document.body.append(el);
    await settle();
    expect(el.querySelector<HTMLSelectElement>('[data-role="op-limit"]')?.value).toBe('25');
    expect(el.querySelector<HTMLInputElement>('[data-role="op-filter"]')?.value).toBe('broadcast');
    const names = [...el.querySelectorAll<HTMLElement>('tr[data-level="1"]')].map((r) => r.dataset.name);
    expect(names.every((n) => n?.startsWith('jit_broadcast_in_dim'))).toBe(true);
    expect(el.querySelector('[data-role="detail-name"]')?.textContent).toBe('gemm_fusion_dot_general.1');
    const group = el.querySelector<HTMLSelectElement>('[data-role="group-by"]') as HTMLSelectElement;
    group.value = 'category';
    group.dispatchEvent(new Event('change'));
    await settle();
    expect(calls).toEqual([{ run: 'run1', tool: 'op_profile', host: 'host1', params: { group_by: 'category' } }]);
    expect(ctx.store.values.group_by).toBe('category');
    const filter = el.querySelector<HTMLInputElement>('[data-role="op-filter"]') as HTMLInputElement;
    filter.value = '';
    filter.dispatchEvent(new Event('input'));
    expect([...el.querySelectorAll<HTMLElement>('tr[data-level="1"]')].map((r) => r.dataset.name)).toEqual(['copy-done', 'loop fusion', 'all-reduce', 'broadcast', 'copy-start']);
    el.remove();
  });
  it('explains an empty profile', async () => {
    const el = opProfilePage(context('op_profile', { byProgram: { name: 'by_program' }, deviceType: 'CPU_ONLY' }));
    await settle();
    expect(el.querySelector('[data-role="op-empty"]')).not.toBeNull();
  });
});

describe('HLO stats', () => {
  const table = fixture('hlo_stats.jax08_gemm.json') as DataTable;
  it('sums self time by category, op (with program) and rematerialization', () => {
    const byCategory = selfTimeBy(table, 'category');
    expect(byCategory[0]?.name).toBe('custom-call');
    const total = (table.rows ?? []).reduce((s, r) => s + Number(r.c[9]?.v ?? 0), 0);
    expect(byCategory.reduce((s, x) => s + x.value, 0)).toBeCloseTo(total, 6);
    expect(opSlices(table)[0]?.name).toBe('custom-call.1 (49)');
    expect(selfTimeBy(table, 'hlo_rematerialization').map((s) => s.name)).toEqual(['No']);
    const points = flopRatePoints(table);
    expect(points).toHaveLength(16);
    expect(points.map((p) => p.self)).toEqual([...points.map((p) => p.self)].sort((a, b) => b - a));
  });
  it('renders charts, filters in the URL, and graph viewer links', () => {
    const ctx = context('hlo_stats', table, { 'hlo.cat': 'loop fusion' });
    const el = hloStatsPage(ctx);
    expect(el.querySelector('[data-chart="hlo-category"]')).not.toBeNull();
    expect(el.querySelector('[data-chart="hlo-flop-rate"]')).not.toBeNull();
    const count = el.querySelector('[data-table="hlo"] [data-role="count"]');
    const loop = (table.rows ?? []).filter((r) => r.c[2]?.v === 'loop fusion').length;
    expect(count?.getAttribute('data-total')).toBe(String(loop));
    const prog = el.querySelector<HTMLSelectElement>('[data-role="hlo-program"]') as HTMLSelectElement;
    prog.value = '32';
    prog.dispatchEvent(new Event('change'));
    expect(ctx.store.values['hlo.prog']).toBe('32');
    expect(el.querySelector('[data-table="hlo"] [data-role="count"]')?.getAttribute('data-total')).toBe('1');
    const link = el.querySelector('[data-role="graph-link"]');
    expect(link?.getAttribute('href')).toBe('?run=run1&tool=graph_viewer&host=host1&node_name=wrapped_broadcast&program_id=32');
    expect(el.querySelector('td[data-col="source_info"] .source-info')?.textContent).toContain('generate_gemm_trace.py');
  });
  it('accepts XProf\u2019s deep-link parameters (hlo_op_name, program_id)', () => {
    const ctx = context('hlo_stats', table, { hlo_op_name: 'custom-call.1', program_id: 'jit_dot(79)' });
    const el = hloStatsPage(ctx);
    expect(ctx.store.values).toEqual({ 'hlo.q': 'custom-call.1', 'hlo.prog': '79' });
    expect(el.querySelector('[data-table="hlo"] [data-role="count"]')?.getAttribute('data-shown')).toBe('1');
  });
});

describe('roofline', () => {
  const gpu = fixture('roofline_model.jax08_gemm.json') as DataTable[];
  const tpu = fixture('roofline_model.tpu_inference_2.json') as DataTable[];
  it('has one roofline per memory level, meeting the peak at the server\u2019s ridge point', () => {
    const g = rooflines(gpu[0]?.p ?? {});
    expect(g.map((r) => r.name)).toEqual(['Shared Mem / L1', 'HBM']);
    expect(g.map((r) => r.ridgePoint)).toEqual([16, 491.077]);
    const t = rooflines(tpu[0]?.p ?? {});
    expect(t.map((r) => r.name)).toEqual(['VMEM Read', 'VMEM Write', 'HBM']);
    for (const r of [...g, ...t]) {
      const [start, ridge, end] = rooflinePoints(r);
      expect(ridge).toEqual([r.ridgePoint, r.peakFlopRate]);
      expect(end).toEqual([AXIS.maxX, r.peakFlopRate]);
      expect(start?.[0]).toBe(AXIS.minX);
      // Slope 1 in log-log through the ridge point.
      expect((start?.[1] ?? 0) / AXIS.minX).toBeCloseTo(r.peakFlopRate / r.ridgePoint, 6);
      expect(attainable(r, r.ridgePoint * 10)).toBe(r.peakFlopRate);
      expect(attainable(r, r.ridgePoint / 10)).toBeCloseTo(r.peakFlopRate / 10, 6);
    }
    // XProf's ridge points are peak FLOP rate / bandwidth in GB/s (bandwidths in GiB/s):
    // without them the same is computed.
    const p = { ...(tpu[0]?.p ?? {}), hbm_ridge_point: '0' };
    expect(rooflines(p).find((r) => r.name === 'HBM')?.ridgePoint).toBeCloseTo(560.442, 2);
    expect(rooflines({ device_type: '', peak_flop_rate: '0', peak_hbm_bw: '0' })).toEqual([]);
    expect(gigaflopsText(1307440)).toBe('1,307.44 TFLOP/s');
  });
  it('places ops with FLOPs and a known bound; renders device info, charts and tables', () => {
    const table = gpu[0] as DataTable;
    const all = (table.rows ?? []).map((_, i) => i);
    const points = scatterPoints(table, all);
    expect(points.length).toBeGreaterThan(0);
    expect(points.every((p) => p.x > 0 && p.y > 0)).toBe(true);
    const ctx = context('roofline_model', gpu, { 'roof.infeed': 'no' });
    const el = rooflinePage(ctx);
    expect(el.querySelector('[data-props="device-info"] [data-prop="Device type"]')?.textContent).toBe('AMD GPU - gfx942');
    expect(el.querySelector('[data-props="device-info"] [data-prop="HBM ridge point"]')?.textContent).toBe('491.077 FLOP/byte');
    expect(el.querySelector('[data-chart="roofline-ops"]')).not.toBeNull();
    const opRows = (table.rows ?? []).filter((r) => r.c[0]?.v === 'Total' && r.c[2]?.v !== 'Program' && r.c[27]?.v === false).length;
    const programRows = (table.rows ?? []).filter((r) => r.c[2]?.v === 'Program' && r.c[27]?.v === false).length;
    expect(el.querySelector('[data-table="roof-ops"] [data-role="count"]')?.getAttribute('data-total')).toBe(String(opRows + programRows));
    const cat = el.querySelector<HTMLSelectElement>('[data-role="roof-category"]') as HTMLSelectElement;
    cat.value = 'custom-call';
    cat.dispatchEvent(new Event('change'));
    expect(ctx.store.values['roof.cat']).toBe('custom-call');
    expect(el.querySelector('[data-table="roof-ops"] [data-role="count"]')?.getAttribute('data-total')).toBe('5');
  });
});

describe('graph viewer', () => {
  const html = gunzipSync(readFileSync(join(repo, 'testdata/profiles/jax_train/xprof_out/graph_viewer.jit__normal(16).graph.html.gz'))).toString('utf8');
  afterEach(() => vi.unstubAllGlobals());

  it('extracts the DOT of XProf\u2019s HTML and moves its stylesheet out of the DOT', () => {
    const dot = extractDot(html);
    expect(dot.startsWith('digraph G {')).toBe(true);
    expect(extractDot('digraph { a -> b }')).toBe('digraph { a -> b }');
    const split = splitStylesheet(dot);
    expect(split.dot).not.toContain('stylesheet=<');
    expect(split.dot).toContain('broadcast_multiply_fusion');
    expect(split.css).toContain('#node159:hover ~ #edge226 path');
    expect(split.css).not.toContain('@import');
    expect(split.css).toContain("font-family: 'Roboto', Arial, sans-serif;");
  });
  it('zooms around a point and pans', () => {
    const box = { x: 0, y: 0, w: 100, h: 50 };
    expect(zoomBox(box, 0.5, 50, 25)).toEqual({ x: 25, y: 12.5, w: 50, h: 25 });
    expect(zoomBox(box, 2, 0, 0)).toEqual({ x: 0, y: 0, w: 200, h: 100 });
    expect(panBox(box, 10, -5)).toEqual({ x: 10, y: -5, w: 100, h: 50 });
  });
  it('renders the real DOT with Graphviz (WebAssembly) and finds the centre node', async () => {
    const { dotToSvg } = await import('../src/components/graphviz');
    const svgText = await dotToSvg(splitStylesheet(extractDot(html)).dot);
    const { svg, center } = prepareSvg(svgText, 'broadcast_multiply_fusion');
    expect(svg.querySelectorAll('g.node').length).toBeGreaterThan(20);
    expect(center?.getAttribute('data-node-name')).toBe('broadcast_multiply_fusion');
    expect(center?.classList.contains('cluster')).toBe(true);
    expect(svg.querySelector('g.node[data-node-name="copy.9"]')).not.toBeNull();
    expect(svg.querySelector('g[data-node-name="Parameter 0"]')?.classList.contains('gv-clickable')).toBe(false);
  }, 30_000);
  it('strips scripts, event handlers and external links from the SVG', () => {
    const { svg } = prepareSvg(
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10"><script>alert(1)</script><g class="node" onclick="x()"><a xlink:href="javascript:x()"><text font-weight="bold">add.1</text></a></g></svg>',
      'add.1',
    );
    expect(svg.querySelector('script')).toBeNull();
    expect(svg.querySelector('g.node')?.getAttribute('onclick')).toBeNull();
    expect(svg.querySelector('a')?.getAttribute('xlink:href')).toBeNull();
    expect(svg.querySelector('g.node')?.getAttribute('data-center')).toBe('true');
  });
  it('loads modules, renders through the DOT hook, re-centres on a clicked node, keeps the view in the URL', async () => {
    const requests: string[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      requests.push(url);
      const body = url.includes('module_list') ? 'jit_a(1),jit_b(2)' : url.includes('type=dot') ? 'digraph G { a; b; a -> b; }' : 'HloModule jit_b\n\nENTRY main {\n  ROOT add.1 = f32[] add(a, b)\n}\n';
      return new Response(body, { status: 200 });
    });
    const rendered: string[] = [];
    const previous = setDotRenderer(async (dot) => {
      rendered.push(dot);
      const n = rendered.length;
      return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 100"><g class="node"><title>1</title><text font-weight="bold">add.${n}</text></g><g class="node"><title>2</title><text font-weight="bold">mul.${n}</text></g></svg>`;
    });
    try {
      const ctx = context('graph_viewer', null, { program_id: '2', node_name: 'add.1' });
      const el = graphViewerPage(ctx);
      document.body.append(el);
      const host = el.querySelector<HTMLElement>('[data-chart="graph"]') as HTMLElement;
      await vi.waitFor(() => expect(host.dataset.ready).toBe('true'));
      expect(el.querySelector<HTMLSelectElement>('[data-role="gv-module"]')?.value).toBe('jit_b(2)');
      expect(ctx.store.values.module_name).toBe('jit_b(2)');
      expect(ctx.store.values.program_id).toBeUndefined();
      const dotRequest = requests.find((u) => u.includes('type=dot')) ?? '';
      expect(dotRequest).toContain('module_name=jit_b%282%29');
      expect(dotRequest).toContain('node_name=add.1');
      expect(dotRequest).toContain('graph_width=3');
      expect(rendered).toEqual(['digraph G { a; b; a -> b; }']);
      expect(el.querySelector('[data-center]')?.getAttribute('data-node-name')).toBe('add.1');
      // A click on another node re-centres the graph on it.
      const mul = el.querySelector('g[data-node-name="mul.1"] text') as Element;
      mul.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, button: 0 }));
      mul.dispatchEvent(new MouseEvent('mouseup', { bubbles: true, button: 0 }));
      await vi.waitFor(() => expect(rendered).toHaveLength(2));
      expect(ctx.store.values.node_name).toBe('mul.1');
      expect(requests.filter((u) => u.includes('type=dot')).pop()).toContain('node_name=mul.1');
      // Text view.
      const viewSelect = el.querySelector<HTMLSelectElement>('[data-role="gv-view"]') as HTMLSelectElement;
      viewSelect.value = 'short_txt';
      viewSelect.dispatchEvent(new Event('change'));
      await vi.waitFor(() => expect(el.querySelector('[data-role="gv-text"]')).not.toBeNull());
      expect(ctx.store.values['gv.view']).toBe('short_txt');
      el.remove();
    } finally {
      setDotRenderer(previous);
    }
  });
});
