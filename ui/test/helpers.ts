// Test helpers: fixture loading, a memory view store, a page context over fixture data.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Api } from '../src/api';
import type { ViewStore } from '../src/components/table';
import type { PageContext } from '../src/page';

export function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'fixtures', name), 'utf8'));
}

export function memoryStore(initial: Record<string, string> = {}): ViewStore & { values: Record<string, string> } {
  const values = { ...initial };
  return {
    values,
    get: (k) => values[k] ?? '',
    set: (k, v) => {
      if (v === null || v === '') delete values[k];
      else values[k] = v;
    },
  };
}

const noApi: Api = {
  runs: async () => [],
  runTools: async () => [],
  hosts: async () => [],
  data: async () => null,
  dataCsvUrl: () => '/data_csv',
  notes: async () => [],
};

export function context(tool: string, data: unknown, view: Record<string, string> = {}): PageContext & { store: ReturnType<typeof memoryStore> } {
  const store = memoryStore(view);
  return {
    api: noApi,
    state: { run: 'run1', tool, host: 'host1', view: store.values },
    data,
    view: store,
    link: (t) => `?run=run1&tool=${t}&host=host1`,
    csvUrl: '/data/plugin/profile/data_csv?run=run1&tag=' + tool,
    store,
  };
}
