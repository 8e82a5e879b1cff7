// PyTorch (Kineto) traces: torch-tb-profiler's overview, operator, kernel, memory and module views. The
// server sends each view's tables as DataTables named by their `name` property
// (`crates/oxprof-pytorch/src/`); these pages chart and list them.

import { findingsCard } from '../components/findings';
import { categoryColor, chartElement, PALETTE } from '../components/chart';
import { card } from '../components/common';
import { renderTable } from '../components/table';
import { pieOption, pieSlices, stepGraphOption, type StepGraph } from '../charts';
import { asTables, cellValue, columnIndex, type DataTable } from '../datatable';
import { h } from '../dom';
import type { PageContext } from '../page';
import { type RevealTarget, timelineHref } from '../timeline';
import type { CellValue } from '../datatable';

const ROLE_IDS = ['kernel', 'memcpy', 'memset', 'communication', 'runtime', 'dataloader', 'cpu_exec', 'other'];

function named(ctx: PageContext, name: string): DataTable | undefined {
  return asTables(ctx.data).find((t) => t.p?.name === name);
}

function titled(table: DataTable, fallback: string): string {
  return table.p?.title || fallback;
}

/** A "Show in timeline" link per row: the slice named by column `col` (maybe on a preferred track). */
function timelineAction(ctx: PageContext, table: DataTable, col: string, target: (name: string) => RevealTarget = (name) => ({ name })) {
  const i = columnIndex(table, col);
  if (i < 0) return undefined;
  return {
    label: 'Timeline',
    role: 'show-in-timeline',
    title: 'Show it in the trace viewer (its longest occurrence, every occurrence highlighted)',
    href: (row: CellValue[]) => {
      const v = row[i];
      return typeof v === 'string' && v && v !== 'Average' ? timelineHref(ctx.state, target(v)) : null;
    },
  };
}

/** The steps (not the Average row) as a stacked graph, in milliseconds. */
function breakdownGraph(table: DataTable): StepGraph {
  const rows = (table.rows ?? []).filter((r) => cellValue(r, 0) !== 'Average');
  const cols = table.cols ?? [];
  const series = ROLE_IDS.map((id, i) => {
    const index = columnIndex(table, id);
    return { id, name: cols[index]?.label ?? id, color: categoryColor(id) ?? PALETTE[i % PALETTE.length] ?? '#888', values: rows.map((r) => Number(cellValue(r, index) ?? 0) / 1000) };
  }).filter((s) => s.values.some((v) => v > 0));
  return { steps: rows.map((r) => String(cellValue(r, 0))), series, tooltips: rows.map(() => '') };
}

/** torch-tb-profiler writes its links as `<a href="…" target="_blank">text</a>`: real links here, the rest as text. */
function recommendation(text: string): HTMLElement {
  const li = h('li', null);
  const link = /<a href="([^"]*)" target="_blank">([^<]*)<\/a>/g;
  let last = 0;
  for (const m of text.matchAll(link)) {
    li.append(text.slice(last, m.index));
    const url = m[1] ?? '';
    li.append(/^https:\/\//.test(url) ? h('a', { href: url, target: '_blank', rel: 'noopener' }, m[2] ?? url) : (m[2] ?? ''));
    last = (m.index ?? 0) + m[0].length;
  }
  li.append(text.slice(last));
  return li;
}

export function pytorchOverviewPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page pytorch-overview', 'data-page': 'pytorch_overview' });
  const findings = findingsCard(ctx);
  if (findings) page.append(findings);
  const steps = named(ctx, 'step_breakdown');
  const gpus = named(ctx, 'gpus');
  const recs = named(ctx, 'recommendations');
  if (steps) {
    const graph = breakdownGraph(steps);
    page.append(
      card(
        'Step time breakdown',
        graph.series.length ? chartElement('pytorch-steps', stepGraphOption(graph, 'Step time (ms)'), undefined, 320) : h('p', { class: 'muted' }, 'Every step is empty.'),
      ),
      renderTable(
        steps,
        {
          key: 'steps',
          title: titled(steps, 'Steps'),
          csvName: 'pytorch_steps',
          formats: Object.fromEntries([...ROLE_IDS, 'total'].map((id) => [id, 'us'])),
          rowAction: timelineAction(ctx, steps, steps.cols?.[0]?.id ?? 'step', (step) => ({ name: /^\d+$/.test(step) ? `ProfilerStep#${step}` : step })),
        },
        ctx.view,
      ),
    );
  }
  if (gpus && (gpus.rows ?? []).length) {
    page.append(
      renderTable(
        gpus,
        {
          key: 'gpus',
          title: titled(gpus, 'GPU summary'),
          csvName: 'pytorch_gpus',
          formats: { gpu: 'integer', sm_count: 'integer', utilization: 'fraction-percent', sm_efficiency: 'fraction-percent', tensor_core_ratio: 'fraction-percent', achieved_occupancy: 'percent' },
        },
        ctx.view,
      ),
    );
  } else {
    page.append(card('GPU summary', h('p', { 'data-role': 'no-gpu' }, 'No GPU kernels in this trace (a CPU-only run).')));
  }
  const texts = (recs?.rows ?? []).map((r) => String(cellValue(r, 0) ?? ''));
  page.append(
    card(
      'Performance recommendations',
      texts.length ? h('ul', { 'data-role': 'recommendations' }, ...texts.map(recommendation)) : h('p', { class: 'muted', 'data-role': 'recommendations' }, 'None: nothing stands out.'),
    ),
  );
  return page;
}

export function pytorchOpStatsPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page pytorch-op-stats', 'data-page': 'pytorch_op_stats' });
  const byName = named(ctx, 'by_name');
  if (byName) {
    const device = columnIndex(byName, 'device_self_us');
    const host = columnIndex(byName, 'host_self_us');
    const name = columnIndex(byName, 'name');
    const rows = byName.rows ?? [];
    const useDevice = rows.some((r) => Number(cellValue(r, device) ?? 0) > 0);
    const slices = pieSlices(rows.map((r) => [String(cellValue(r, name) ?? ''), Number(cellValue(r, useDevice ? device : host) ?? 0)]), 10);
    page.append(
      card(
        useDevice ? 'Top operators by device self time' : 'Top operators by host self time',
        slices.length ? chartElement('pytorch-ops', pieOption(`${useDevice ? 'Device' : 'Host'} self time, top 10 operators`, slices, 'µs'), undefined, 380) : h('p', { class: 'muted' }, 'No operators.'),
      ),
    );
  }
  const formats = { calls: 'integer', device_self_us: 'us', device_total_us: 'us', host_self_us: 'us', host_total_us: 'us', tc_self_ratio: 'fraction-percent', tc_total_ratio: 'fraction-percent' } as const;
  for (const table of asTables(ctx.data)) {
    const key = String(table.p?.name ?? 'ops');
    page.append(renderTable(table, { key, title: titled(table, key), csvName: `pytorch_ops_${key}`, formats, filterColumns: ['name', 'input_shape', 'call_stack'], filterPlaceholder: 'Filter by operator name', emptyText: 'No operators in this trace.', rowAction: timelineAction(ctx, table, 'name') }, ctx.view));
  }
  return page;
}

export function pytorchKernelStatsPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page pytorch-kernel-stats', 'data-page': 'pytorch_kernel_stats' });
  const byName = named(ctx, 'by_name');
  const rows = byName?.rows ?? [];
  if (byName) {
    const name = columnIndex(byName, 'name');
    const total = columnIndex(byName, 'total_us');
    const slices = pieSlices(rows.map((r) => [String(cellValue(r, name) ?? ''), Number(cellValue(r, total) ?? 0)]), 10);
    page.append(
      card(
        'Top kernels by total time',
        slices.length
          ? chartElement('pytorch-kernels', pieOption('Total kernel time, top 10 kernels', slices, 'µs'), undefined, 380)
          : h('p', { class: 'empty-chart', 'data-role': 'no-kernels' }, 'No GPU kernels in this trace (a CPU-only run).'),
      ),
    );
  }
  const formats = { calls: 'integer', registers_per_thread: 'integer', shared_memory: 'bytes', total_us: 'us', mean_us: 'us', max_us: 'us', min_us: 'us', mean_occupancy_pct: 'percent' } as const;
  for (const table of asTables(ctx.data)) {
    const key = String(table.p?.name ?? 'kernels');
    page.append(renderTable(table, { key, title: titled(table, key), csvName: `pytorch_kernels_${key}`, formats, filterColumns: ['name', 'operator'], filterPlaceholder: 'Filter by kernel or operator', emptyText: 'No GPU kernels in this trace.', rowAction: timelineAction(ctx, table, 'name', (name) => ({ name, track: 'stream' })) }, ctx.view));
  }
  return page;
}

/** One device's allocated and reserved bytes over time as a step chart, in MiB against ms. */
function memoryCurveOption(device: string, points: [number, number, number][]): Record<string, unknown> {
  const mib = 1024 * 1024;
  const series = (name: string, index: 1 | 2, color: string) => ({
    name,
    type: 'line',
    step: 'end',
    showSymbol: false,
    sampling: 'lttb',
    color,
    data: points.map((p) => [p[0] / 1000, p[index] / mib]),
  });
  return {
    title: { text: `${device} memory`, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis', valueFormatter: (v: number) => `${Number(v).toFixed(3)} MiB` },
    legend: { top: 24 },
    grid: { top: 60, left: 70, right: 24, bottom: 50 },
    xAxis: { type: 'value', name: 'Time (ms)', nameLocation: 'middle', nameGap: 28, scale: true },
    yAxis: { type: 'value', name: 'MiB' },
    dataZoom: [{ type: 'inside' }],
    series: [series('Allocated', 1, PALETTE[0] ?? '#4285f4'), series('Reserved', 2, PALETTE[1] ?? '#db4437')],
  };
}

// torch-tb-profiler's memory view: this page rather than XProf's memory_profile page, whose body
// is XProf's MemoryProfile proto (per-allocator snapshots, HLO buffers) and shares nothing with it.
export function pytorchMemoryPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page pytorch-memory', 'data-page': 'pytorch_memory' });
  const devices = named(ctx, 'devices');
  const curve = named(ctx, 'curve');
  if (!devices || !(devices.rows ?? []).length) {
    page.append(card('Memory', h('p', { class: 'muted', 'data-role': 'no-memory' }, 'No memory events in this trace: record with torch.profiler.profile(profile_memory=True).')));
    return page;
  }
  if (curve) {
    const dev = columnIndex(curve, 'device');
    const [t, a, r] = ['time_us', 'allocated_bytes', 'reserved_bytes'].map((id) => columnIndex(curve, id));
    const byDevice = new Map<string, [number, number, number][]>();
    for (const row of curve.rows ?? []) {
      const name = String(cellValue(row, dev) ?? '');
      const list = byDevice.get(name) ?? [];
      list.push([Number(cellValue(row, t ?? 0) ?? 0), Number(cellValue(row, a ?? 0) ?? 0), Number(cellValue(row, r ?? 0) ?? 0)]);
      byDevice.set(name, list);
    }
    for (const [name, points] of byDevice) {
      page.append(card(`Memory curve: ${name}`, chartElement(`pytorch-memory-${name}`, memoryCurveOption(name, points), undefined, 320)));
    }
  }
  const formats = {
    peak_allocated_bytes: 'bytes',
    curve_points: 'integer',
    events: 'integer',
    operators: 'integer',
    size_bytes: 'bytes',
    allocation_us: 'us',
    release_us: 'us',
    duration_us: 'us',
    calls: 'integer',
  } as const;
  page.append(renderTable(devices, { key: 'devices', title: titled(devices, 'Memory by device'), csvName: 'pytorch_memory_devices', formats }, ctx.view));
  for (const key of ['events', 'operators']) {
    const table = named(ctx, key);
    if (!table) continue;
    page.append(
      renderTable(
        table,
        {
          key,
          title: titled(table, key),
          csvName: `pytorch_memory_${key}`,
          formats,
          filterColumns: ['device', 'operator', 'name'],
          filterPlaceholder: 'Filter by device or operator',
          emptyText: 'None.',
          // An allocation: the operator that made it, its run nearest the allocation's time.
          rowAction:
            key === 'events'
              ? {
                  label: 'Timeline',
                  role: 'show-in-timeline',
                  title: 'Show the operator that allocated it, at that time, in the trace viewer',
                  href: (row: CellValue[]) => {
                    const op = row[columnIndex(table, 'operator')];
                    const at = Number(row[columnIndex(table, 'allocation_us')]);
                    return typeof op === 'string' && op ? timelineHref(ctx.state, { name: op, at: Number.isFinite(at) ? at * 1e6 : undefined }) : null;
                  },
                }
              : timelineAction(ctx, table, 'name'),
        },
        ctx.view,
      ),
    );
  }
  return page;
}

// torch-tb-profiler's module view: the nn.Module hierarchy (rows depth first, each under its
// parent, names indented by depth) with each module's calls and host/device time.
export function pytorchModulesPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page pytorch-modules', 'data-page': 'pytorch_modules' });
  const table = named(ctx, 'modules');
  const rows = table?.rows ?? [];
  if (!table || !rows.length) {
    page.append(card('Modules', h('p', { class: 'muted', 'data-role': 'no-modules' }, 'No nn.Module events in this trace: record with torch.profiler.profile(with_stack=True).')));
    return page;
  }
  const [name, id, device, host, depth] = ['name', 'module_id', 'device_self_us', 'host_self_us', 'depth'].map((c) => columnIndex(table, c));
  const useDevice = rows.some((r) => Number(cellValue(r, device ?? 0) ?? 0) > 0);
  // A module's numbers are those of all its calls wherever it sits: count each module once.
  const once = new Map<string, [string, number]>();
  for (const r of rows) {
    const label = String(cellValue(r, name ?? 0) ?? '');
    once.set(`${label}#${String(cellValue(r, id ?? 0) ?? '')}`, [label, Number(cellValue(r, (useDevice ? device : host) ?? 0) ?? 0)]);
  }
  const slices = pieSlices([...once.values()], 10);
  page.append(
    card(
      useDevice ? 'Top modules by device self time' : 'Top modules by host self time',
      slices.length ? chartElement('pytorch-modules', pieOption(`${useDevice ? 'Device' : 'Host'} self time, top 10 modules`, slices, 'µs'), undefined, 380) : h('p', { class: 'muted' }, 'Every module is empty.'),
    ),
  );
  const formats = { depth: 'integer', module_id: 'integer', occurrences: 'integer', operators: 'integer', host_total_us: 'us', host_self_us: 'us', device_total_us: 'us', device_self_us: 'us', mean_us: 'us' } as const;
  page.append(
    renderTable(
      table,
      {
        key: 'modules',
        title: titled(table, 'Modules'),
        csvName: 'pytorch_modules',
        formats,
        keyColumns: ['name'],
        filterColumns: ['path'],
        filterPlaceholder: 'Filter by module or parent',
        renderCell: (col, value, row) =>
          col === 'name' ? h('span', { class: 'module-name', style: `padding-left: ${Number(row[depth ?? 0] ?? 0) * 1.2}em` }, String(value ?? '')) : null,
        emptyText: 'No modules.',
      },
      ctx.view,
    ),
  );
  return page;
}
