// GPU kernel stats: pie of the top kernels by total duration, and the full kernel table
// (sort, filter by kernel or op name, CSV export). On PyTorch runs it shows
// `pytorch_kernel_stats` (kernels by name and by launching operator).

import { chartElement } from '../components/chart';
import { card } from '../components/common';
import { renderTable } from '../components/table';
import { pieOption, pieSlices } from '../charts';
import { asTables, cellValue, columnIndex } from '../datatable';
import { h } from '../dom';
import type { PageContext } from '../page';
import { timelineHref } from '../timeline';
import { pytorchKernelStatsPage } from './pytorch';

export function kernelStatsPage(ctx: PageContext): HTMLElement {
  // PyTorch runs: torch-tb-profiler's kernel view (`pytorch_kernel_stats`) on this page.
  if (asTables(ctx.data).some((t) => t.p?.name === 'by_name_op')) return pytorchKernelStatsPage(ctx);
  const table = asTables(ctx.data)[0] ?? { cols: [], rows: [] };
  const page = h('div', { class: 'page kernel-stats', 'data-page': 'kernel_stats' });
  const name = columnIndex(table, 'kernel_name');
  const total = columnIndex(table, 'total_duration_us');
  const slices = pieSlices(
    (table.rows ?? []).map((r) => [String(cellValue(r, name) ?? ''), Number(cellValue(r, total) ?? 0)]),
    10,
  );
  page.append(
    card(
      'Top kernels by total duration',
      h('div', { class: 'controls' }, h('div', { class: 'spacer' }), h('a', { class: 'button', href: ctx.csvUrl, 'data-role': 'server-csv', download: '' }, 'Export as CSV (server)')),
      slices.length
        ? chartElement('top-kernels', pieOption('Total kernel duration, top 10 kernels', slices, 'µs'), undefined, 400)
        : h('p', { class: 'empty-chart', 'data-role': 'no-kernels' }, 'No GPU kernels in this profile (kernel stats need a GPU profile).'),
    ),
  );
  page.append(
    renderTable(
      table,
      {
        key: 'kernels',
        title: 'Kernels',
        csvName: 'kernel_stats',
        formats: { rank: 'integer', occurrences: 'integer', registers_per_thread: 'integer', shmem_bytes: 'integer', occupancy_pct: 'percent' },
        filterColumns: ['kernel_name', 'op_name'],
        keyColumns: ['kernel_name', 'op_name', 'occurrences', 'total_duration_us', 'avg_duration_us', 'min_duration_us', 'max_duration_us', 'occupancy_pct'],
        filterPlaceholder: 'Filter by kernel or op name',
        emptyText: 'No GPU kernels in this profile.',
        rowAction: { label: 'Timeline', title: 'Show this kernel in the trace viewer (its longest run, every run highlighted)', role: 'show-in-timeline', href: (row) => (typeof row[name] === 'string' && row[name] ? timelineHref(ctx.state, { name: row[name] as string, track: 'stream' }) : null) },
      },
      ctx.view,
    ),
  );
  return page;
}
