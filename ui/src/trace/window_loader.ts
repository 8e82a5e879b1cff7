// Loads trace windows as columns: in a worker (./window_worker.ts) where the browser has
// workers, else on the main thread (unit tests under jsdom). Errors are `ApiError`s with
// the server's message, as `getJson` gives them.

import { ApiError, errorMessage, getJson } from '../api';
import { withBase } from '../base';
import type { TraceWindow } from '../trace';
import { type ColumnWindow, windowColumns } from './columns';
import type { WindowAnswer, WindowRequest } from './window_worker';

let worker: Worker | null | undefined;
let nextSeq = 1;
const waiting = new Map<number, { url: string; resolve: (w: ColumnWindow) => void; reject: (e: Error) => void }>();

function windowWorker(): Worker | null {
  if (worker !== undefined) return worker;
  try {
    worker = typeof Worker === 'undefined' ? null : new Worker(new URL('./window_worker.ts', import.meta.url), { type: 'module' });
  } catch {
    worker = null;
  }
  if (worker) {
    worker.onmessage = (e: MessageEvent<WindowAnswer>) => settle(e.data);
    // A worker that cannot start (or dies) fails what it holds; later loads use the main thread.
    worker.onerror = () => {
      worker = null;
      for (const [seq, w] of waiting) {
        waiting.delete(seq);
        loadOnMainThread(w.url).then(w.resolve, w.reject);
      }
    };
  }
  return worker;
}

async function loadOnMainThread(url: string): Promise<ColumnWindow> {
  return windowColumns(await getJson<TraceWindow>(url));
}

function settle(a: WindowAnswer): void {
  const w = waiting.get(a.seq);
  if (!w) return;
  waiting.delete(a.seq);
  if (a.ok) return w.resolve(a.window);
  if (a.network !== undefined) return w.reject(new ApiError(`Cannot reach the oxprof server (${a.network})`, 0, w.url));
  if (a.statusText === 'not JSON') return w.reject(new ApiError(`The server's answer is not JSON: ${a.body}`, a.status, w.url));
  w.reject(new ApiError(errorMessage(a.body, a.status, a.statusText), a.status, w.url));
}

/** Starts the worker ahead of the first window (its start overlaps the page's first requests). */
export function prepareWindowLoader(): void {
  windowWorker();
}

/** Where windows are read: in the worker, or on the main thread when there is none. */
export function windowLoaderKind(): 'worker' | 'main' {
  return worker ? 'worker' : 'main';
}

/** The window at `url` (an /oxprof/api/trace/window URL) as columns. */
export async function loadWindow(url: string): Promise<ColumnWindow> {
  const w = windowWorker();
  if (!w) return loadOnMainThread(url);
  // Workers resolve relative URLs against their own script: send an absolute one.
  const absolute = new URL(withBase(url), location.href).toString();
  return new Promise((resolve, reject) => {
    const seq = nextSeq++;
    waiting.set(seq, { url, resolve, reject });
    const request: WindowRequest = { seq, url: absolute };
    w.postMessage(request);
  });
}
