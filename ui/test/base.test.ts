import { describe, expect, it } from 'vitest';
import { basePath, withBase } from '../src/base';

describe('the prefix the UI is served below', () => {
  it('is what comes before /assets/ in a bundled script URL', () => {
    expect(basePath('http://127.0.0.1:8791/assets/index.js')).toBe('');
    expect(basePath('http://127.0.0.1:6006/data/plugin/oxprof/ui/assets/index.js')).toBe('/data/plugin/oxprof/ui');
    expect(basePath('http://127.0.0.1:6006/data/plugin/oxprof/ui/assets/window_worker.js')).toBe('/data/plugin/oxprof/ui');
  });

  it('is empty for sources that are not the bundle (tests, the dev server)', () => {
    expect(basePath('file:///home/me/assets/oxprof/ui/src/base.ts')).toBe('');
    expect(basePath('http://localhost:5173/src/base.ts')).toBe('');
    expect(basePath('not a url')).toBe('');
  });

  it('puts root paths below it, once, and leaves other URLs alone', () => {
    const base = '/data/plugin/oxprof/ui';
    expect(withBase('/oxprof/api/runs', base)).toBe(`${base}/oxprof/api/runs`);
    expect(withBase('/data/plugin/profile/data?run=r&tag=t', base)).toBe(`${base}/data/plugin/profile/data?run=r&tag=t`);
    expect(withBase(withBase('/oxprof/api/runs', base), base)).toBe(`${base}/oxprof/api/runs`);
    expect(withBase('?run=r&tool=overview_page', base)).toBe('?run=r&tool=overview_page');
    expect(withBase('https://example.com/x', base)).toBe('https://example.com/x');
    expect(withBase('//example.com/x', base)).toBe('//example.com/x');
    expect(withBase('/oxprof/api/runs', '')).toBe('/oxprof/api/runs');
  });
});
