// Memory viewer: XLA's buffer assignment of one HLO module (XProf's memory viewer JSON,
// `/data?tag=memory_viewer&module_name=M&memory_space=0`). Loads its own data: the module
// selector lists `/module_list` and is kept in the URL (`module_name`, as the graph
// viewer). Shows the memory overview (peak allocation with and without padding and
// fragmentation...), the working space over program order with the peak, and the buffers
// live at the peak by program order and by size; hovering a buffer draws its lifetime on
// the working-space chart and shows its details card. Maths as XProf's memory_usage.ts.

import { PROFILE_PREFIX, buildUrl, getJson } from '../api';
import { type Chart, PALETTE, chartElement, disposeChartsIn } from '../components/chart';
import { card, metric } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import { costliestFirst, fetchModuleList, fillModuleSelect, graphViewerHref, traceProgramTimes } from '../components/xla';
import type { DataTable } from '../datatable';
import { escapeHtml, h, replaceChildren } from '../dom';
import type { PageContext } from '../page';
import { formatBytes, formatMiB } from '../format';

export interface HeapObject {
  numbered?: number;
  label?: string;
  logicalBufferId?: number;
  logicalBufferSizeMib?: number;
  unpaddedShapeMib?: number;
  instructionName?: string;
  shapeString?: string;
  tfOpName?: string;
  groupName?: string;
  opCode?: string;
  sourceInfo?: { fileName?: string; lineNumber?: number; stackFrame?: string };
}

export interface MemoryViewerData {
  moduleName?: string;
  heapSizes?: number[];
  unpaddedHeapSizes?: number[];
  hloInstructionNames?: string[];
  maxHeap?: HeapObject[];
  maxHeapBySize?: HeapObject[];
  logicalBufferSpans?: Record<string, { start?: number; limit?: number }>;
  peakHeapMib?: number;
  peakUnpaddedHeapMib?: number;
  peakHeapSizePosition?: number;
  entryComputationParametersMib?: number;
  totalBufferAllocationMib?: number;
  indefiniteBufferAllocationMib?: number;
  maxScopedVmemAllocationMib?: number;
  maxScopedVmemInstructionName?: string;
  nonReusableMib?: number;
  maybeLiveOutMib?: number;
  bufferBlocks?: BufferBlock[];
}

/** A block of XProf's buffer allocation timeline: a buffer at an offset of its allocation over a step range. */
export interface BufferBlock {
  logicalBufferId?: number;
  name?: string;
  offset?: number;
  size?: number;
  startStep?: number;
  endStep?: number;
  tfOpName?: string;
  category?: string;
  shapeString?: string;
  unpaddedSize?: number;
  color?: string;
  sourceInfo?: HeapObject['sourceInfo'];
}

const MIB = 1024 * 1024;
const SVG_NS = 'http://www.w3.org/2000/svg';

export interface MemoryOverview {
  /** Peak of the heap simulation (MiB; with the max scoped VMEM on TPU VMEM spaces). */
  peakMib: number;
  /** Total buffer allocation (MiB): the peak with fragmentation. */
  totalMib: number;
  paddingOverheadMib: number;
  argumentsMib: number;
  tempWithoutFragmentationMib: number;
  tempWithFragmentationMib: number;
  /** Fraction of the temporaries lost to fragmentation. */
  tempFragmentation: number;
  maxScopedVmemMib: number;
  maxScopedVmemInstruction: string;
  peakUnpaddedMib: number;
}

/** The overview numbers (XProf's MemoryUsage.initMemoryUsageFromPrecomputed and MemoryViewerMain.update). */
export function memoryOverview(d: MemoryViewerData): MemoryOverview {
  const total = d.totalBufferAllocationMib ?? 0;
  const peak = d.peakHeapMib ?? 0;
  const indefinite = d.indefiniteBufferAllocationMib ?? 0;
  const tempWithout = peak - indefinite;
  const tempWith = total - indefinite;
  const scoped = d.maxScopedVmemAllocationMib ?? 0;
  return {
    peakMib: scoped > 0 ? tempWithout + scoped : peak,
    totalMib: scoped > 0 ? tempWith + scoped : total,
    paddingOverheadMib: peak - (d.peakUnpaddedHeapMib ?? 0),
    argumentsMib: d.entryComputationParametersMib ?? 0,
    tempWithoutFragmentationMib: tempWithout,
    tempWithFragmentationMib: tempWith,
    tempFragmentation: tempWith ? (total - peak) / tempWith : 0,
    maxScopedVmemMib: scoped,
    maxScopedVmemInstruction: d.maxScopedVmemInstructionName ?? '',
    peakUnpaddedMib: d.peakUnpaddedHeapMib ?? 0,
  };
}

/** A buffer live at the peak, with its colour (its index in program order, as XProf). */
export interface PeakBuffer {
  /** Index in program order (`maxHeap`). */
  index: number;
  /** The instruction's name, else XProf's label (e.g. `small (<16384 bytes)` for the small buffers summed). */
  name: string;
  object: HeapObject;
  sizeMib: number;
  unpaddedMib: number;
  color: string;
}

/** The buffers at the peak in program order, and the same sorted by size (largest first, stable). */
export function peakBuffers(d: MemoryViewerData): { byOrder: PeakBuffer[]; bySize: PeakBuffer[] } {
  const byOrder = (d.maxHeap ?? []).map((object, index) => ({
    index,
    name: object.instructionName || object.label || '',
    object,
    sizeMib: object.logicalBufferSizeMib ?? 0,
    unpaddedMib: object.unpaddedShapeMib ?? 0,
    color: PALETTE[index % PALETTE.length] ?? '#888',
  }));
  const bySize = [...byOrder].sort((a, b) => b.sizeMib - a.sizeMib || a.index - b.index);
  return { byOrder, bySize };
}

/**
 * The program-order span `[alloc, free]` of a buffer (XProf's getLogicalBufferSpan): its
 * `logicalBufferSpans` entry (a missing start is 0; a negative limit, or no entry, runs to
 * the last program point).
 */
export function bufferSpan(d: MemoryViewerData, id: number | undefined): [number, number] {
  const last = Math.max(0, (d.heapSizes?.length ?? 0) - 1);
  if (id === undefined) return [0, last];
  const span = d.logicalBufferSpans?.[String(id)];
  if (!span) return [0, last];
  const limit = span.limit ?? 0;
  return [span.start ?? 0, limit < 0 ? last : limit];
}

/** A block placed on the allocation timeline (x in steps, y in bytes from the bottom). */
export interface PlacedBlock {
  block: BufferBlock;
  x: number;
  width: number;
  y: number;
  height: number;
  color: string;
  /** Whole allocations drawn as frames (no logical buffer): not selectable. */
  container: boolean;
}

/**
 * The buffer allocation timeline's blocks (XProf's buffer_allocation_timeline.ts layout):
 * each block spans its steps and its bytes at its offset; blocks without a logical buffer
 * (or of an `Allocation…` category) are containers; blocks without a colour get one per
 * category. Empty blocks are left out.
 */
export function placeBlocks(d: MemoryViewerData): PlacedBlock[] {
  const colors = new Map<string, string>();
  const out: PlacedBlock[] = [];
  for (const block of d.bufferBlocks ?? []) {
    const size = block.size ?? 0;
    if (size <= 0) continue;
    const start = block.startStep ?? 0;
    const category = block.category || 'default';
    const container = block.logicalBufferId === undefined || block.logicalBufferId === -1 || category.startsWith('Allocation');
    let color = block.color;
    if (!color) {
      if (category.startsWith('Allocation')) color = '#ffffff';
      else {
        if (!colors.has(category)) colors.set(category, PALETTE[colors.size % PALETTE.length] ?? '#888');
        color = colors.get(category) ?? '#888';
      }
    }
    out.push({ block, x: start, width: (block.endStep ?? 0) - start, y: block.offset ?? 0, height: size, color, container });
  }
  return out;
}

/** A timeline block as a buffer for the details card (its own step range is its lifetime). */
export function blockBuffer(p: PlacedBlock, index: number): PeakBuffer {
  const b = p.block;
  return {
    index,
    name: b.name ?? '',
    object: {
      instructionName: b.name,
      logicalBufferId: b.logicalBufferId,
      logicalBufferSizeMib: (b.size ?? 0) / MIB,
      unpaddedShapeMib: b.unpaddedSize !== undefined ? b.unpaddedSize / MIB : undefined,
      shapeString: b.shapeString,
      tfOpName: b.tfOpName,
      groupName: b.category,
      sourceInfo: b.sourceInfo,
    },
    sizeMib: (b.size ?? 0) / MIB,
    unpaddedMib: (b.unpaddedSize ?? 0) / MIB,
    color: p.color,
  };
}

/** The details card's rows for a buffer (XProf's buffer_details.ts). */
export function bufferDetails(b: PeakBuffer): [string, string][] {
  const o = b.object;
  const out: [string, string][] = [];
  out.push(['Name', b.name]);
  if (o.opCode) out.push(['Category', `${o.opCode} operation`]);
  out.push(['Size', `${formatMiB(b.sizeMib)}`]);
  if (b.unpaddedMib) {
    out.push(['Unpadded size', `${formatMiB(b.unpaddedMib)}`]);
    const utilization = b.sizeMib ? b.unpaddedMib / b.sizeMib : 1;
    if (utilization < 1) {
      out.push(['Extra memory due to padding', `${formatMiB((b.sizeMib - b.unpaddedMib))}`]);
      out.push(['Expansion', `${(1 / utilization).toFixed(1)}×`]);
    }
  }
  if (o.shapeString) out.push(['Shape', o.shapeString]);
  if (o.tfOpName) out.push(['Framework op', o.tfOpName]);
  if (o.groupName) out.push(['Allocation type', o.groupName]);
  if (o.sourceInfo?.fileName) out.push(['Source', `${o.sourceInfo.fileName}:${o.sourceInfo.lineNumber ?? -1}`]);
  return out;
}

/** ECharts option of the working space over program order: heap and unpadded heap, the peak lines, the selected buffer's lifetime. */
export function workingSpaceOption(d: MemoryViewerData): Record<string, unknown> {
  const heap = d.heapSizes ?? [];
  const unpadded = d.unpaddedHeapSizes ?? [];
  const names = d.hloInstructionNames ?? [];
  const peakAt = (d.peakHeapSizePosition ?? 0) + 1;
  const peak = d.peakHeapMib ?? 0;
  return {
    animation: false,
    tooltip: {
      trigger: 'axis',
      confine: true,
      formatter: (params: { dataIndex: number; seriesName: string }[]) => {
        const p = params.find((x) => x.seriesName === 'Size') ?? params[0];
        const i = p?.dataIndex ?? 0;
        return [
          `Program order: <b>${i}</b>`,
          `Size: <b>${formatMiB((heap[i] ?? 0))}</b>`,
          `Unpadded size: <b>${unpadded.length ? formatMiB(unpadded[i] ?? 0) : 'NA'}</b>`,
          `HLO instruction: <b>${escapeHtml(names[i] ?? '')}</b>`,
        ].join('<br>');
      },
    },
    legend: { top: 0 },
    grid: { left: 70, right: 30, top: 36, bottom: 50 },
    xAxis: { type: 'value', name: 'Program order', nameLocation: 'middle', nameGap: 26, min: 0, max: Math.max(1, heap.length - 1) },
    yAxis: { type: 'value', name: 'Allocated heap (MiB)', min: 0 },
    series: [
      {
        name: 'Size',
        type: 'line',
        symbol: 'none',
        z: 3,
        lineStyle: { width: 2, color: '#4e79a7' },
        itemStyle: { color: '#4e79a7' },
        data: heap.map((v, i) => [i, v]),
        markLine: {
          symbol: 'none',
          silent: true,
          lineStyle: { color: '#2ca02c', type: 'dashed', width: 1.5 },
          label: { formatter: (p: { name: string }) => p.name },
          data: [
            { name: `peak ${formatMiB(peak)}`, yAxis: peak, label: { position: 'insideEndTop' } },
            { name: 'peak', xAxis: peakAt, label: { position: 'end' } },
          ],
        },
      },
      {
        name: 'Unpadded size',
        type: 'line',
        symbol: 'none',
        z: 2,
        // A wide light band under the padded line (they are often equal).
        lineStyle: { width: 5, color: '#f28e2b', opacity: 0.45 },
        itemStyle: { color: '#f28e2b' },
        data: unpadded.map((v, i) => [i, v]),
      },
      {
        name: 'Selected buffer',
        type: 'line',
        symbol: 'none',
        silent: true,
        lineStyle: { width: 2, color: '#888' },
        itemStyle: { color: '#888' },
        areaStyle: { opacity: 0.5, color: '#888' },
        data: [],
      },
    ],
  };
}

/** ECharts option of the buffers at the peak as columns (one per buffer, in the given order). */
export function buffersOption(buffers: PeakBuffer[], title: string): Record<string, unknown> {
  return {
    animation: false,
    title: { text: title, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: {
      trigger: 'item',
      confine: true,
      formatter: (p: { dataIndex: number }) => {
        const b = buffers[p.dataIndex];
        if (!b) return '';
        return `<b>${escapeHtml(b.name)}</b><br>${formatMiB(b.sizeMib)}<br>${escapeHtml(b.object.shapeString ?? '')}`;
      },
    },
    grid: { left: 60, right: 16, top: 32, bottom: 24 },
    xAxis: { type: 'category', data: buffers.map((b) => b.name), axisLabel: { show: false }, axisTick: { show: false } },
    yAxis: { type: 'value', name: 'MiB', min: 0 },
    series: [
      {
        type: 'bar',
        barCategoryGap: '8%',
        emphasis: { itemStyle: { borderColor: '#000', borderWidth: 1 } },
        data: buffers.map((b) => ({ value: b.sizeMib, itemStyle: { color: b.color } })),
      },
    ],
  };
}

/** The buffers at the peak as a table (program order, sizes in MiB). */
export function buffersTable(buffers: PeakBuffer[]): DataTable {
  return {
    cols: [
      { id: 'order', label: 'Program order', type: 'number' },
      { id: 'name', label: 'Name', type: 'string' },
      { id: 'size_mib', label: 'Size (MiB)', type: 'number' },
      { id: 'unpadded_mib', label: 'Unpadded size (MiB)', type: 'number' },
      { id: 'shape', label: 'Shape', type: 'string' },
      { id: 'op_code', label: 'Category', type: 'string' },
      { id: 'tf_op_name', label: 'Framework op', type: 'string' },
      { id: 'allocation_type', label: 'Allocation type', type: 'string' },
    ],
    rows: buffers.map((b) => ({
      c: [
        { v: b.index },
        { v: b.name },
        { v: b.sizeMib },
        { v: b.unpaddedMib },
        { v: b.object.shapeString ?? '' },
        { v: b.object.opCode ?? '' },
        { v: b.object.tfOpName ?? '' },
        { v: b.object.groupName ?? '' },
      ],
    })),
  };
}

/**
 * The buffer allocation timeline as SVG: one rectangle per block (x = steps, y = bytes,
 * offset 0 at the bottom, up to the highest block), scaled to the element; `onHover` gets the block under the pointer.
 */
export function allocationTimeline(blocks: PlacedBlock[], totalSteps: number, totalBytes: number, onHover: (block: PlacedBlock, index: number) => void): Element {
  const steps = Math.max(1, totalSteps, ...blocks.map((b) => b.x + b.width));
  // The blocks' extent (the heap's temporaries are a part of the peak): else the peak.
  const extent = Math.max(0, ...blocks.map((b) => b.y + b.height));
  const bytes = Math.max(1, extent || totalBytes);
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', `0 0 ${steps} ${bytes}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('class', 'mv-timeline');
  svg.setAttribute('data-role', 'mv-timeline');
  // Containers first (behind), then the buffers.
  const order = blocks.map((b, i) => ({ b, i })).sort((a, b) => Number(b.b.container) - Number(a.b.container));
  for (const { b, i } of order) {
    const rect = document.createElementNS(SVG_NS, 'rect');
    rect.setAttribute('x', String(b.x));
    rect.setAttribute('y', String(bytes - b.y - b.height));
    rect.setAttribute('width', String(Math.max(b.width, steps / 1000)));
    rect.setAttribute('height', String(b.height));
    rect.setAttribute('fill', b.container ? '#ffffff' : b.color);
    rect.setAttribute('class', b.container ? 'mv-block mv-container' : 'mv-block');
    rect.setAttribute('data-block', String(i));
    const title = document.createElementNS(SVG_NS, 'title');
    title.textContent = `${b.block.name ?? ''}: ${formatMiB(((b.block.size ?? 0) / MIB))}, steps ${b.x}–${b.x + b.width}`;
    rect.append(title);
    if (!b.container) rect.addEventListener('mouseenter', () => onHover(b, i));
    svg.append(rect);
  }
  const axis = h('div', { class: 'mv-timeline-axis muted' }, h('span', null, 'step 0'), h('span', null, `program steps → ${steps}`));
  return h('div', { class: 'mv-timeline-host' }, h('div', { class: 'mv-timeline-y muted' }, `scale: ${formatBytes(bytes)}`), svg, axis);
}

/** Loads a module's memory viewer JSON (replaceable in tests). */
export type MemoryViewerLoader = (run: string, module: string) => Promise<MemoryViewerData>;

let loader: MemoryViewerLoader = (run, module) =>
  // No `host`: XProf's frontend sends the module as the host, which oxprof rejects as an unknown host.
  getJson<MemoryViewerData>(buildUrl(`${PROFILE_PREFIX}/data`, { run, tag: 'memory_viewer', module_name: module, memory_space: '0' }));
let modulesOf: (run: string) => Promise<string[]> = fetchModuleList;

/** Replaces the data sources (tests); returns the previous ones. */
export function setMemoryViewerSources(next: { load?: MemoryViewerLoader; modules?: (run: string) => Promise<string[]> }): {
  load: MemoryViewerLoader;
  modules: (run: string) => Promise<string[]>;
} {
  const previous = { load: loader, modules: modulesOf };
  if (next.load) loader = next.load;
  if (next.modules) modulesOf = next.modules;
  return previous;
}

export function memoryViewerPage(ctx: PageContext): HTMLElement {
  const { run, host } = ctx.state;
  const view = ctx.view;
  const moduleSelect = h('select', { 'data-role': 'mv-module', 'aria-label': 'HLO module' }, h('option', { value: '' }, 'Loading modules…'));
  const status = h('div', { class: 'mv-status', 'data-role': 'mv-status' });
  const body = h('div', { class: 'mv-body', 'data-chart': 'memory-viewer', 'data-ready': 'false' });
  const page = h(
    'div',
    { class: 'page memory-viewer', 'data-page': 'memory_viewer' },
    card(null, h('div', { class: 'controls' }, h('label', { class: 'selector' }, h('span', null, 'Module'), moduleSelect), status)),
    body,
  );
  let seq = 0;

  const show = async (): Promise<void> => {
    const mine = ++seq;
    const module = moduleSelect.value;
    body.dataset.ready = 'false';
    body.dataset.module = module;
    disposeChartsIn(body);
    if (!module) {
      replaceChildren(body, card(null, h('p', { class: 'empty-chart', 'data-role': 'mv-no-module' }, 'This run has no HLO modules: the memory viewer needs XLA programs (JAX, or TensorFlow with XLA) in the profile.')));
      body.dataset.ready = 'true';
      return;
    }
    replaceChildren(status, h('span', { class: 'spinner' }), `Loading ${module}…`);
    let data: MemoryViewerData;
    try {
      data = await loader(run, module);
    } catch (e) {
      if (mine !== seq) return;
      replaceChildren(status);
      replaceChildren(body, h('div', { class: 'error', 'data-role': 'mv-error' }, h('p', null, e instanceof Error ? e.message : String(e))));
      body.dataset.ready = 'true';
      return;
    }
    if (mine !== seq) return;
    replaceChildren(status);
    renderModule(data, module);
  };

  const renderModule = (data: MemoryViewerData, module: string) => {
    const overview = memoryOverview(data);
    const { byOrder, bySize } = peakBuffers(data);
    const heap = data.heapSizes ?? [];
    const blocks = placeBlocks(data);
    const details = h('div', { class: 'details-card card mv-details', 'data-role': 'mv-details' }, h('p', { class: 'muted' }, 'Hover over a buffer to see its details and its lifetime on the chart above.'));
    let working: Chart | null = null;
    let active = '';
    /** Shows a buffer (at the peak, or a block of the allocation timeline with its own `span`). */
    const selectBuffer = (b: PeakBuffer | undefined, span?: [number, number], key = `peak-${b?.index}`) => {
      if (!b || key === active) return;
      active = key;
      const [alloc, free] = span ?? bufferSpan(data, b.object.logicalBufferId);
      working?.setOption({
        series: [{}, {}, { name: 'Selected buffer', lineStyle: { color: b.color }, itemStyle: { color: b.color }, areaStyle: { color: b.color, opacity: 0.5 }, data: [[alloc, b.sizeMib], [free, b.sizeMib]] }],
      });
      if (span) delete details.dataset.index;
      else details.dataset.index = String(b.index);
      details.dataset.selected = key;
      details.dataset.span = `${alloc},${free}`;
      const name = b.object.instructionName ?? '';
      replaceChildren(
        details,
        h('div', { class: 'op-details-header' }, h('span', { class: 'op-details-dot' }), h('span', { class: 'op-details-name' }, b.name)),
        renderProperties(bufferDetails(b), 'mv-buffer'),
        h('p', { class: 'muted' }, `Live from program order ${alloc} to ${free}.`),
        name ? h('a', { class: 'button', href: graphViewerHref(run, host, name, { module }), 'data-role': 'mv-graph-link' }, 'Graph viewer ›') : null,
      );
      const dot = details.querySelector<HTMLElement>('.op-details-dot');
      if (dot) dot.style.background = b.color;
    };
    const hoverable = (list: PeakBuffer[]) => (c: Chart) => {
      c.on('mouseover', (p) => selectBuffer(list[(p as { dataIndex: number }).dataIndex]));
    };
    const summary = card(
      `Module: ${module}`,
      h(
        'div',
        { class: 'metrics', 'data-role': 'mv-overview' },
        metric('Peak memory allocation', `${formatMiB(overview.peakMib)}`, 'peak', `${formatMiB(overview.totalMib)} with fragmentation`),
        metric('Peak without padding', `${formatMiB(overview.peakUnpaddedMib)}`, 'peak-unpadded', `${formatMiB(overview.paddingOverheadMib)} padding overhead`),
        metric('Arguments', `${formatMiB(overview.argumentsMib)}`, 'arguments', 'entry computation parameters'),
        metric('Temporaries', `${formatMiB(overview.tempWithoutFragmentationMib)}`, 'temporaries', `${formatMiB(overview.tempWithFragmentationMib)} over their lifetime with fragmentation (${(overview.tempFragmentation * 100).toFixed(2)}%)`),
        overview.maxScopedVmemMib > 0
          ? metric('Max scoped VMEM', `${formatMiB(overview.maxScopedVmemMib)}`, 'scoped-vmem', overview.maxScopedVmemInstruction)
          : null,
      ),
      h('p', { class: 'muted' }, "Changing the model's architecture, batch size or data dimensions may reduce the memory footprint."),
    );
    if (!heap.length && !byOrder.length) {
      replaceChildren(body, summary, card(null, h('p', { class: 'empty-chart', 'data-role': 'mv-empty' }, 'There is no buffer data to display for this module.')));
      body.dataset.ready = 'true';
      return;
    }
    replaceChildren(
      body,
      summary,
      card(
        'Working space over program order',
        heap.length
          ? chartElement('mv-working-space', workingSpaceOption(data), (c) => (working = c), 340)
          : h('p', { class: 'empty-chart' }, 'No heap simulation for this module.'),
      ),
      blocks.length
        ? card(
            'Buffer allocation timeline',
            h('p', { class: 'muted' }, 'Each block is a buffer at its offset (up) over the program steps it is live (across); white frames are whole allocations. Hover a block for its details.'),
            allocationTimeline(blocks, heap.length, (data.peakHeapMib ?? 0) * MIB, (p, i) => selectBuffer(blockBuffer(p, i), [p.x, p.x + p.width], `block-${i}`)),
          )
        : null,
      h(
        'div',
        { class: 'mv-layout' },
        card(
          'Buffers at the peak memory allocation',
          byOrder.length
            ? h(
                'div',
                { class: 'mv-buffer-charts' },
                chartElement('mv-by-order', buffersOption(byOrder, 'By program order'), hoverable(byOrder), 220),
                chartElement('mv-by-size', buffersOption(bySize, 'By buffer size'), hoverable(bySize), 220),
              )
            : h('p', { class: 'empty-chart' }, 'No buffers are live at the peak.'),
        ),
        details,
      ),
      renderTable(
        buffersTable(byOrder),
        {
          key: 'mv-buffers',
          title: 'Buffers at the peak',
          csvName: `memory_viewer_${module}`,
          filterColumns: ['name', 'shape', 'tf_op_name', 'op_code', 'allocation_type'],
          filterPlaceholder: 'Filter by name, shape or op',
          emptyText: 'No buffers are live at the peak.',
        },
        view,
      ),
    );
    // The charts are drawn in a microtask; ready once they are.
    queueMicrotask(() => queueMicrotask(() => (body.dataset.ready = 'true')));
  };

  moduleSelect.addEventListener('change', () => {
    view.set('module_name', moduleSelect.value || null);
    view.set('program_id', null);
    void show();
  });

  void (async () => {
    let modules: string[] = [];
    try {
      // Costliest first (its device time in op profile, else in the trace): the one to open when the URL names none.
      modules = await costliestFirst(await modulesOf(run), () => ctx.api.data(run, 'op_profile', ctx.state.host), () => traceProgramTimes(run));
    } catch (e) {
      replaceChildren(status, `Could not list the HLO modules: ${e instanceof Error ? e.message : String(e)}`);
    }
    const module = fillModuleSelect(moduleSelect, modules, view.get('module_name'), view.get('program_id'));
    if (module && module !== view.get('module_name')) view.set('module_name', module);
    await show();
  })();
  return page;
}
