// Unit tests of the memory profile, memory viewer and tf.data pages: the data shaping on
// XProf's own outputs for the committed profiles (testdata/profiles/*/xprof_out), and the
// pages rendered in jsdom.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { DataTable } from '../src/datatable';
import {
  type MemoryProfileData,
  breakdownTable,
  eventDetails,
  hasIncompleteSteps,
  humanBytes,
  memoryProfilePage,
  memorySummary,
  memoryTimeline,
  nearestPoint,
  timelineOption,
} from '../src/pages/memory_profile';
import {
  type MemoryViewerData,
  allocationTimeline,
  blockBuffer,
  bufferDetails,
  bufferSpan,
  buffersTable,
  memoryOverview,
  memoryViewerPage,
  peakBuffers,
  placeBlocks,
  setMemoryViewerSources,
  workingSpaceOption,
} from '../src/pages/memory_viewer';
import {
  ITERATOR_BLOCKING,
  ITERATOR_BOTTLENECK,
  type IteratorNode,
  htmlText,
  iteratorLabel,
  iteratorTable,
  parseIteratorCard,
  pipelineCalls,
  pipelineDot,
  setTfDataDotRenderer,
  tfDataPage,
} from '../src/pages/tf_data';
import { context } from './helpers';

const repo = join(dirname(fileURLToPath(import.meta.url)), '../..');
const settle = () => new Promise((r) => setTimeout(r, 0));
const xprofOut = (profile: string, file: string): unknown => {
  const bytes = readFileSync(join(repo, 'testdata/profiles', profile, 'xprof_out', file));
  return JSON.parse((file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8'));
};
const memory = xprofOut('tf_memory', 'memory_profile.json.gz') as MemoryProfileData;
const memoryId = 'bfc_cpu_allocator_for_gpu';
const viewer = xprofOut('jax_train', 'memory_viewer.jit_train_step(26).json') as MemoryViewerData;

describe('memory profile data shaping (XProf memory_profile.json of tf_memory)', () => {
  it('formats bytes as XProf (binary units, 2 decimals)', () => {
    expect(humanBytes(0)).toBe('0.00 B');
    expect(humanBytes(68719476736)).toBe('64.00 GiB');
    expect(humanBytes(51380224)).toBe('49.00 MiB');
    expect(humanBytes(1536)).toBe('1.50 KiB');
    expect(humanBytes(-4194304)).toBe('-4.00 MiB');
  });

  it('summarises the peak and counts the sampled allocations and deallocations', () => {
    const s = memorySummary(memory, memoryId);
    const snapshots = memory.memoryProfilePerAllocator?.[memoryId]?.sampledTimelineSnapshots ?? [];
    expect(snapshots).toHaveLength(1000);
    const allocations = snapshots.filter((x) => x.activityMetadata?.memoryActivity === 'ALLOCATION').length;
    expect(s).toMatchObject({
      numAllocations: allocations,
      numDeallocations: 1000 - allocations,
      memoryCapacity: 68719476736,
      peakHeapLifetime: 51380224,
      peakMemoryUsage: 51380224,
      stack: 0,
      heap: 51380224,
      free: 68668096512,
      fragmentation: 0.692308,
    });
    expect(s?.peakTimeMs).toBeCloseTo(322.141729, 9);
    expect(memorySummary(memory, 'no_such_allocator')).toBeNull();
    expect(hasIncompleteSteps(memory, memoryId)).toBe(false);
  });

  it('builds the timeline sorted by time with stack, heap, free and fragmentation', () => {
    const t = memoryTimeline(memory, memoryId);
    expect(t.hasFree).toBe(true);
    expect(t.points.length).toBe(1000);
    for (let i = 1; i < t.points.length; i++) expect(t.points[i]!.timeMs).toBeGreaterThanOrEqual(t.points[i - 1]!.timeMs);
    const first = t.points[0]!;
    expect(first.timeMs).toBeCloseTo(6.750934, 9);
    expect(first.heap).toBe(18100992);
    expect(first.free).toBe(68701375744);
    expect(first.fragmentationPct).toBeCloseTo(46.3538, 6);
    expect(nearestPoint(t.points, first.timeMs - 5)).toBe(0);
    expect(nearestPoint(t.points, 1e9)).toBe(t.points.length - 1);
    expect(nearestPoint(t.points, t.points[10]!.timeMs)).toBeLessThanOrEqual(10);
    // The chart: stacked stack/heap/free areas; fragmentation on the second axis; peak marked.
    const option = timelineOption(t, memorySummary(memory, memoryId)) as { series: { name: string; stack?: string; yAxisIndex?: number; data: number[][]; markLine?: { data: { xAxis: number }[] } }[]; legend: { selected: Record<string, boolean> } };
    expect(option.series.map((s) => s.name)).toEqual(['Stack', 'Heap', 'Free', 'Fragmentation']);
    expect(option.series.slice(0, 3).every((s) => s.stack === 'memory')).toBe(true);
    expect(option.series[3]!.yAxisIndex).toBe(1);
    expect(option.series[1]!.data[0]).toEqual([first.timeMs, 18100992 / 1024 ** 2]);
    expect(option.series[3]!.markLine?.data[0]?.xAxis).toBeCloseTo(322.141729, 9);
    // 64 GiB free against 49 MiB used: the free area starts hidden.
    expect(option.legend.selected).toEqual({ Free: false });
  });

  it('details of an allocation and of a deallocation', () => {
    const t = memoryTimeline(memory, memoryId);
    const first = t.points[0]!;
    expect(eventDetails(first)).toEqual([
      ['Time', '6.751 ms'],
      ['Event', 'allocation'],
      ['Requested size', '512.00 KiB'],
      ['Allocation size', '512.00 KiB'],
      ['TF op', 'RandomStandardNormal'],
      ['Step id', '0'],
      ['Region type', 'output'],
      ['Data type', 'float'],
      ['Shape', '[256,512]'],
      ['Memory in use', humanBytes(18100992)],
    ]);
    const dealloc = t.points.find((p) => p.snapshot.activityMetadata?.memoryActivity === 'DEALLOCATION')!;
    const details = Object.fromEntries(eventDetails(dealloc));
    expect(details.Event).toBe('deallocation');
    expect(details['Allocation size']).toMatch(/^-/);
  });

  it('lists the allocations active at the peak from snapshots and special allocations', () => {
    const table = breakdownTable(memory, memoryId);
    const allocator = memory.memoryProfilePerAllocator![memoryId]!;
    expect(table.rows).toHaveLength(allocator.activeAllocations!.length);
    const special = table.rows!.find((r) => r.c[0]?.v === 'unused preallocated device memory');
    expect(special?.c[1]?.v).toBeCloseTo(22295296 / 1024 ** 2, 9);
    expect(special?.c[4]?.v).toBe('persist/dynamic');
    const a = allocator.activeAllocations!.find((x) => Number(x.snapshotIndex) >= 0)!;
    const m = allocator.memoryProfileSnapshots![Number(a.snapshotIndex)]!.activityMetadata!;
    const row = table.rows![allocator.activeAllocations!.indexOf(a)]!;
    expect(row.c.map((c) => c?.v)).toEqual([m.tfOpName, Number(m.allocationBytes) / 1024 ** 2, Number(m.requestedBytes) / 1024 ** 2, Number(a.numOccurrences), m.regionType, m.dataType, m.tensorShape]);
  });

  it('renders the page: summary, memory ID selector in the URL, breakdown table', () => {
    const two: MemoryProfileData = {
      ...memory,
      memoryIds: [memoryId, 'copy'],
      memoryProfilePerAllocator: { ...memory.memoryProfilePerAllocator, copy: memory.memoryProfilePerAllocator![memoryId]! },
    };
    const ctx = context('memory_profile', two);
    const page = memoryProfilePage(ctx);
    document.body.replaceChildren(page);
    expect(page.querySelector('[data-metric="capacity"] [data-role="value"]')?.textContent).toBe('64.00 GiB');
    expect(page.querySelector('[data-props="mp-peak"] [data-prop="Fragmentation"]')?.textContent).toBe('69.23%');
    expect(page.querySelector('[data-table="mp-breakdown"] [data-role="count"]')?.getAttribute('data-total')).toBe('25');
    const select = page.querySelector<HTMLSelectElement>('[data-role="mp-memory-id"]')!;
    select.value = 'copy';
    select.dispatchEvent(new Event('change'));
    expect(ctx.store.values.memory_id).toBe('copy');
    // A deep link selects it.
    const again = memoryProfilePage(context('memory_profile', two, { memory_id: 'copy' }));
    expect(again.querySelector<HTMLSelectElement>('[data-role="mp-memory-id"]')!.value).toBe('copy');
  });

  it('explains an empty memory profile', () => {
    const page = memoryProfilePage(context('memory_profile', { memoryProfilePerAllocator: {}, numHosts: 1, memoryIds: [], version: 1 }));
    expect(page.querySelector('[data-role="mp-empty"]')?.textContent).toContain('no memory activity');
  });
});

describe('memory viewer data shaping (XProf memory_viewer JSON of jax_train jit_train_step(26))', () => {
  it('computes the overview as XProf', () => {
    const o = memoryOverview(viewer);
    expect(o.peakMib).toBeCloseTo(0.9952583312988281, 12);
    expect(o.totalMib).toBeCloseTo(0.9952583312988281, 12);
    expect(o.paddingOverheadMib).toBe(0);
    expect(o.argumentsMib).toBeCloseTo(0.41825103759765625, 12);
    expect(o.tempWithoutFragmentationMib).toBeCloseTo(0.9952583312988281 - 0.8050727844238281, 12);
    expect(o.tempFragmentation).toBe(0);
    // A TPU VMEM space: the scoped allocation is added to the temporaries.
    const vmem = memoryOverview({ peakHeapMib: 10, totalBufferAllocationMib: 12, indefiniteBufferAllocationMib: 4, maxScopedVmemAllocationMib: 1, peakUnpaddedHeapMib: 9 });
    expect(vmem).toMatchObject({ peakMib: 7, totalMib: 9, paddingOverheadMib: 1, tempFragmentation: 2 / 8 });
  });

  it('orders the buffers at the peak by program order and by size (stable)', () => {
    const { byOrder, bySize } = peakBuffers(viewer);
    expect(byOrder.map((b) => b.name)).toEqual(viewer.maxHeap!.map((o) => o.instructionName || o.label));
    expect(byOrder[8]?.name).toBe('small (<16384 bytes)');
    const sizes = bySize.map((b) => b.sizeMib);
    expect([...sizes].sort((a, b) => b - a)).toEqual(sizes);
    // Same order as XProf's maxHeapBySize.
    expect(bySize.map((b) => b.object.logicalBufferId)).toEqual(viewer.maxHeapBySize!.map((o) => o.logicalBufferId));
    expect(new Set(bySize.map((b) => b.color)).size).toBeGreaterThan(1);
    const table = buffersTable(byOrder);
    expect(table.rows).toHaveLength(9);
    expect(table.rows![0]!.c[1]?.v).toBe('dot.1');
  });

  it('finds a buffer lifetime in program order', () => {
    const last = viewer.heapSizes!.length - 1;
    expect(bufferSpan(viewer, 236)).toEqual([1, 15]);
    expect(bufferSpan(viewer, 232)).toEqual([0, 21]); // no start: from 0
    expect(bufferSpan(viewer, 257)).toEqual([0, last]); // not in the spans: the whole program
    expect(bufferSpan({ heapSizes: [1, 2, 3], logicalBufferSpans: { '7': { start: 1, limit: -1 } } }, 7)).toEqual([1, 2]);
  });

  it('details of a buffer with padding', () => {
    const [b] = peakBuffers({ maxHeap: [{ instructionName: 'fusion.1', logicalBufferSizeMib: 4, unpaddedShapeMib: 1, shapeString: 'f32[3]{0}', tfOpName: 'a/b', groupName: 'Temporary', opCode: 'fusion', sourceInfo: { fileName: 'x.py', lineNumber: 3 } }] }).byOrder;
    expect(bufferDetails(b!)).toEqual([
      ['Name', 'fusion.1'],
      ['Category', 'fusion operation'],
      ['Size', '4 MiB'],
      ['Unpadded size', '1 MiB'],
      ['Extra memory due to padding', '3 MiB'],
      ['Expansion', '4.0×'],
      ['Shape', 'f32[3]{0}'],
      ['Framework op', 'a/b'],
      ['Allocation type', 'Temporary'],
      ['Source', 'x.py:3'],
    ]);
  });

  it('draws the working space with the peak lines', () => {
    const option = workingSpaceOption(viewer) as { series: { name: string; data: number[][]; markLine?: { data: { yAxis?: number; xAxis?: number }[] } }[] };
    expect(option.series.map((s) => s.name)).toEqual(['Size', 'Unpadded size', 'Selected buffer']);
    expect(option.series[0]!.data).toHaveLength(27);
    expect(option.series[0]!.data[15]).toEqual([15, 0.9952583312988281]);
    expect(option.series[0]!.markLine!.data).toEqual([expect.objectContaining({ yAxis: 0.9952583312988281 }), expect.objectContaining({ xAxis: 15 })]);
  });

  it('places the buffer allocation timeline blocks (containers, colours by category)', () => {
    const placed = placeBlocks(viewer);
    expect(placed).toHaveLength(viewer.bufferBlocks!.filter((b) => (b.size ?? 0) > 0).length);
    expect(placed[0]).toMatchObject({ x: 0, width: 26, y: 0, height: 199424, container: true });
    expect(placed[2]).toMatchObject({ x: 1, width: 14, y: 65536, height: 65536, color: '#ff9100', container: false });
    const mixed = placeBlocks({ bufferBlocks: [{ logicalBufferId: 3, size: 8, category: 'Temporary' }, { logicalBufferId: 4, size: 8, category: 'Temporary' }, { logicalBufferId: 5, size: 0 }, { logicalBufferId: 6, size: 8, category: 'Allocation 1' }] });
    expect(mixed.map((b) => [b.color, b.container])).toEqual([[mixed[0]!.color, false], [mixed[0]!.color, false], ['#ffffff', true]]);
    const b = blockBuffer(placed[2]!, 2);
    expect(b).toMatchObject({ name: 'add_maximum_fusion', sizeMib: 0.0625, unpaddedMib: 0.0625 });
    const hovered: number[] = [];
    const el = allocationTimeline(placed, 27, 1024 * 1024, (_p, i) => hovered.push(i));
    const svg = el.querySelector('svg')!;
    expect(svg.getAttribute('viewBox')).toBe(`0 0 27 ${Math.max(...placed.map((p) => p.y + p.height))}`);
    expect(svg.querySelectorAll('rect')).toHaveLength(placed.length);
    svg.querySelector('rect[data-block="2"]')!.dispatchEvent(new Event('mouseenter'));
    svg.querySelector('rect[data-block="0"]')!.dispatchEvent(new Event('mouseenter'));
    expect(hovered).toEqual([2]); // containers are not selectable
  });

  let restore: ReturnType<typeof setMemoryViewerSources> | null = null;
  afterEach(() => {
    if (restore) setMemoryViewerSources(restore);
    restore = null;
  });

  it('loads the module of the URL (else the first), keeps the selection in the URL', async () => {
    const loads: string[] = [];
    restore = setMemoryViewerSources({
      modules: async () => ['jit_a(1)', 'jit_train_step(26)'],
      load: async (_run, module) => {
        loads.push(module);
        return viewer;
      },
    });
    const ctx = context('memory_viewer', null);
    const page = memoryViewerPage(ctx);
    document.body.replaceChildren(page);
    await settle();
    await settle();
    expect(loads).toEqual(['jit_a(1)']);
    expect(ctx.store.values.module_name).toBe('jit_a(1)');
    expect(page.querySelector('[data-metric="peak"] [data-role="value"]')?.textContent).toBe('1019 KiB');
    expect(page.querySelector('[data-table="mv-buffers"] [data-role="count"]')?.getAttribute('data-total')).toBe('9');
    const select = page.querySelector<HTMLSelectElement>('[data-role="mv-module"]')!;
    select.value = 'jit_train_step(26)';
    select.dispatchEvent(new Event('change'));
    await settle();
    expect(loads).toEqual(['jit_a(1)', 'jit_train_step(26)']);
    expect(ctx.store.values.module_name).toBe('jit_train_step(26)');
    const deep = memoryViewerPage(context('memory_viewer', null, { module_name: 'jit_train_step(26)' }));
    document.body.replaceChildren(deep);
    await settle();
    await settle();
    expect(loads.at(-1)).toBe('jit_train_step(26)');
  });

  it('says so when the run has no HLO module', async () => {
    restore = setMemoryViewerSources({ modules: async () => [], load: async () => viewer });
    const page = memoryViewerPage(context('memory_viewer', null));
    document.body.replaceChildren(page);
    await settle();
    await settle();
    expect(page.querySelector('[data-role="mv-no-module"]')).not.toBeNull();
  });
});

/** The three tables of the tool for one call of one pipeline: Prefetch ← Map ← (TensorSlice, Range). */
function tfDataTables(): DataTable[] {
  const card = (name: string, start: number, total: number, self: number, calls: number) =>
    `<div style='padding: 1px;'><b>${name}</b><br/><div style='text-align: left;'>Start Time: ${start} us<br/>Total Duration: ${total} us<br/>Self Duration: ${self} us<br/># Calls: ${calls}</div></div>`;
  const row = (rank: number, id: string, html: string, parent: string, type: number) => ({
    c: [{ v: 'vm' }, { v: 'Host:0' }, { v: rank }, { v: id, f: html }, { v: parent }, { v: type }],
  });
  return [
    {
      cols: ['host', 'input_pipeline', 'rank', 'name', 'parent', 'type'].map((id) => ({ id, label: id, type: id === 'rank' || id === 'type' ? 'number' : 'string' })),
      rows: [
        row(0, '1', card('Prefetch', 10, 500, 20, 1), '', ITERATOR_BLOCKING),
        row(0, '2', card('Map', 12, 480, 400, 1), '1', ITERATOR_BOTTLENECK),
        row(0, '3', card('TensorSlice', 13, 50, 50, 4), '2', ITERATOR_BLOCKING),
        row(0, '-4', card('Range', 14, 5, 5, 1), '2', 0),
        row(1, '1', card('Prefetch', 900, 60, 60, 1), '', ITERATOR_BOTTLENECK),
      ],
    },
    {
      cols: [
        { id: 'host', label: 'Host', type: 'string' },
        { id: 'input_pipeline', label: 'Input Pipeline', type: 'string' },
        { id: 'min', label: 'Min (us)', type: 'number' },
        { id: 'mean', label: 'Avg (us)', type: 'number' },
        { id: 'max', label: 'Max (us)', type: 'number' },
        { id: 'num_calls', label: '# calls', type: 'number' },
        { id: 'num_slow_calls', label: '# slow calls', type: 'number' },
      ],
      rows: [{ c: [{ v: 'vm' }, { v: 'Host:0' }, { v: 60 }, { v: 280 }, { v: 500 }, { v: 2 }, { v: 2 }] }],
    },
    {
      cols: ['host', 'input_pipeline', 'max_latency', 'bottleneck', 'suggestion'].map((id) => ({ id, label: id, type: id === 'max_latency' ? 'number' : 'string' })),
      rows: [
        {
          c: [
            { v: 'vm' },
            { v: 'Host:0' },
            { v: 500 },
            { v: '<u>Iterator Type</u>: <b>Map</b><br/><u>Long Name</u>: Iterator::Root::Prefetch::Map<br/><u>Latency</u>: 29,358 us' },
            { v: 'See <a href="https://www.tensorflow.org/guide/data_performance_analysis" target="_blank">this</a> for suggestions.' },
          ],
        },
      ],
      p: { is_input_bound: 'true', summary_message: 'Your profile has a tf.data input pipeline slower than 50 us.' },
    },
  ];
}

describe('tf.data bottleneck analysis', () => {
  it('reads iterator cards and HTML text without interpreting markup', () => {
    expect(parseIteratorCard("<div style='padding: 1px;'><b>MapAndBatch</b><br/><div style='text-align: left;'>Start Time: 496459 us<br/>Total Duration: 29459 us<br/>Self Duration: 29358 us<br/># Calls: 1</div></div>")).toEqual({
      name: 'MapAndBatch',
      fields: [
        ['Start Time', '496459 us'],
        ['Total Duration', '29459 us'],
        ['Self Duration', '29358 us'],
        ['# Calls', '1'],
      ],
    });
    expect(htmlText('<u>Iterator Type</u>: <b>Map</b><br/><u>Latency</u>: 1 &amp; 2 &lt;us&gt;')).toBe('Iterator Type: Map\nLatency: 1 & 2 <us>');
  });

  it('groups the graph rows into pipeline calls and builds the DOT (critical path bold, bottleneck red)', () => {
    const calls = pipelineCalls(tfDataTables()[0]!);
    expect(calls.map((c) => [c.host, c.pipeline, c.rank, c.nodes.length])).toEqual([
      ['vm', 'Host:0', 0, 4],
      ['vm', 'Host:0', 1, 1],
    ]);
    const dot = pipelineDot(calls[0]!.nodes);
    expect(dot.startsWith('digraph pipeline {')).toBe(true);
    const lines = dot.split('\n');
    const node = (id: string) => lines.find((l) => l.includes(`id="iter-${id}"`)) ?? '';
    expect(node('2')).toContain('color="#d62728"');
    expect(node('2')).toContain('penwidth=3');
    expect(node('2')).toContain('label=<<B>Map</B><BR/>Start Time: 12 µs<BR/>Total Duration: 480 µs<BR/>Self Duration: 400 µs<BR/># Calls: 1>');
    // XProf's microseconds in adaptive units, as the iterator table shows them.
    expect(iteratorLabel({ id: '9', parent: '', type: 0, name: 'Map', fields: [['Start Time', '496419 us'], ['Self Duration', '29358 us']] })).toBe('<<B>Map</B><BR/>Start Time: 496.4 ms<BR/>Self Duration: 29.36 ms>');
    expect(node('1')).toContain('penwidth=2.5');
    expect(node('-4')).not.toContain('penwidth');
    // Edges from each consumer to its inputs; bold between critical-path iterators.
    expect(lines.filter((l) => l.includes('->'))).toEqual(['  n0 -> n1 [penwidth=2.5, color="#333333"];', '  n1 -> n2 [penwidth=2.5, color="#333333"];', '  n1 -> n3;']);
    // Names are escaped as DOT strings.
    const odd: IteratorNode[] = [{ id: 'x"1', parent: '', type: 0, name: 'A "quoted" \\ name', fields: [] }];
    expect(pipelineDot(odd)).toContain('label=<<B>A &quot;quoted&quot; \\ name</B>>');
    expect(pipelineDot(odd)).toContain('id="iter-x\\"1"');
    expect(pipelineDot([{ id: '1', parent: '', type: 0, name: '<i>&', fields: [['a<b', '']] }])).toContain('label=<<B>&lt;i&gt;&amp;</B><BR/>a&lt;b>');
  });

  it('lists the iterators of a call', () => {
    const [call] = pipelineCalls(tfDataTables()[0]!);
    const table = iteratorTable(call!);
    expect(table.rows!.map((r) => r.c.map((c) => c?.v))).toEqual([
      ['Prefetch', '', 'critical path', 10, 500, 20, 1, '1'],
      ['Map', 'Prefetch', 'bottleneck', 12, 480, 400, 1, '2'],
      ['TensorSlice', 'Map', 'critical path', 13, 50, 50, 4, '3'],
      ['Range', 'Map', '', 14, 5, 5, 1, '-4'],
    ]);
  });

  let previous: ReturnType<typeof setTfDataDotRenderer> | null = null;
  afterEach(() => {
    if (previous) setTfDataDotRenderer(previous);
    previous = null;
  });

  it('renders the summary, tables and graph; the call rank is kept in the URL', async () => {
    const dots: string[] = [];
    previous = setTfDataDotRenderer(async (dot) => {
      dots.push(dot);
      return '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><g class="node" onclick="alert(1)"><text>x</text></g><script>alert(1)</script></svg>';
    });
    const ctx = context('tf_data_bottleneck_analysis', tfDataTables());
    const page = tfDataPage(ctx);
    document.body.replaceChildren(page);
    await settle();
    expect(page.querySelector('[data-role="tfd-input-bound"]')?.getAttribute('data-value')).toBe('true');
    expect(page.querySelector('[data-role="tfd-bottleneck"] pre')?.textContent).toBe('Iterator Type: Map\nLong Name: Iterator::Root::Prefetch::Map\nLatency: 29.36 ms');
    expect(page.querySelector('[data-role="tfd-suggestion"] a')?.getAttribute('href')).toBe('https://www.tensorflow.org/guide/data_performance_analysis');
    expect(page.querySelector('[data-table="tfd-pipelines"] [data-role="count"]')?.getAttribute('data-total')).toBe('1');
    const svg = page.querySelector('[data-role="tfd-svg"]')!;
    expect(svg.querySelector('script')).toBeNull();
    expect(svg.querySelector('[onclick]')).toBeNull();
    expect(dots).toHaveLength(1);
    expect(page.querySelector('[data-table="tfd-iterators"] [data-role="count"]')?.getAttribute('data-total')).toBe('4');
    const rank = page.querySelector<HTMLSelectElement>('[data-role="tfd-rank"]')!;
    expect([...rank.options].map((o) => o.value)).toEqual(['0', '1']);
    rank.value = '1';
    rank.dispatchEvent(new Event('change'));
    await settle();
    expect(ctx.store.values['tfd.rank']).toBe('1');
    expect(page.querySelector('[data-chart="tfd-graph"]')?.getAttribute('data-rank')).toBe('1');
    expect(page.querySelector('[data-table="tfd-iterators"] [data-role="count"]')?.getAttribute('data-total')).toBe('1');
    // Deep link.
    const deep = tfDataPage(context('tf_data_bottleneck_analysis', tfDataTables(), { 'tfd.rank': '1' }));
    expect(deep.querySelector<HTMLSelectElement>('[data-role="tfd-rank"]')!.value).toBe('1');
  });

  it('explains a refused Graphviz and still lists the iterators', async () => {
    previous = setTfDataDotRenderer(async () => {
      throw new Error('WebAssembly.instantiate(): Refused to compile or instantiate WebAssembly module');
    });
    const page = tfDataPage(context('tf_data_bottleneck_analysis', tfDataTables()));
    document.body.replaceChildren(page);
    await settle();
    expect(page.querySelector('[data-role="tfd-graph-error"]')?.textContent).toContain('not allowed to run');
    expect(page.querySelector('[data-table="tfd-iterators"]')).not.toBeNull();
  });

  it('shows the message of a profile without tf.data events', () => {
    const empty = tfDataTables().map((t) => ({ ...t, rows: [] }));
    empty[2]!.p = { is_input_bound: 'false', summary_message: 'No tf.data activity captured in your profile.' };
    const page = tfDataPage(context('tf_data_bottleneck_analysis', empty));
    expect(page.querySelector('[data-role="tfd-empty"]')?.textContent).toBe('No tf.data activity captured in your profile.');
  });
});

describe('memory viewer sizes in readable units (issue: a 16-byte buffer read "0.00 MiB")', () => {
  it('small and large buffers keep their magnitude', async () => {
    const { bufferDetails } = await import('../src/pages/memory_viewer');
    const mib = 1024 * 1024;
    const small = bufferDetails({ index: 0, name: 'tiny', sizeMib: 16 / mib, unpaddedMib: 16 / mib, color: '#000', object: {} } as never);
    const large = bufferDetails({ index: 1, name: 'big', sizeMib: 16, unpaddedMib: 16, color: '#000', object: {} } as never);
    expect(small.find(([k]) => k === 'Size')?.[1]).toBe('16 B');
    expect(large.find(([k]) => k === 'Size')?.[1]).toBe('16 MiB');
  });
});
