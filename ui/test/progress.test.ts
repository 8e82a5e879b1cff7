import { describe, expect, it } from 'vitest';
import { parseProgress, progressLine, progressText } from '../src/progress';

describe('progressText', () => {
  it('is empty without a load under way', () => {
    expect(progressText(null)).toBe('');
    expect(progressText({ loads: 0, what: '', total_bytes: 0, done_bytes: 0, elapsed_ms: 0 })).toBe('');
  });
  it('says what, how far, how fast and how long is left', () => {
    const p = { loads: 1, what: 'reading big.pt.trace.json', total_bytes: 2 * 1024 ** 3, done_bytes: 512 * 1024 ** 2, elapsed_ms: 2000 };
    expect(progressText(p)).toBe('reading big.pt.trace.json · 512 MiB of 2 GiB (25 %) · 256 MiB/s · about 6 s left');
  });
  it('leaves out the rate in the first second', () => {
    const p = { loads: 1, what: 'inflating x.xplane.pb', total_bytes: 1000, done_bytes: 10, elapsed_ms: 200 };
    expect(progressText(p)).toBe('inflating x.xplane.pb · 10 B of 1000 B (1 %)');
  });
});

describe('parseProgress', () => {
  it('reads the route and refuses nonsense', () => {
    expect(parseProgress({ loads: 2, what: 'a', total_bytes: 10, done_bytes: 5, elapsed_ms: 7 })).toEqual({ loads: 2, what: 'a', total_bytes: 10, done_bytes: 5, elapsed_ms: 7 });
    expect(parseProgress('x')).toBeNull();
    expect(parseProgress({ loads: -1, total_bytes: 'x' })).toEqual({ loads: 0, what: '', total_bytes: 0, done_bytes: 0, elapsed_ms: 0 });
  });
});

describe('progressLine', () => {
  it('polls while it is in the page, says "analysing" after a load, and stops once removed', async () => {
    const answers = [
      { loads: 1, what: 'reading t.json', total_bytes: 100, done_bytes: 50, elapsed_ms: 500 },
      { loads: 0, what: '', total_bytes: 0, done_bytes: 0, elapsed_ms: 0 },
    ];
    let asked = 0;
    const queued: (() => void)[] = [];
    const line = progressLine(
      async () => answers[Math.min(asked++, answers.length - 1)],
      (f) => queued.push(f),
    );
    document.body.append(line);
    const step = async () => {
      const f = queued.shift();
      f?.();
      await new Promise((r) => setTimeout(r, 0));
    };
    await step();
    expect(line.textContent).toBe('reading t.json · 50 B of 100 B (50 %)');
    await step();
    expect(line.textContent).toBe('Analysing what was read…');
    line.remove();
    await step();
    expect(asked).toBe(2);
    expect(queued).toHaveLength(0);
  });
});
