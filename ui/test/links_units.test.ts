import { describe, expect, it } from 'vitest';
import { defaultTool, pytorchToolNote, toolGroups } from '../src/tools';
import { pieColors } from '../src/charts';
import { inlineText } from '../src/components/common';
import { OTHER_GREY, PALETTE, categoryColor } from '../src/components/chart';
import { renderTable, rowsText } from '../src/components/table';
import { costliestFirst, programTimes } from '../src/components/xla';
import { autoFormat, displayTitle, formatValue } from '../src/datatable';
import { formatWithUnit, readableMicros } from '../src/format';
import { pathOfOp } from '../src/pages/op_profile';
import { debugTrackHref, remember } from '../src/pages/query';
import { argText } from '../src/trace/details';
import { pickOccurrence, revealFromView, timelineHref } from '../src/timeline';
import { memoryStore } from './helpers';

const state = { run: 'r', tool: 'kernel_stats', host: 'h1', view: {} };

describe('"Show in timeline" links', () => {
  it('name the slice (and maybe one occurrence) for the trace viewer of the row’s host', () => {
    const href = timelineHref(state, { name: 'fusion.1', track: 'XLA Ops' });
    const p = new URLSearchParams(href);
    expect([p.get('run'), p.get('tool'), p.get('host'), p.get('reveal'), p.get('reveal_track')]).toEqual(['r', 'trace_viewer', 'h1', 'fusion.1', 'XLA Ops']);
    const all = new URLSearchParams(timelineHref(state, { corr: 33861, name: 'k' }, 'ALL_HOSTS'));
    expect([all.get('host'), all.get('hosts'), all.get('reveal_corr')]).toEqual([null, 'ALL_HOSTS', '33861']);
  });
  it('read back from the trace viewer’s URL', () => {
    const href = timelineHref(state, { name: 'a', ts: 5, dur: 7, at: 9, slice: 12 });
    const p = new URLSearchParams(href);
    expect(revealFromView((k) => p.get(k) ?? '')).toEqual({ name: 'a', ts: 5, dur: 7, near: undefined, at: 9, track: undefined, corr: undefined, slice: 12 });
    expect(revealFromView(() => '')).toBeNull();
  });
  it('pick the exact slice, else the nearest, else the longest on a preferred track', () => {
    const c = [
      { id: 1, ts_ps: 0, dur_ps: 10, track: 'cpu' },
      { id: 2, ts_ps: 100, dur_ps: 50, track: 'cpu' },
      { id: 3, ts_ps: 200, dur_ps: 20, track: 'stream' },
    ];
    const onStream = (x: (typeof c)[number]) => x.track === 'stream';
    expect(pickOccurrence(c, { ts: 100, dur: 50 }, onStream)?.id).toBe(2);
    expect(pickOccurrence(c, { near: 5 }, onStream)?.id).toBe(1);
    expect(pickOccurrence(c, {}, onStream)?.id).toBe(2);
    expect(pickOccurrence(c, { track: 'stream' }, onStream)?.id).toBe(3);
    expect(pickOccurrence([], {}, onStream)).toBeNull();
  });
  it('op profile finds the op a link names', () => {
    const root = { name: 'root', children: [{ name: 'jit(1)', children: [{ name: 'fusion', children: [{ name: 'fusion.2 and its duplicate(s)', xla: {} }] }] }] };
    expect(pathOfOp(root, 'fusion.2')).toBe('jit(1)|fusion|fusion.2 and its duplicate(s)');
    expect(pathOfOp(root, 'nope')).toBe('');
  });
  it('an SQL result with times opens as a debug track of its host (several: all hosts)', () => {
    const one = new URLSearchParams(debugTrackHref('r', 'SELECT 1', ['h']));
    expect([one.get('tool'), one.get('host'), one.get('debug_sql')]).toEqual(['trace_viewer', 'h', 'SELECT 1']);
    expect(new URLSearchParams(debugTrackHref('r', 'x', ['a', 'b'])).get('hosts')).toBe('ALL_HOSTS');
  });
  it('the SQL history keeps one entry per statement, latest first', () => {
    const h = remember(remember(remember([], 'a', 'r', 1), 'b', 'r', 2), 'a', 'r', 3);
    expect(h.map((e) => [e.sql, e.at])).toEqual([
      ['a', 3],
      ['b', 2],
    ]);
  });
});

describe('pages that fit the run', () => {
  const pytorch = ['overview_page', 'trace_viewer@', 'op_profile', 'kernel_stats', 'hta_gpu_idle', 'pytorch_overview', 'pytorch_op_stats'];
  it('a PyTorch run opens on its PyTorch overview, others on the first tool', () => {
    expect(defaultTool(pytorch)).toBe('pytorch_overview');
    expect(defaultTool(['overview_page', 'trace_viewer@'])).toBe('overview_page');
  });
  it('its Tools menu puts XProf’s TensorFlow/JAX tools after its own, and those pages say why they are empty', () => {
    const g = toolGroups(pytorch);
    expect(g?.map(([name, list]) => [name.split(' ')[0], list])).toEqual([
      ['PyTorch', ['trace_viewer@', 'kernel_stats', 'hta_gpu_idle', 'pytorch_overview', 'pytorch_op_stats']],
      ['XProf', ['overview_page', 'op_profile']],
    ]);
    expect(toolGroups(['overview_page'])).toBeNull();
    expect(pytorchToolNote(pytorch, 'op_profile', (t) => `?tool=${t}`)?.textContent).toContain('PyTorch overview');
    expect(pytorchToolNote(pytorch, 'kernel_stats', (t) => t)).toBeNull();
  });
  it('the graph and memory viewers open on the costliest module', async () => {
    const profile = { byProgram: { children: [{ name: 'b(2)', metrics: { rawTime: 5 } }, { name: 'c(3)', metrics: { rawTime: 50 } }] } };
    expect(await costliestFirst(['a(1)', 'b(2)', 'c(3)'], async () => profile)).toEqual(['c(3)', 'b(2)', 'a(1)']);
    expect(await costliestFirst(['a(1)', 'b(2)'], async () => Promise.reject(new Error('no')))).toEqual(['a(1)', 'b(2)']);
  });
  it('on a CPU run (no device time in op profile) by the time of the trace’s XLA op slices', async () => {
    const empty = { byProgram: { children: [] }, deviceType: 'CPU_ONLY' };
    const modules = ['jit__normal(16)', 'jit_stage(28)', 'jit_train_step(26)', 'jit_unstack(6)'];
    const trace = async () => programTimes([['jit_stage(28)', 510184000], ['jit_train_step(26)', 39693385000], [null, 5]]);
    expect(await costliestFirst(modules, async () => empty, trace)).toEqual(['jit_train_step(26)', 'jit_stage(28)', 'jit__normal(16)', 'jit_unstack(6)']);
    // Device time wins when op profile has it; no trace either: as listed.
    const profile = { byProgram: { children: [{ name: 'jit_unstack(6)', metrics: { rawTime: 5 } }] } };
    expect((await costliestFirst(modules, async () => profile, trace))[0]).toBe('jit_unstack(6)');
    expect(await costliestFirst(modules, async () => empty, async () => Promise.reject(new Error('no SQL')))).toEqual(modules);
  });
});

describe('one unit and colour system', () => {
  it('values with units: times and bytes adaptive, other numbers grouped', () => {
    expect(formatWithUnit(2245094.033, 'µs')).toBe('2.245 s');
    expect(formatWithUnit(29358, 'us')).toBe('29.36 ms');
    expect(formatWithUnit(72829.5, 'ms')).toBe('72.83 s');
    expect(formatWithUnit(5368709120, 'bytes')).toBe('5 GiB');
    expect(formatWithUnit(1234567.891, 'count')).toBe('1,234,567.9 count');
  });
  it('ids stay as recorded; row counts read "1 row"', () => {
    expect(autoFormat({ id: 'correlation', label: 'Correlation', type: 'number' })).toBe('id');
    expect(formatValue(33861, 'id')).toBe('33861');
    expect(formatValue(33861, 'integer')).toBe('33,861');
    expect(rowsText(1)).toBe('1 row');
    expect(rowsText(3091)).toBe('3,091 rows');
  });
  it('event arguments: bytes in binary units, big counts grouped, ids raw', () => {
    expect(argText('bytes_accessed', 5368709120)).toEqual({ text: '5 GiB', title: '5,368,709,120 bytes' });
    expect(argText('flops', '123456789')).toEqual({ text: '123,456,789', title: '123456789' });
    expect(argText('correlation', 123456)).toEqual({ text: '123456' });
    expect(argText('name', 'x')).toEqual({ text: 'x' });
  });
  it('a category has one colour on every page; "Other" is grey, never the third slice’s', () => {
    for (const k of ['deviceComputeTimeMs', 'Device compute', 'Device compute time (in ms)', 'kernel']) expect(categoryColor(k)).toBe(categoryColor('device_compute_time_ms'));
    for (const k of ['infeedTimeMs', 'Input', 'Input time (in ms)', 'dataloader']) expect(categoryColor(k)).toBe(categoryColor('infeed'));
    expect(categoryColor('All others')).toBe(OTHER_GREY);
    expect(categoryColor('otherTimeMs')).toBe(OTHER_GREY);
    expect(categoryColor('fusion.12')).toBeNull();
    const slices = Array.from({ length: 11 }, (_, i) => ({ name: i === 10 ? 'Other' : `op${i}`, value: 1 }));
    const colored = pieColors(slices);
    expect(colored[10]?.itemStyle.color).toBe(OTHER_GREY);
    expect(colored[2]?.itemStyle.color).toBe(PALETTE[2]);
    expect(new Set(colored.map((s) => s.itemStyle.color)).size).toBe(11);
  });
  it('notes: code spans as code (no backticks), tool names as links', () => {
    const box = document.createElement('div');
    box.append(...inlineText('use `pytorch_overview` or the trace_viewer, not `x`', (t) => `?tool=${t}`));
    expect(box.textContent).toBe('use pytorch_overview or the trace_viewer, not x');
    expect([...box.querySelectorAll('a')].map((a) => a.getAttribute('href'))).toEqual(['?tool=pytorch_overview', '?tool=trace_viewer']);
    expect([...box.querySelectorAll('code')].map((c) => c.textContent)).toEqual(['pytorch_overview', 'x']);
  });
  it('a table title keeps no unit its cells do not use (the PyTorch overview’s "Step time breakdown (µs)" in adaptive units)', () => {
    expect(displayTitle('Step time breakdown (µs)', ['plain', 'us'])).toBe('Step time breakdown');
    expect(displayTitle('Latency (in ms)', ['ms'])).toBe('Latency');
    expect(displayTitle('Sizes (MiB)', ['bytes'])).toBe('Sizes');
    // Raw values keep their unit; a size format does not strip a time unit.
    expect(displayTitle('Step time breakdown (µs)', ['plain', 'integer'])).toBe('Step time breakdown (µs)');
    expect(displayTitle('Times (us)', ['bytes'])).toBe('Times (us)');
    expect(displayTitle('Steps', ['us'])).toBe('Steps');
    const table = {
      cols: [
        { id: 'step', label: 'Step', type: 'string' },
        { id: 'kernel', label: 'Kernel', type: 'number' },
      ],
      rows: [{ c: [{ v: '4' }, { v: 48672.1 }] }],
    };
    const card = renderTable(table, { key: 'steps', title: 'Step time breakdown (µs)', csvName: 'x', formats: { kernel: 'us' } }, memoryStore());
    expect(card.querySelector('h3')?.textContent).toBe('Step time breakdown');
    expect(card.querySelector('td[data-col="kernel"]')?.textContent).toBe('48.67 ms');
    const raw = renderTable(table, { key: 'steps', title: 'Step time breakdown (µs)', csvName: 'x' }, memoryStore());
    expect(raw.querySelector('h3')?.textContent).toBe('Step time breakdown (µs)');
  });
  it('XProf’s prose times in adaptive units (tf.data’s "Latency: 29,358 us" beside "27.18 ms")', () => {
    expect(readableMicros('Iterator Type: Map\nLatency: 29,358 us')).toBe('Iterator Type: Map\nLatency: 29.36 ms');
    expect(readableMicros('Start Time: 496419 us')).toBe('Start Time: 496.4 ms');
    expect(readableMicros('Self Duration: 46 us, then 2.5us')).toBe('Self Duration: 46 µs, then 2.5 µs');
    // Not a time: words ending in "us", identifiers, numbers without the unit.
    expect(readableMicros('status: 12 bonus, Iterator::Root 1234, plus x1us')).toBe('status: 12 bonus, Iterator::Root 1234, plus x1us');
  });
});
