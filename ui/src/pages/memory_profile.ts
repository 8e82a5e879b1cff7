// Memory profile: the allocator activity of a TensorFlow host (XProf's memory_profile JSON).
// A memory ID (allocator) selector kept in the URL (`memory_id`); the summary at the peak;
// the timeline (stack, heap and free memory as stacked areas, fragmentation on a second
// axis) with the allocation or deallocation under the pointer in a details card; the
// memory breakdown table of the allocations active at the peak (sort, filter, CSV).
// Data shaping follows XProf's frontend (memory_profile_summary.ts,
// memory_timeline_graph.ts, memory_breakdown_table.ts); the shaping functions are pure.

import { chartElement, disposeChartsIn } from '../components/chart';
import { card, metric } from '../components/common';
import { renderProperties, renderTable } from '../components/table';
import type { DataTable } from '../datatable';
import { escapeHtml, h, replaceChildren } from '../dom';
import { formatMillis } from '../format';
import type { PageContext } from '../page';

/** proto int64 fields arrive as strings. */
type Int = string | number;

export interface ActivityMetadata {
  memoryActivity?: string;
  requestedBytes?: Int;
  allocationBytes?: Int;
  address?: Int;
  tfOpName?: string;
  stepId?: Int;
  regionType?: string;
  dataType?: string;
  tensorShape?: string;
}

export interface AggregationStats {
  stackReservedBytes?: Int;
  heapAllocatedBytes?: Int;
  freeMemoryBytes?: Int;
  fragmentation?: number | string;
  peakBytesInUse?: Int;
}

export interface MemorySnapshot {
  timeOffsetPs?: Int;
  aggregationStats?: AggregationStats;
  activityMetadata?: ActivityMetadata;
}

export interface PerAllocator {
  memoryProfileSnapshots?: MemorySnapshot[];
  sampledTimelineSnapshots?: MemorySnapshot[];
  profileSummary?: {
    peakBytesUsageLifetime?: Int;
    peakStats?: AggregationStats;
    peakStatsTimePs?: Int;
    memoryCapacity?: Int;
  };
  activeAllocations?: { snapshotIndex?: Int; specialIndex?: Int; numOccurrences?: Int }[];
  specialAllocations?: ActivityMetadata[];
}

export interface MemoryProfileData {
  memoryProfilePerAllocator?: Record<string, PerAllocator>;
  numHosts?: number;
  memoryIds?: string[];
  version?: number;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

/** A proto number (int64 string, number, "NaN") as a JS number; 0 when absent or not a number. */
export function num(v: Int | undefined | null): number {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
}

/** XProf's `humanReadableText` (binary units, 2 decimals): `48.00 MiB`. */
export function humanBytes(bytes: number, dp = 2): string {
  const units = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'Zi', 'Yi'];
  if (!Number.isFinite(bytes)) return '-';
  const sign = bytes < 0 ? '-' : '';
  const abs = Math.abs(bytes);
  const i = abs === 0 ? 0 : Math.min(units.length - 1, Math.max(0, Math.floor(Math.log(abs) / Math.log(1024))));
  const n = abs > 0 && abs < 1 ? abs.toExponential(dp) : (abs / Math.pow(1024, i)).toFixed(dp);
  return `${sign}${n} ${units[i]}B`;
}

/** The snapshots the timeline and the counts use: the sampled ones for version 1 (XProf's rule). */
export function timelineSnapshots(data: MemoryProfileData, memoryId: string): MemorySnapshot[] {
  const allocator = data.memoryProfilePerAllocator?.[memoryId];
  if (!allocator) return [];
  return (data.version === 1 ? allocator.sampledTimelineSnapshots : allocator.memoryProfileSnapshots) ?? [];
}

export interface MemorySummary {
  numAllocations: number;
  numDeallocations: number;
  memoryCapacity: number;
  peakHeapLifetime: number;
  peakMemoryUsage: number;
  peakTimeMs: number;
  stack: number;
  heap: number;
  free: number;
  /** Fraction (0..1); NaN when the allocator reports none. */
  fragmentation: number;
}

/** The summary card's values (XProf's memory_profile_summary.ts; counts over the timeline snapshots). */
export function memorySummary(data: MemoryProfileData, memoryId: string): MemorySummary | null {
  const allocator = data.memoryProfilePerAllocator?.[memoryId];
  const summary = allocator?.profileSummary;
  const peak = summary?.peakStats;
  if (!allocator || !summary || !peak) return null;
  let numAllocations = 0;
  let numDeallocations = 0;
  for (const s of timelineSnapshots(data, memoryId)) {
    const activity = s.activityMetadata?.memoryActivity;
    if (activity === 'ALLOCATION') numAllocations++;
    else if (activity === 'DEALLOCATION') numDeallocations++;
  }
  return {
    numAllocations,
    numDeallocations,
    memoryCapacity: num(summary.memoryCapacity),
    peakHeapLifetime: num(summary.peakBytesUsageLifetime),
    peakMemoryUsage: num(peak.peakBytesInUse),
    peakTimeMs: num(summary.peakStatsTimePs) / 1e9,
    stack: num(peak.stackReservedBytes),
    heap: num(peak.heapAllocatedBytes),
    free: num(peak.freeMemoryBytes),
    fragmentation: Number(peak.fragmentation ?? NaN),
  };
}

export interface TimelinePoint {
  timeMs: number;
  stack: number;
  heap: number;
  free: number;
  /** Percent (0..100), 0 when unknown (as XProf draws it). */
  fragmentationPct: number;
  snapshot: MemorySnapshot;
}

export interface Timeline {
  points: TimelinePoint[];
  /** Whether any snapshot reports free memory (CPU allocators do not: no free area then). */
  hasFree: boolean;
}

/**
 * The timeline's points in bytes, sorted by time (XProf's drawChart: snapshots without a
 * time or statistics are left out; the free area only when some snapshot has free memory).
 */
export function memoryTimeline(data: MemoryProfileData, memoryId: string): Timeline {
  const snapshots = [...timelineSnapshots(data, memoryId)].sort((a, b) => num(a.timeOffsetPs) - num(b.timeOffsetPs));
  const hasFree = snapshots.some((s) => s.aggregationStats && num(s.aggregationStats.freeMemoryBytes) !== 0);
  const points: TimelinePoint[] = [];
  for (const s of snapshots) {
    const stats = s.aggregationStats;
    if (!stats || !num(s.timeOffsetPs)) continue;
    const fragmentation = Number(stats.fragmentation);
    points.push({
      timeMs: num(s.timeOffsetPs) / 1e9,
      stack: num(stats.stackReservedBytes),
      heap: num(stats.heapAllocatedBytes),
      free: hasFree ? num(stats.freeMemoryBytes) : 0,
      fragmentationPct: Number.isFinite(fragmentation) ? fragmentation * 100 : 0,
      snapshot: s,
    });
  }
  return { points, hasFree };
}

/**
 * The details of one allocation or deallocation (XProf's timeline tooltip, in readable
 * units): `[label, value]` pairs; sizes negative for deallocations.
 */
export function eventDetails(point: TimelinePoint): [string, string][] {
  const m = point.snapshot.activityMetadata ?? {};
  const sign = m.memoryActivity === 'DEALLOCATION' ? -1 : 1;
  const out: [string, string][] = [['Time', formatMillis(point.timeMs)]];
  out.push(['Event', (m.memoryActivity ?? '').toLowerCase()]);
  if (num(m.requestedBytes) > 0) out.push(['Requested size', humanBytes(sign * num(m.requestedBytes))]);
  out.push(['Allocation size', humanBytes(sign * num(m.allocationBytes))]);
  if (m.tfOpName) out.push(['TF op', m.tfOpName]);
  if (m.stepId !== undefined && m.stepId !== '') out.push(['Step id', String(m.stepId)]);
  if (m.regionType) out.push(['Region type', m.regionType]);
  if (m.dataType && m.dataType !== 'INVALID') out.push(['Data type', m.dataType]);
  if (m.tensorShape) out.push(['Shape', m.tensorShape]);
  out.push(['Memory in use', humanBytes(point.stack + point.heap)]);
  return out;
}

/** Index of the point nearest to `timeMs` (points sorted by time); -1 when there are none. */
export function nearestPoint(points: TimelinePoint[], timeMs: number): number {
  if (!points.length) return -1;
  let lo = 0;
  let hi = points.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((points[mid]?.timeMs ?? 0) < timeMs) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs((points[lo - 1]?.timeMs ?? 0) - timeMs) <= Math.abs((points[lo]?.timeMs ?? 0) - timeMs)) return lo - 1;
  return lo;
}

/**
 * The memory breakdown table: one row per allocation active at the peak, its metadata
 * from the snapshot it was made in (`snapshotIndex` into memoryProfileSnapshots) or from
 * the special allocations (`specialIndex`), sizes in MiB. XProf's own table hides rows
 * requesting under 0.001 GiB; oxprof shows them all.
 */
export function breakdownTable(data: MemoryProfileData, memoryId: string): DataTable {
  const allocator = data.memoryProfilePerAllocator?.[memoryId];
  const snapshots = allocator?.memoryProfileSnapshots ?? [];
  const special = allocator?.specialAllocations ?? [];
  const rows: DataTable['rows'] = [];
  for (const active of allocator?.activeAllocations ?? []) {
    const index = num(active.snapshotIndex);
    const metadata = index >= 0 ? snapshots[index]?.activityMetadata : special[num(active.specialIndex)];
    if (!metadata) continue;
    rows.push({
      c: [
        { v: metadata.tfOpName ?? '' },
        { v: num(metadata.allocationBytes) / MIB },
        { v: num(metadata.requestedBytes) / MIB },
        { v: num(active.numOccurrences) },
        { v: metadata.regionType ?? '' },
        { v: metadata.dataType ?? '' },
        { v: metadata.tensorShape ?? '' },
      ],
    });
  }
  return {
    cols: [
      { id: 'op_name', label: 'Op name', type: 'string' },
      { id: 'allocation_mib', label: 'Allocation size (MiB)', type: 'number' },
      { id: 'requested_mib', label: 'Requested size (MiB)', type: 'number' },
      { id: 'occurrences', label: 'Occurrences', type: 'number' },
      { id: 'region_type', label: 'Region type', type: 'string' },
      { id: 'data_type', label: 'Data type', type: 'string' },
      { id: 'shape', label: 'Shape', type: 'string' },
    ],
    rows,
  };
}

/** XProf's warning: the last sampled snapshot is in step < 1 (or there are none). */
export function hasIncompleteSteps(data: MemoryProfileData, memoryId: string): boolean {
  const allocator = data.memoryProfilePerAllocator?.[memoryId];
  const snapshots = allocator?.sampledTimelineSnapshots;
  if (!snapshots) return false;
  const last = snapshots[snapshots.length - 1];
  return snapshots.length === 0 || num(last?.activityMetadata?.stepId) < 1;
}

/** Unit of the timeline's memory axis: GiB from 1 GiB of peak usage on, else MiB. */
export function memoryUnit(peakBytes: number): { name: string; bytes: number } {
  return peakBytes >= GIB ? { name: 'GiB', bytes: GIB } : { name: 'MiB', bytes: MIB };
}

/** ECharts option of the timeline (stacked stack/heap/free areas; fragmentation on the right axis). */
export function timelineOption(timeline: Timeline, summary: MemorySummary | null): Record<string, unknown> {
  const used = Math.max(0, ...timeline.points.map((p) => p.stack + p.heap));
  const free = Math.max(0, ...timeline.points.map((p) => p.free));
  const unit = memoryUnit(used);
  // Free memory usually dwarfs the usage (GiBs free, MiBs used): hidden at first, shown from the legend.
  const hideFree = timeline.hasFree && free > 10 * used;
  const area = (name: string, color: string, pick: (p: TimelinePoint) => number) => ({
    name,
    type: 'line',
    stack: 'memory',
    step: 'end',
    symbol: 'none',
    sampling: undefined,
    lineStyle: { width: 1, color },
    itemStyle: { color },
    areaStyle: { color, opacity: 0.55 },
    data: timeline.points.map((p) => [p.timeMs, pick(p) / unit.bytes]),
  });
  const series: Record<string, unknown>[] = [area('Stack', '#e15759', (p) => p.stack), area('Heap', '#f28e2b', (p) => p.heap)];
  if (timeline.hasFree) series.push(area('Free', '#59a14f', (p) => p.free));
  series.push({
    name: 'Fragmentation',
    type: 'line',
    yAxisIndex: 1,
    step: 'end',
    symbol: 'none',
    lineStyle: { type: 'dashed', width: 1, color: '#4e79a7' },
    itemStyle: { color: '#4e79a7' },
    data: timeline.points.map((p) => [p.timeMs, p.fragmentationPct]),
    markLine: summary
      ? {
          symbol: 'none',
          silent: true,
          label: { formatter: 'peak', position: 'insideEndTop' },
          lineStyle: { color: '#b00020', type: 'solid' },
          data: [{ xAxis: summary.peakTimeMs }],
        }
      : undefined,
  });
  return {
    animation: false,
    tooltip: {
      trigger: 'axis',
      confine: true,
      axisPointer: { type: 'line' },
      formatter: (params: { dataIndex: number }[]) => {
        // Compact: the details card beside the chart has all the fields.
        const point = timeline.points[params[0]?.dataIndex ?? -1];
        if (!point) return '';
        const d = Object.fromEntries(eventDetails(point));
        const op = d['TF op'] ?? '';
        return [
          `${escapeHtml(d.Time ?? '')} · <b>${escapeHtml(d.Event ?? '')}</b> ${escapeHtml(d['Allocation size'] ?? '')}`,
          op ? escapeHtml(op.length > 60 ? `…${op.slice(-59)}` : op) : '',
          `in use: <b>${escapeHtml(d['Memory in use'] ?? '')}</b>`,
        ]
          .filter(Boolean)
          .join('<br>');
      },
    },
    legend: { top: 0, selected: hideFree ? { Free: false } : {} },
    grid: { left: 70, right: 60, top: 36, bottom: 70 },
    xAxis: { type: 'value', name: 'Time (ms)', nameLocation: 'middle', nameGap: 26, scale: true },
    yAxis: [
      { type: 'value', name: `Memory (${unit.name})`, min: 0 },
      { type: 'value', name: 'Fragmentation (%)', min: 0, max: 100, splitLine: { show: false } },
    ],
    dataZoom: [{ type: 'inside', filterMode: 'none' }, { type: 'slider', bottom: 8, height: 18, filterMode: 'none' }],
    series,
  };
}

export function memoryProfilePage(ctx: PageContext): HTMLElement {
  const data = (ctx.data ?? {}) as MemoryProfileData;
  const page = h('div', { class: 'page memory-profile', 'data-page': 'memory_profile' });
  const ids = (data.memoryIds ?? []).filter((id) => data.memoryProfilePerAllocator?.[id]);
  if (!ids.length || !num(data.numHosts)) {
    page.append(
      card(
        'Memory profile',
        h(
          'p',
          { class: 'empty-chart', 'data-role': 'mp-empty' },
          'There is no memory profile to display: the profile holds no memory activity (allocations and deallocations) in the captured duration. ' +
            'TensorFlow records them for its allocators when profiling with host_trace_level >= 2; JAX profiles have none.',
        ),
      ),
    );
    return page;
  }
  const wanted = ctx.view.get('memory_id');
  let memoryId = ids.includes(wanted) ? wanted : (ids[0] ?? '');
  const select = h(
    'select',
    { 'data-role': 'mp-memory-id', 'aria-label': 'Memory ID' },
    ids.map((id) => h('option', { value: id }, id)),
  );
  select.value = memoryId;
  const body = h('div', { class: 'mp-body' });
  page.append(
    card(
      null,
      h(
        'div',
        { class: 'controls' },
        h('label', { class: 'selector' }, h('span', null, 'Memory ID'), select),
        h('span', { class: 'muted' }, 'The allocator (device) whose memory is shown.'),
      ),
    ),
    body,
  );
  select.addEventListener('change', () => {
    memoryId = select.value;
    ctx.view.set('memory_id', memoryId === ids[0] ? null : memoryId);
    render();
  });

  const render = () => {
    disposeChartsIn(body);
    const summary = memorySummary(data, memoryId);
    const timeline = memoryTimeline(data, memoryId);
    const details = h(
      'div',
      { class: 'details-card card mp-details', 'data-role': 'mp-details' },
      h('p', { class: 'muted' }, 'Hover over the timeline to see the allocation or deallocation at that time.'),
    );
    const showPoint = (index: number) => {
      const point = timeline.points[index];
      if (!point || details.dataset.index === String(index)) return;
      details.dataset.index = String(index);
      const m = point.snapshot.activityMetadata ?? {};
      replaceChildren(
        details,
        h('h3', null, m.memoryActivity === 'DEALLOCATION' ? 'Deallocation' : 'Allocation'),
        renderProperties(eventDetails(point), 'mp-event'),
      );
    };
    const summaryCard = summary
      ? card(
          'Memory profile summary',
          h(
            'div',
            { class: 'metrics', 'data-role': 'mp-summary' },
            metric('#Allocation', String(summary.numAllocations), 'allocations'),
            metric('#Deallocation', String(summary.numDeallocations), 'deallocations'),
            metric('Memory capacity', humanBytes(summary.memoryCapacity), 'capacity'),
            metric('Lifetime peak heap usage', humanBytes(summary.peakHeapLifetime), 'peak-heap', 'high-water mark in the lifetime, may be outside the profile'),
            metric('Profile-window peak memory usage', humanBytes(summary.peakMemoryUsage), 'peak-usage', 'stack + heap, within the profile'),
          ),
          h('h3', null, 'At the peak'),
          renderProperties(
            [
              ['Time of the peak', formatMillis(summary.peakTimeMs)],
              ['Stack reservation', humanBytes(summary.stack)],
              ['Heap allocation', humanBytes(summary.heap)],
              ['Free memory', humanBytes(summary.free)],
              ['Fragmentation', Number.isFinite(summary.fragmentation) ? `${(summary.fragmentation * 100).toFixed(2)}%` : '-'],
            ],
            'mp-peak',
          ),
          h('p', { class: 'muted' }, 'Stack reservation + heap allocation + free memory = memory capacity. Fragmentation = 1 − largest free chunk / total free memory (lower is better).'),
        )
      : card('Memory profile summary', h('p', { class: 'muted' }, 'This allocator has no summary.'));
    const warning = hasIncompleteSteps(data, memoryId)
      ? h('p', { class: 'diag diag-warning', 'data-role': 'mp-incomplete' }, 'Steps may be incomplete. For accurate results, profile for longer.')
      : null;
    const chart = timeline.points.length
      ? chartElement(
          'memory-timeline',
          timelineOption(timeline, summary),
          (c) => {
            c.getZr().on('mousemove', (e) => {
              const point = [e.offsetX, e.offsetY];
              if (!c.containPixel('grid', point)) return;
              const converted = c.convertFromPixel({ xAxisIndex: 0 }, point[0] ?? 0) as number[] | number;
              const x = Array.isArray(converted) ? converted[0] : converted;
              if (typeof x === 'number') showPoint(nearestPoint(timeline.points, x));
            });
          },
          420,
        )
      : h('p', { class: 'empty-chart', 'data-role': 'mp-no-timeline' }, 'No memory activity to draw for this allocator.');
    const hiddenFree = timeline.hasFree && Math.max(0, ...timeline.points.map((p) => p.free)) > 10 * Math.max(0, ...timeline.points.map((p) => p.stack + p.heap));
    replaceChildren(
      body,
      summaryCard,
      card(
        'Memory timeline',
        warning,
        h('div', { class: 'mp-layout' }, h('div', { class: 'mp-chart' }, chart), details),
        h(
          'p',
          { class: 'muted' },
          `${timeline.points.length} allocations and deallocations${data.version === 1 ? ' (sampled by XProf\'s rule, at most 1000)' : ''}. Drag the slider or use the wheel to zoom; click a legend entry to hide or show it.` +
            (hiddenFree ? ' Free memory is hidden at first because it dwarfs the usage.' : ''),
        ),
      ),
      renderTable(
        breakdownTable(data, memoryId),
        {
          key: 'mp-breakdown',
          title: 'Memory breakdown at the peak (active allocations)',
          csvName: `memory_breakdown_${memoryId}`,
          filterColumns: ['op_name'],
          filterPlaceholder: 'Filter by op name',
          defaultSort: { column: 'allocation_mib', direction: 'desc' },
          emptyText: 'No allocations were active at the peak.',
        },
        ctx.view,
      ),
    );
  };
  render();
  return page;
}
