// The compare view's pure parts: readable numbers, tables of a real comparison (the
// server's answer for testdata/diff slow_b32 → fast_b32, limit=4), links, the default B.
import { describe, expect, it } from 'vitest';
import {
  type RunDiff,
  breakdownOption,
  defaultRunB,
  formatEffect,
  formatPValue,
  formatRelative,
  memoryTable,
  opLinks,
  opsOf,
  opsTable,
  stepsTable,
  verdictText,
} from '../src/pages/compare';
import { fixture } from './helpers';

const diff = fixture('diff_slow_fast.json') as RunDiff;

describe('readable numbers', () => {
  it('relative changes are signed percentages, new when A was 0', () => {
    expect(formatRelative(0.2)).toBe('+20.0%');
    expect(formatRelative(-0.8406)).toBe('−84.1%');
    expect(formatRelative(0.01234)).toBe('+1.23%');
    expect(formatRelative(3)).toBe('+300%');
    expect(formatRelative(0)).toBe('0%');
    expect(formatRelative(null)).toBe('new');
  });
  it('p-values and effect sizes', () => {
    expect(formatPValue(7e-28)).toBe('< 0.0001');
    expect(formatPValue(0.04567)).toBe('0.046');
    expect(formatPValue(1)).toBe('1');
    expect(formatPValue(null)).toBe('n/a');
    expect(formatEffect(-12.3966, true)).toBe('−12.40');
    expect(formatEffect(null, true)).toBe('∞');
    expect(formatEffect(null, false)).toBe('n/a');
    expect(verdictText(null)).toBe('no verdict');
  });
});

describe('tables of a comparison', () => {
  it('steps: every metric, then the input share', () => {
    const t = stepsTable(diff);
    const labels = (t.rows ?? []).map((r) => r.c[0]?.v);
    expect(labels[0]).toBe('Step time');
    expect(labels.at(-1)).toBe('Input share of step time');
    const stepTime = t.rows?.[0]?.c.map((c) => c?.v);
    expect(stepTime?.[2]).toBeCloseTo(17.404, 3);
    expect(stepTime?.[3]).toBeCloseTo(2.774, 3);
    expect(stepTime?.[8]).toBe('beyond noise');
  });
  it('ops: regressions and improvements split by the sign of the self-time change', () => {
    const ops = diff.ops[0]!;
    const all = opsOf(ops, 'regressions').length + opsOf(ops, 'improvements').length + opsOf(ops, 'unchanged').length;
    expect(all).toBe(ops.matched.length);
    expect(opsOf(ops, 'improvements').every((o) => o.self_time_us.delta < 0)).toBe(true);
    const t = opsTable(opsOf(ops, 'only_in_a'));
    expect(t.rows?.[0]?.c[0]?.v).toBe('EagerPyFunc');
    expect(t.cols?.map((c) => c.id)).toContain('links');
  });
  it('memory: one row per allocator', () => {
    const t = memoryTable(diff);
    expect(t.rows?.length).toBe(1);
    expect(t.rows?.[0]?.c[0]?.v).toBe('bfc_cpu_allocator_for_gpu');
  });
  it('the breakdown chart draws the categories either run has', () => {
    const option = breakdownOption(diff) as { series: { name: string }[] };
    const names = option.series.map((s) => s.name);
    expect(names).toContain('Host compute');
    expect(names).toContain('Input');
    expect(names).not.toContain('Device compute'); // 0 in both CPU runs
    expect(option.series.some((s) => s.name === 'Step time')).toBe(false);
  });
});

describe('links and defaults', () => {
  it('each op links to its table and trace in both runs', () => {
    const links = opLinks('framework_op', 'EagerPyFunc', diff);
    expect(links.map((l) => l.label)).toEqual(['A', 'B', 'trace A', 'trace B']);
    expect(links[0]!.href).toBe(`?run=${encodeURIComponent(diff.a.source.run).replace(/%2F/g, '%2F')}&tool=framework_op_stats&host=vm&ops.q=EagerPyFunc`);
    expect(links[3]!.href).toContain('tool=trace_viewer%40');
    expect(links[3]!.href).toContain('q=EagerPyFunc');
  });
  it('B defaults to the next run', () => {
    expect(defaultRunB(['c', 'b', 'a'], 'b')).toBe('a');
    expect(defaultRunB(['c', 'b', 'a'], 'a')).toBe('c');
    expect(defaultRunB(['a'], 'a')).toBe('a');
  });
});

describe('PyTorch runs', () => {
  // Two PyTorch operators as the comparison lists them: host times as self/time, device
  // times beside them (aten::mm: host self unchanged, device self doubled).
  const change = (a: number, b: number, beyond: boolean | null = false) => ({ a, b, delta: b - a, relative: a ? (b - a) / a : null, beyond_noise: beyond });
  const op = (name: string, host: [number, number], device: [number, number], beyond: boolean) => ({
    name,
    category: '',
    context: '',
    names: [],
    time_us: change(...host),
    self_time_us: change(...host),
    count: change(6, 6),
    mean_us: change(host[0] / 6, host[1] / 6),
    device_time_us: change(...device, beyond),
    device_self_time_us: change(...device, beyond),
  });
  const ops = {
    kind: 'framework_op' as const,
    basis: { kind: 'whole_profile' as const },
    total_self_time_us: change(700, 700),
    tool: 'pytorch_op_stats',
    total_device_self_time_us: change(6300, 12300),
    matched: [op('aten::mm', [600, 600], [6000, 12000], true), op('aten::add_', [100, 100], [300, 300], false)],
    only_in_a: [],
    only_in_b: [],
    counts: { matched: 2, only_in_a: 0, only_in_b: 0 },
  };

  it('operators split by host plus device self time, with device columns', () => {
    expect(opsOf(ops, 'regressions').map((o) => o.name)).toEqual(['aten::mm']);
    expect(opsOf(ops, 'unchanged').map((o) => o.name)).toEqual(['aten::add_']);
    const t = opsTable(opsOf(ops, 'regressions'));
    const ids = t.cols?.map((c) => c.id) ?? [];
    expect(ids.slice(-7)).toEqual(['device_self_a_us', 'device_self_b_us', 'device_self_delta_us', 'device_a_us', 'device_b_us', 'verdict', 'links']);
    const cells = t.rows?.[0]?.c.map((c) => c?.v) ?? [];
    expect(cells[ids.indexOf('device_self_b_us')]).toBe(12000);
    expect(cells[ids.indexOf('verdict')]).toBe('beyond noise');
    expect(cells.length).toBe(ids.length);
  });
  it('operators link to the PyTorch operator view', () => {
    const links = opLinks('framework_op', 'aten::mm', diff, 'pytorch_op_stats');
    expect(links[0]!.href).toContain('tool=pytorch_op_stats');
    expect(links[0]!.href).toContain('by_name.q=aten%3A%3Amm');
  });
  it('XSpace ops keep their columns', () => {
    const ids = opsTable(opsOf(diff.ops[0]!, 'regressions')).cols?.map((c) => c.id) ?? [];
    expect(ids.some((id) => id.startsWith('device_'))).toBe(false);
  });
});
