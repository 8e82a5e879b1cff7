// Holistic Trace Analysis' views of a PyTorch run (oxprof's hta_* tools): the distributed
// page (one row per rank: HTA's temporal breakdown as a stacked bar and a table, comm-comp
// overlap, communication kernels, slowest rank per step) and the GPU idle page (idle time
// by cause per stream, kernel launch statistics, longest launch delays, queue length per
// stream). The reports are oxprof's typed JSON; each part becomes a sortable table.

import { chartElement } from '../components/chart';
import { card } from '../components/common';
import { renderTable } from '../components/table';
import type { Column, DataTable } from '../datatable';
import { h } from '../dom';
import type { PageContext } from '../page';
import { type RevealTarget, timelineHref } from '../timeline';
import type { CellValue } from '../datatable';

type Json = Record<string, unknown>;

/** `[id, label, type]` columns and rows of values as a DataTable. */
export function tableOf(columns: [string, string, 'number' | 'string'][], rows: unknown[][]): DataTable {
  const cols: Column[] = columns.map(([id, label, type]) => ({ id, label, type }));
  return { cols, rows: rows.map((r) => ({ c: r.map((v) => ({ v: v ?? null })) })) };
}

/**
 * The host (profile file) of a rank: from the report's ranks when it names them, else the
 * page's host (ALL_HOSTS: every host merged).
 */
function hostOfRank(ctx: PageContext, rank: unknown): string {
  for (const key of ['ranks', 'hosts']) {
    const hit = list(ctx.data, key).find((r) => r.rank === rank && typeof r.host === 'string');
    if (hit) return hit.host as string;
  }
  return ctx.state.host || 'ALL_HOSTS';
}

/** A "Show in timeline" link per row: `target` of the row's values, on the row's rank's host (column `rank`). */
function timelineAction(ctx: PageContext, ids: string[], target: (row: CellValue[]) => RevealTarget | null) {
  const rank = ids.indexOf('rank');
  return {
    label: 'Timeline',
    role: 'show-in-timeline',
    title: 'Show it in the trace viewer of its rank',
    href: (row: CellValue[]) => {
      const t = target(row);
      return t ? timelineHref(ctx.state, t, rank >= 0 ? hostOfRank(ctx, row[rank]) : undefined) : null;
    },
  };
}

function list(data: unknown, key: string): Json[] {
  const value = (data as Json | null)?.[key];
  return Array.isArray(value) ? (value as Json[]) : [];
}

function num(v: unknown): number | null {
  return typeof v === 'number' ? v : null;
}

export interface RankBreakdown {
  rank: number;
  idle: number | null;
  compute: number | null;
  nonCompute: number | null;
}

/** The per-rank percentages of HTA's temporal breakdown (null without GPU events). */
export function rankBreakdowns(data: unknown): RankBreakdown[] {
  return list(data, 'ranks').map((r) => {
    const t = (r.temporal ?? null) as Json | null;
    return { rank: Number(r.rank), idle: num(t?.idle_time_pctg), compute: num(t?.compute_time_pctg), nonCompute: num(t?.non_compute_time_pctg) };
  });
}

export function htaDistributedPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page hta-distributed', 'data-page': 'hta_distributed' });
  const ranks = list(ctx.data, 'ranks');
  const breakdowns = rankBreakdowns(ctx.data);
  const withGpu = breakdowns.filter((b) => b.idle !== null);
  const series = (name: string, pick: (b: RankBreakdown) => number | null, color: string) => ({
    name,
    type: 'bar',
    stack: 'time',
    itemStyle: { color },
    data: withGpu.map((b) => pick(b) ?? 0),
  });
  page.append(
    card(
      'GPU time per rank (HTA temporal breakdown)',
      h('p', { class: 'muted' }, 'From the first GPU event to the last on each rank: idle (nothing running), compute (a computation kernel running) and non-compute (communication, memory copies, other GPU work).'),
      withGpu.length
        ? chartElement(
            'hta-temporal',
            {
              tooltip: { trigger: 'axis' },
              legend: {},
              xAxis: { type: 'category', name: 'rank', data: withGpu.map((b) => String(b.rank)) },
              yAxis: { type: 'value', name: '%', max: 100 },
              series: [series('Idle', (b) => b.idle, '#d62728'), series('Compute', (b) => b.compute, '#2ca02c'), series('Non-compute', (b) => b.nonCompute, '#4e79a7')],
            },
            undefined,
            320,
          )
        : h('p', { class: 'empty-chart', 'data-role': 'no-gpu' }, 'No GPU activity in this run (a CPU-only PyTorch trace): HTA\'s breakdown needs kernels.'),
    ),
  );
  const rankTable = tableOf(
    [
      ['rank', 'Rank', 'number'],
      ['host', 'Host', 'string'],
      ['kernel_time_us', 'GPU span (µs)', 'number'],
      ['idle_time_us', 'Idle (µs)', 'number'],
      ['compute_time_us', 'Compute (µs)', 'number'],
      ['non_compute_time_us', 'Non-compute (µs)', 'number'],
      ['idle_time_pctg', 'Idle share', 'number'],
      ['compute_time_pctg', 'Compute share', 'number'],
      ['non_compute_time_pctg', 'Non-compute share', 'number'],
      ['comm_time_us', 'Communication (µs)', 'number'],
      ['comp_comm_overlap_pctg', 'Comm–comp overlap', 'number'],
      ['comm_kernels', 'Comm kernels', 'number'],
      ['steps', 'Steps', 'number'],
      ['mean_step_us', 'Mean step (µs)', 'number'],
      ['slowest_in', 'Slowest in steps', 'number'],
    ],
    ranks.map((r) => {
      const t = (r.temporal ?? {}) as Json;
      const o = (r.overlap ?? {}) as Json;
      const s = (r.steps ?? {}) as Json;
      return [r.rank, r.host, t.kernel_time_us, t.idle_time_us, t.compute_time_us, t.non_compute_time_us, t.idle_time_pctg, t.compute_time_pctg, t.non_compute_time_pctg, o.comm_time_us, o.comp_comm_overlap_pctg, r.comm_kernels, s.steps, s.mean_step_us, s.slowest_in];
    }),
  );
  page.append(
    renderTable(
      rankTable,
      {
        key: 'hta-ranks',
        title: 'Ranks',
        csvName: 'hta_ranks',
        defaultSort: { column: 'rank', direction: 'asc' },
        // HTA's percentages (0-100) as percentages.
        formats: { idle_time_pctg: 'percent', compute_time_pctg: 'percent', non_compute_time_pctg: 'percent', comp_comm_overlap_pctg: 'percent' },
      },
      ctx.view,
    ),
  );
  const ops = list(ctx.data, 'comm_ops');
  page.append(
    renderTable(
      tableOf(
        [
          ['rank', 'Rank', 'number'],
          ['name', 'Kernel', 'string'],
          ['calls', 'Calls', 'number'],
          ['total_us', 'Total (µs)', 'number'],
          ['mean_us', 'Mean (µs)', 'number'],
          ['min_us', 'Min (µs)', 'number'],
          ['max_us', 'Max (µs)', 'number'],
        ],
        ops.map((o) => [o.rank, o.name, o.calls, o.total_us, o.mean_us, o.min_us, o.max_us]),
      ),
      {
        key: 'hta-comm',
        title: 'Communication kernels',
        csvName: 'hta_comm_kernels',
        emptyText: 'No communication kernels (nccl…, hccl…).',
        rowAction: timelineAction(ctx, ['rank', 'name'], (r) => (typeof r[1] === 'string' ? { name: r[1], track: 'stream' } : null)),
      },
      ctx.view,
    ),
  );
  const steps = list(ctx.data, 'steps');
  page.append(
    renderTable(
      tableOf(
        [
          ['step', 'Step', 'number'],
          ['ranks', 'Ranks', 'number'],
          ['slowest_rank', 'Slowest rank', 'number'],
          ['slowest_us', 'Slowest (µs)', 'number'],
          ['fastest_us', 'Fastest (µs)', 'number'],
          ['mean_us', 'Mean (µs)', 'number'],
        ],
        steps.map((s) => [s.step, s.ranks, s.slowest_rank, s.slowest_us, s.fastest_us, s.mean_us]),
      ),
      {
        key: 'hta-steps',
        title: 'Slowest rank per step',
        csvName: 'hta_stragglers',
        emptyText: 'No ProfilerStep recorded by two or more ranks.',
        // The step on its slowest rank.
        rowAction: timelineAction(ctx, ['step', 'ranks', 'rank'], (r) => (r[0] === null ? null : { name: `ProfilerStep#${String(r[0])}` })),
      },
      ctx.view,
    ),
  );
  return page;
}

export function htaGpuIdlePage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page hta-gpu-idle', 'data-page': 'hta_gpu_idle' });
  const idle = list(ctx.data, 'idle');
  page.append(
    renderTable(
      tableOf(
        [
          ['rank', 'Rank', 'number'],
          ['stream', 'Stream', 'number'],
          ['idle_category', 'Cause', 'string'],
          ['idle_time_us', 'Idle (µs)', 'number'],
          ['gaps', 'Gaps', 'number'],
          ['idle_time_ratio', 'Share of stream idle', 'number'],
        ],
        idle.map((r) => [r.rank, r.stream, r.idle_category, r.idle_time_us, r.gaps, r.idle_time_ratio]),
      ),
      {
        key: 'hta-idle',
        // A share (0..1), shown as one: 99%, not 0.99.
        formats: { idle_time_ratio: 'fraction-percent' },
        title: 'GPU idle time by cause',
        description: 'host_wait: the launch came after the previous kernel ended; kernel_wait: a gap under 30 µs between back-to-back kernels; other: the rest.',
        csvName: 'hta_idle_time',
        emptyText: 'No GPU kernels, copies or sets.',
      },
      ctx.view,
    ),
  );
  const summary = list(ctx.data, 'launch_summary');
  page.append(
    renderTable(
      tableOf(
        [
          ['rank', 'Rank', 'number'],
          ['launches', 'Launches', 'number'],
          ['mean_cpu_duration_us', 'Mean launch (µs)', 'number'],
          ['mean_gpu_duration_us', 'Mean GPU (µs)', 'number'],
          ['mean_launch_delay_us', 'Mean delay (µs)', 'number'],
          ['max_launch_delay_us', 'Max delay (µs)', 'number'],
          ['short_kernels', 'Short kernels', 'number'],
          ['runtime_outliers', 'Launches > 50 µs', 'number'],
          ['launch_delay_outliers', 'Delays > 100 µs', 'number'],
        ],
        summary.map((s) => [s.rank, s.launches, s.mean_cpu_duration_us, s.mean_gpu_duration_us, s.mean_launch_delay_us, s.max_launch_delay_us, s.short_kernels, s.runtime_outliers, s.launch_delay_outliers]),
      ),
      { key: 'hta-launch', title: 'Kernel launches', description: 'Short kernels run shorter on the GPU than their launch took on the CPU.', csvName: 'hta_launches' },
      ctx.view,
    ),
  );
  const worst = list(ctx.data, 'worst_launches');
  page.append(
    renderTable(
      tableOf(
        [
          ['rank', 'Rank', 'number'],
          ['correlation', 'Correlation', 'number'],
          ['launch_name', 'Launch', 'string'],
          ['kernel_name', 'Kernel', 'string'],
          ['cpu_duration', 'Launch (µs)', 'number'],
          ['gpu_duration', 'GPU (µs)', 'number'],
          ['launch_delay', 'Delay (µs)', 'number'],
        ],
        worst.map((l) => [l.rank, l.correlation, l.launch_name, l.kernel_name, l.cpu_duration, l.gpu_duration, l.launch_delay]),
      ),
      {
        key: 'hta-worst',
        title: 'Longest launch delays',
        csvName: 'hta_worst_launches',
        defaultSort: { column: 'launch_delay', direction: 'desc' },
        formats: { correlation: 'id' },
        // The kernel of the launch, found by its correlation id on its rank.
        rowAction: timelineAction(ctx, ['rank', 'correlation', 'launch_name', 'kernel_name'], (r) => (r[1] === null ? null : { corr: String(r[1]), name: typeof r[3] === 'string' ? r[3] : undefined })),
      },
      ctx.view,
    ),
  );
  const queue = list(ctx.data, 'queue_length');
  page.append(
    renderTable(
      tableOf(
        [
          ['rank', 'Rank', 'number'],
          ['stream', 'Stream', 'number'],
          ['count', 'Samples', 'number'],
          ['mean', 'Mean', 'number'],
          ['std', 'Std', 'number'],
          ['min', 'Min', 'number'],
          ['p25', '25%', 'number'],
          ['p50', 'Median', 'number'],
          ['p75', '75%', 'number'],
          ['max', 'Max', 'number'],
        ],
        queue.map((q) => [q.rank, q.stream, q.count, q.mean, q.std, q.min, q.p25, q.p50, q.p75, q.max]),
      ),
      { key: 'hta-queue', title: 'Queue length per stream', description: 'Operations launched but not yet started on the stream, sampled at each change.', csvName: 'hta_queue_length' },
      ctx.view,
    ),
  );
  return page;
}
