import { describe, expect, it } from 'vitest';
import { pieSlices, stepGraph, stepGraphOption } from '../src/charts';
import { type DataTable, findTableWithColumn } from '../src/datatable';
import { COMPUTE_GREEN, INPUT_RED } from '../src/components/chart';
import { selfTimeSlices } from '../src/pages/framework_op_stats';
import { workersOf, type PodViewerData } from '../src/pages/pod_viewer';
import { fixture } from './helpers';

describe('step-time graph', () => {
  const table = findTableWithColumn(fixture('overview_page.tf_custom_loop.json'), 'stepnum');
  it('stacks the categories named by step_time_graph_column_ids, input red and compute green', () => {
    const graph = stepGraph(table ?? {});
    expect(graph.steps).toHaveLength(28);
    expect(graph.steps[0]).toBe('train 1');
    expect(graph.series.map((s) => s.id)).toEqual([
      'deviceComputeTimeMs',
      'deviceToDeviceTimeMs',
      'deviceCollectivesTimeMs',
      'hostComputeTimeMs',
      'kernelLaunchTimeMs',
      'infeedTimeMs',
      'outfeedTimeMs',
      'compileTimeMs',
      'otherTimeMs',
    ]);
    expect(graph.series.find((s) => s.id === 'infeedTimeMs')?.color).toBe(INPUT_RED);
    expect(graph.series.find((s) => s.id === 'deviceComputeTimeMs')?.color).toBe(COMPUTE_GREEN);
    expect(graph.series.find((s) => s.id === 'infeedTimeMs')?.values[0]).toBe(20.975681);
    // Stack sums equal the step time column.
    const total = graph.series.reduce((sum, s) => sum + (s.values[0] ?? 0), 0);
    expect(total).toBeCloseTo(23.120271, 5);
    const option = stepGraphOption(graph) as { series: { stack: string }[] };
    expect(option.series.every((s) => s.stack === 'step')).toBe(true);
  });
  it('uses the TPU columns when the table has them', () => {
    const tpu = findTableWithColumn(fixture('overview_page.tpu_inference_2.json'), 'stepnum');
    const graph = stepGraph(tpu ?? {});
    expect(graph.series[0]?.id).toBe('tcComputeTimeMs');
    expect(graph.series.find((s) => s.id === 'tcInfeedTimeMs')?.color).toBe(INPUT_RED);
  });
});

describe('pies', () => {
  it('sums by name, keeps the top N and adds Other', () => {
    const slices = pieSlices(
      [
        ['a', 1],
        ['b', 5],
        ['a', 2],
        ['c', 0.5],
        ['d', 0],
      ],
      2,
    );
    expect(slices).toEqual([
      { name: 'b', value: 5 },
      { name: 'a', value: 3 },
      { name: 'Other', value: 0.5 },
    ]);
  });
  it('groups framework ops by type on the host', () => {
    const [withIdle = {}, withoutIdle = {}] = fixture('framework_op_stats.tf_custom_loop.json') as DataTable[];
    const host = selfTimeSlices(withIdle, 'Host', 'type');
    expect(host[0]?.name).toBe('IDLE');
    expect(selfTimeSlices(withoutIdle, 'Host', 'type').some((s) => s.name === 'IDLE')).toBe(false);
    expect(selfTimeSlices(withoutIdle, 'Device', 'type')).toEqual([]);
  });
});

describe('pod viewer', () => {
  it('lists the workers of a step', () => {
    const data = fixture('pod_viewer.gpu_multi_worker.json') as PodViewerData;
    const workers = workersOf(data.podStatsSequence?.podStatsMap?.[0]);
    expect(workers).toHaveLength(1);
    expect(workers[0]?.stats.totalDurationUs).toBe(21310.352);
  });
});

describe('pie layout (issue: HLO stats labels overlapped the legend)', () => {
  it('labels stay inside the sectors and the pie ends before the legend at any chart width', async () => {
    const { pieOption, PIE_LAYOUT } = await import('../src/charts');
    const option = pieOption('t', [{ name: 'a', value: 1 }, { name: 'b', value: 2 }], 'µs') as { series: { label: { position: string }; labelLine: { show: boolean } }[] };
    expect(option.series[0]?.label.position).toBe('inside');
    expect(option.series[0]?.labelLine.show).toBe(false);
    // ECharts' radius % is of half the smaller side; the charts are 320-400 px high.
    for (const [w, hgt] of [[380, 320], [520, 340], [700, 400], [1400, 400]] as const) {
      const right = PIE_LAYOUT.centerX * w + (PIE_LAYOUT.radius * Math.min(w, hgt)) / 2;
      expect(right, `${w}x${hgt}`).toBeLessThan(PIE_LAYOUT.legendLeft * w);
    }
  });
});

describe('text alternatives of charts', () => {
  it('describe the kind, title, series and largest values', async () => {
    const { describeChart } = await import('../src/components/chart');
    const { pieOption, stepGraphOption } = await import('../src/charts');
    const pie = describeChart(pieOption('Time per HLO category', [{ name: 'fusion', value: 75 }, { name: 'copy', value: 25 }], 'µs'));
    expect(pie).toBe('Pie chart: Time per HLO category. 2 sectors; largest: fusion 75%, copy 25%.');
    const bars = describeChart(
      stepGraphOption({ steps: ['1', '2'], tooltips: ['', ''], series: [{ id: 'a', name: 'Compute', color: '#000', values: [3, 5] }, { id: 'b', name: 'Input', color: '#f00', values: [1, 4] }] }),
    );
    expect(bars).toBe('Bar chart: Step time (ms). 2 categories; series: Compute, Input. Largest: 2 at 9.');
  });
});
