import { describe, expect, it } from 'vitest';
import { finiteText, formatBytes, formatCount, formatMiB, formatMicros, formatTime, niceStep, ruler } from '../src/format';

describe('formatTime', () => {
  it('picks the unit and keeps four significant digits', () => {
    expect(formatTime(7_012_646_189_000)).toBe('7.013 s');
    expect(formatTime(68_452_000)).toBe('68.45 µs');
    expect(formatTime(1_234_567_000)).toBe('1.235 ms');
    expect(formatTime(999_900)).toBe('999.9 ns');
    expect(formatTime(12)).toBe('12 ps');
    expect(formatTime(0)).toBe('0');
    expect(formatTime(1_500_000)).toBe('1.5 µs');
    expect(formatTime(-2_000_000_000)).toBe('-2 ms');
  });
  it('moves to the next unit when rounding reaches 1000', () => {
    expect(formatTime(999_960_000)).toBe('1 ms');
  });
  it('groups thousands of seconds', () => {
    expect(formatTime(7_012_646_189_000_000)).toBe('7,013 s');
  });
  it('the issue\'s 7,012,646.189 µs reads as seconds', () => {
    expect(formatMicros(7_012_646.189)).toBe('7.013 s');
  });
});

describe('formatBytes', () => {
  it('uses binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(16 * 1024 * 1024)).toBe('16 MiB');
    expect(formatBytes(3.25 * 1024 ** 3)).toBe('3.25 GiB');
    expect(formatMiB(0.004)).toBe('4.096 KiB');
    expect(formatBytes(1024 * 1024 - 1)).toBe('1 MiB');
  });
});

describe('formatCount', () => {
  it('adds thousands separators', () => {
    expect(formatCount(3091954)).toBe('3,091,954');
    expect(formatCount(12)).toBe('12');
    expect(formatCount(-1234)).toBe('-1,234');
  });
});

describe('finiteText', () => {
  it('keeps XProf\'s number texts and drops its NaN and infinities', () => {
    expect(finiteText('1.7')).toBe('1.7');
    expect(finiteText('0.0')).toBe('0.0');
    expect(finiteText(3)).toBe('3');
    for (const t of ['-nan', 'nan', 'NaN', 'inf', '-inf', '', ' ', undefined, null]) expect(finiteText(t), String(t)).toBeNull();
  });
});

describe('ruler', () => {
  it('labels ticks from the trace start with the digits the step needs', () => {
    const r = ruler({ start: 0, end: 1e12 }, 0, 1000);
    expect(r.base).toBeNull();
    expect(r.ticks.map((t) => t.label).slice(0, 4)).toEqual(['0', '200 ms', '400 ms', '600 ms']);
  });
  it('turns relative at deep zoom so that labels differ', () => {
    // 2 µs at 7.598 s from the start: absolute labels would all read "7.598 s".
    const start = 7_598_123_456_000;
    const r = ruler({ start, end: start + 2_000_000 }, 0, 1000);
    expect(r.base).not.toBeNull();
    expect(r.baseLabel.startsWith('7.598123')).toBe(true);
    const labels = r.ticks.map((t) => t.label);
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels.every((l) => l.startsWith('+'))).toBe(true);
  });
  it('never repeats a label at any zoom', () => {
    for (const len of [1e3, 1e5, 1e7, 1e9, 1e11]) {
      const start = 7_598_000_000_000;
      const labels = ruler({ start, end: start + len }, 9_273_000, 1200).ticks.map((t) => t.label);
      expect(new Set(labels).size, `${len}: ${labels.join(' ')}`).toBe(labels.length);
    }
  });
  it('niceStep rounds up to 1, 2, 5 × 10^k', () => {
    expect(niceStep(3)).toBe(5);
    expect(niceStep(0.15)).toBeCloseTo(0.2);
    expect(niceStep(1000)).toBe(1000);
  });
});
