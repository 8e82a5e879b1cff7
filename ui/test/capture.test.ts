import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Api, type CaptureReply, type Params, pageToken, parseCaptureReply, serverApi } from '../src/api';
import { App } from '../src/app';
import { CAPTURE_DEFAULTS, CaptureDialog, captureParams, validateCapture } from '../src/capture';

const ok = (run: string): CaptureReply => ({
  ok: true,
  status: 200,
  result: 'Capture profile successfully. Please refresh.',
  run,
  captured: [{ address: 'localhost:9999' }],
  failed: [],
});

function dialog(reply: (p: Params) => Promise<CaptureReply>) {
  const sent: Params[] = [];
  const captured: string[] = [];
  const d = new CaptureDialog({
    capture: (p) => {
      sent.push(p);
      return reply(p);
    },
    onCaptured: (run) => captured.push(run),
  });
  document.body.replaceChildren();
  d.open();
  const q = <T extends Element>(role: string) => d.element.querySelector<T>(`[data-role="${role}"]`) as T;
  return { d, sent, captured, q };
}

const set = (el: HTMLInputElement | HTMLSelectElement, value: string) => {
  el.value = value;
  el.dispatchEvent(new Event('input', { bubbles: true }));
};

afterEach(() => {
  document.body.replaceChildren();
  delete document.body.dataset.state;
});

describe('capture params', () => {
  it('are XProf\'s parameters, addresses trimmed', () => {
    expect(captureParams({ ...CAPTURE_DEFAULTS, serviceAddr: ' a:1 , b:2,, ' })).toEqual({
      service_addr: 'a:1,b:2',
      duration: '2000',
      num_retry: '3',
      host_tracer_level: '2',
      device_tracer_level: '1',
      python_tracer_level: '0',
    });
  });
  it('need an address and whole numbers', () => {
    expect(validateCapture({ ...CAPTURE_DEFAULTS, serviceAddr: ' , ' })).toMatch(/host:port/);
    expect(validateCapture({ ...CAPTURE_DEFAULTS, serviceAddr: 'a:1', durationMs: 0 })).toMatch(/duration/);
    expect(validateCapture({ ...CAPTURE_DEFAULTS, serviceAddr: 'a:1', numRetry: 1.5 })).toMatch(/retries/);
    expect(validateCapture({ ...CAPTURE_DEFAULTS, serviceAddr: 'a:1' })).toBeNull();
  });
  it('answers are read from success and error bodies', () => {
    const good = parseCaptureReply(200, 'OK', JSON.stringify({ result: 'done', run: 'r1', captured: [{ address: 'a:1', bytes: 3 }], failed: [] }));
    expect(good).toMatchObject({ ok: true, run: 'r1', result: 'done', captured: [{ address: 'a:1' }], failed: [] });
    const bad = parseCaptureReply(500, 'Internal Server Error', JSON.stringify({ error: 'no', failed: [{ address: 'a:1', error: 'refused', attempts: 1 }] }));
    expect(bad).toMatchObject({ ok: false, error: 'no', failed: [{ address: 'a:1', error: 'refused', attempts: 1 }] });
    expect(parseCaptureReply(501, 'Not Implemented', 'capture is not wired')).toMatchObject({ ok: false, error: 'capture is not wired' });
  });
});

describe('capture request', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    document.head.querySelector('meta[name="oxprof-token"]')?.remove();
  });

  it('is a POST carrying the token the server put in the page', async () => {
    const meta = document.createElement('meta');
    meta.name = 'oxprof-token';
    meta.content = '0123456789abcdef0123456789abcdef';
    document.head.append(meta);
    expect(pageToken()).toBe('0123456789abcdef0123456789abcdef');
    const calls: { url: string; init?: RequestInit }[] = [];
    vi.stubGlobal('fetch', async (url: string, init?: RequestInit) => {
      calls.push({ url, init });
      return new Response(JSON.stringify({ result: 'ok', run: 'r', captured: [], failed: [] }), { status: 200 });
    });
    await serverApi.capture?.({ service_addr: 'localhost:9999' });
    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call?.url).toBe('/data/plugin/profile/capture_profile?service_addr=localhost%3A9999');
    expect(call?.init?.method).toBe('POST');
    expect((call?.init?.headers as Record<string, string>)['X-Oxprof-Token']).toBe('0123456789abcdef0123456789abcdef');
  });
});

describe('capture dialog', () => {
  it('has XProf\'s defaults and sends the form as parameters', async () => {
    const { d, sent, captured, q } = dialog(async () => ok('2026_01_01_00_00_00'));
    expect(q<HTMLInputElement>('duration').value).toBe('2000');
    expect(q<HTMLInputElement>('num_retry').value).toBe('3');
    expect(q<HTMLSelectElement>('host_tracer_level').value).toBe('2');
    expect([...q<HTMLSelectElement>('host_tracer_level').options].map((o) => o.value)).toEqual(['0', '1', '2', '3']);
    expect([...q<HTMLSelectElement>('device_tracer_level').options].map((o) => o.value)).toEqual(['0', '1']);
    expect(q<HTMLSelectElement>('device_tracer_level').value).toBe('1');
    expect(q<HTMLSelectElement>('python_tracer_level').value).toBe('0');
    expect(document.activeElement).toBe(q('service_addr'));
    set(q('service_addr'), 'localhost:9999, host2:9999');
    set(q('duration'), '1500');
    set(q('num_retry'), '0');
    set(q('host_tracer_level'), '3');
    set(q('device_tracer_level'), '0');
    set(q('python_tracer_level'), '1');
    q<HTMLButtonElement>('capture-submit').click();
    await vi.waitFor(() => expect(d.element.dataset.state).toBe('done'));
    expect(sent).toEqual([
      { service_addr: 'localhost:9999,host2:9999', duration: '1500', num_retry: '0', host_tracer_level: '3', device_tracer_level: '0', python_tracer_level: '1' },
    ]);
    expect(captured).toEqual(['2026_01_01_00_00_00']);
    expect(q('capture-run').textContent).toBe('2026_01_01_00_00_00');
    expect(q('capture-message').textContent).toBe('Capture profile successfully. Please refresh.');
  });
  it('shows progress while waiting', async () => {
    let answer: (r: CaptureReply) => void = () => undefined;
    const { d, q } = dialog(() => new Promise((r) => (answer = r)));
    set(q('service_addr'), 'a:1');
    q<HTMLButtonElement>('capture-submit').click();
    await vi.waitFor(() => expect(d.element.dataset.state).toBe('capturing'));
    expect(q('capture-progress').textContent).toContain('Capturing 2000 ms from 1 worker');
    expect(q<HTMLButtonElement>('capture-submit').disabled).toBe(true);
    answer(ok('r'));
    await vi.waitFor(() => expect(d.element.dataset.state).toBe('done'));
    expect(q<HTMLButtonElement>('capture-submit').disabled).toBe(false);
  });
  it('shows the server\'s error and the failed workers as text', async () => {
    const evil = '<img src=x onerror=alert(1)>';
    const { d, captured, q } = dialog(async () => ({
      ok: false,
      status: 500,
      error: `cannot reach 127.0.0.1:1 ${evil}`,
      captured: [],
      failed: [{ address: '127.0.0.1:1', error: 'connection refused', attempts: 1 }],
    }));
    set(q('service_addr'), '127.0.0.1:1');
    q<HTMLButtonElement>('capture-submit').click();
    await vi.waitFor(() => expect(d.element.dataset.state).toBe('error'));
    expect(q('capture-message').textContent).toBe(`cannot reach 127.0.0.1:1 ${evil}`);
    expect(d.element.querySelector('img')).toBeNull();
    expect(q('capture-error').getAttribute('role')).toBe('alert');
    expect(q('capture-failed').textContent).toBe('127.0.0.1:1: connection refused (1 attempt)');
    expect(captured).toEqual([]);
  });
  it('explains each refusal of the server (4xx, 5xx) with what to do, and its status', async () => {
    for (const [status, words] of [
      [400, 'parameter'],
      [403, '--capture-allow'],
      [409, 'session id'],
      [429, 'wait'],
      [502, 'profiler server'],
    ] as const) {
      const { d, q } = dialog(async () => ({ ok: false, status, error: `refused (${status})`, captured: [], failed: [] }));
      set(q('service_addr'), '127.0.0.1:1');
      q<HTMLButtonElement>('capture-submit').click();
      await vi.waitFor(() => expect(d.element.dataset.state).toBe('error'));
      expect(d.element.dataset.status).toBe(String(status));
      expect(q('capture-message').textContent).toBe(`refused (${status})`);
      expect(q('capture-hint').textContent).toContain(words);
      expect(q('capture-status-code').textContent).toContain(`HTTP ${status}`);
      expect(q('capture-error').getAttribute('role')).toBe('alert');
    }
  });
  it('reports a request that could not be sent', async () => {
    const { d, q } = dialog(async () => {
      throw new Error('Cannot reach the oxprof server (network down)');
    });
    set(q('service_addr'), 'a:1');
    q<HTMLButtonElement>('capture-submit').click();
    await vi.waitFor(() => expect(d.element.dataset.state).toBe('error'));
    expect(q('capture-message').textContent).toBe('Cannot reach the oxprof server (network down)');
  });
  it('checks the form before sending', async () => {
    const { d, sent, q } = dialog(async () => ok('r'));
    q<HTMLButtonElement>('capture-submit').click();
    await vi.waitFor(() => expect(d.element.dataset.state).toBe('error'));
    expect(q('capture-message').textContent).toMatch(/host:port/);
    expect(sent).toEqual([]);
  });
  it('closes on Escape and gives the focus back', () => {
    const opener = document.createElement('button');
    document.body.appendChild(opener);
    opener.focus();
    const d = new CaptureDialog({ capture: async () => ok('r'), onCaptured: () => undefined });
    d.open();
    expect(d.isOpen).toBe(true);
    d.element.querySelector<HTMLInputElement>('[data-role="service_addr"]')?.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(d.isOpen).toBe(false);
    expect(document.activeElement).toBe(opener);
  });
});

describe('capture button in the app shell', () => {
  const base: Api = {
    runs: async () => [],
    runTools: async () => [],
    hosts: async () => [],
    data: async () => null,
    dataCsvUrl: () => '',
    notes: async () => [],
  };
  async function mount(api: Api): Promise<HTMLElement> {
    history.replaceState(null, '', '/');
    const root = document.createElement('div');
    document.body.replaceChildren(root);
    new App(root, api).start();
    for (let i = 0; i < 100 && document.body.dataset.state !== 'empty'; i++) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 5));
    return root;
  }
  it('is hidden unless /config says hideCaptureProfileButton: false', async () => {
    for (const config of [{ hideCaptureProfileButton: true }, {}]) {
      const root = await mount({ ...base, config: async () => config, capture: async () => ok('r') });
      expect(root.querySelector('[data-role="capture"]')?.classList.contains('hidden')).toBe(true);
    }
  });
  it('opens the dialog, and a capture selects the new run', async () => {
    let runs: string[] = [];
    const root = await mount({
      ...base,
      runs: async () => runs,
      runTools: async () => ['overview_page'],
      hosts: async () => ['h'],
      config: async () => ({ hideCaptureProfileButton: false }),
      capture: async () => {
        runs = ['new_run'];
        return ok('new_run');
      },
    });
    const button = root.querySelector<HTMLButtonElement>('[data-role="capture"]');
    expect(button?.classList.contains('hidden')).toBe(false);
    button?.click();
    const dlg = root.querySelector<HTMLElement>('[data-role="capture-backdrop"]');
    expect(dlg?.classList.contains('hidden')).toBe(false);
    const addr = root.querySelector<HTMLInputElement>('[data-role="service_addr"]');
    if (addr) addr.value = 'localhost:9999';
    root.querySelector<HTMLButtonElement>('[data-role="capture-submit"]')?.click();
    await vi.waitFor(() => expect(root.querySelector<HTMLSelectElement>('[data-role="run"]')?.value).toBe('new_run'));
    expect(new URLSearchParams(location.search).get('run')).toBe('new_run');
  });
});
