import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Api, ApiError } from '../src/api';
import { App } from '../src/app';
import { fixture } from './helpers';

function fakeApi(overrides: Partial<Api> = {}): Api {
  return {
    runs: async () => ['run_b', 'run_a'],
    runTools: async () => ['overview_page', 'framework_op_stats'],
    hosts: async () => ['host1', 'host2'],
    data: async (_run, tool) => fixture(`${tool}.tf_custom_loop.json`),
    dataCsvUrl: () => '/csv',
    notes: async () => ['No steps were found: the profile has no step markers.'],
    ...overrides,
  };
}

async function settle(phase: string): Promise<void> {
  for (let i = 0; i < 200 && document.body.dataset.state !== phase; i++) await new Promise((r) => setTimeout(r, 5));
  expect(document.body.dataset.state).toBe(phase);
}

function mount(api: Api, search = ''): HTMLElement {
  history.replaceState(null, '', `/${search}`);
  const root = document.createElement('div');
  document.body.replaceChildren(root);
  new App(root, api).start();
  return root;
}

beforeAll(() => {
  // jsdom has no canvas: charts show their fallback text.
  HTMLCanvasElement.prototype.getContext = (() => null) as never;
});

afterEach(() => {
  delete document.body.dataset.state;
});

describe('app shell', () => {
  it('opens the newest run, its first tool and host, with notes, and writes them to the URL', async () => {
    const root = mount(fakeApi());
    await settle('ready');
    expect(root.querySelector<HTMLSelectElement>('[data-role="run"]')?.value).toBe('run_b');
    expect(root.querySelector<HTMLSelectElement>('[data-role="tool"]')?.value).toBe('overview_page');
    expect(root.querySelector<HTMLSelectElement>('[data-role="host"]')?.value).toBe('host1');
    expect(location.search).toBe('?run=run_b&tool=overview_page&host=host1');
    expect(root.querySelector('[data-role="notes"]')?.textContent).toContain('No steps were found');
    expect(root.querySelector('[data-page="overview_page"]')).not.toBeNull();
    expect(root.querySelector<HTMLElement>('[data-chart="step-time"]')?.dataset.ready).toBe('unsupported');
  });
  it('opens a deep link with its view state', async () => {
    const root = mount(fakeApi(), '?run=run_a&tool=framework_op_stats&host=host2&idle=yes&ops.q=iterator');
    await settle('ready');
    expect(root.querySelector<HTMLSelectElement>('[data-role="host"]')?.value).toBe('host2');
    expect(root.querySelector<HTMLSelectElement>('[data-role="idle"]')?.value).toBe('yes');
    expect(root.querySelector<HTMLInputElement>('[data-table="ops"] [data-role="filter"]')?.value).toBe('iterator');
  });
  it('shows the server error message', async () => {
    const root = mount(
      fakeApi({
        data: async () => {
          throw new ApiError('no host named "x" in run "run_b"', 404, '/data');
        },
      }),
      '?run=run_b&tool=overview_page&host=x',
    );
    await settle('error');
    expect(root.querySelector('[data-role="error-message"]')?.textContent).toBe('no host named "x" in run "run_b"');
  });
  it('opens trace_viewer (XProf\'s links, older URLs) as the trace_viewer@ the run offers', async () => {
    const { offeredAlias } = await import('../src/app');
    expect(offeredAlias('trace_viewer', ['overview_page', 'trace_viewer@'])).toBe('trace_viewer@');
    expect(offeredAlias('trace_viewer', ['trace_viewer', 'trace_viewer@'])).toBe('trace_viewer');
    expect(offeredAlias('trace_viewer', ['overview_page'])).toBe('trace_viewer');
    expect(offeredAlias('overview_page', ['overview_page', 'trace_viewer@'])).toBe('overview_page');
    const root = mount(fakeApi({ runTools: async () => ['overview_page', 'trace_viewer@'] }), '?run=run_b&tool=trace_viewer&host=host1&start_ps=5');
    for (let i = 0; i < 200 && !location.search.includes('trace_viewer%40'); i++) await new Promise((r) => setTimeout(r, 5));
    expect(root.querySelector<HTMLSelectElement>('[data-role="tool"]')?.value).toBe('trace_viewer@');
    expect(new URLSearchParams(location.search).get('tool')).toBe('trace_viewer@');
    expect(new URLSearchParams(location.search).get('start_ps')).toBe('5');
  });
  it('explains the expected layout when there are no runs', async () => {
    const root = mount(fakeApi({ runs: async () => [] }));
    await settle('empty');
    expect(root.querySelector('[data-role="empty"]')?.textContent).toContain('plugins/profile/');
  });
});
