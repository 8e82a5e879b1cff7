// The trace viewer's window loader, off the main thread: fetches a window of
// /oxprof/api/trace/window, parses it and turns its events into columns (./columns.ts),
// then hands the columns' buffers over without copying. The page keeps drawing while a
// window of tens of thousands of events is read.

import type { TraceWindow } from '../trace';
import { type ColumnWindow, columnBuffers, windowColumns } from './columns';

/** A request: the window's URL (same origin), numbered so that answers can be matched. */
export interface WindowRequest {
  seq: number;
  url: string;
}

/** An answer: the window, or what the server (or the network) said instead. */
export type WindowAnswer =
  | { seq: number; ok: true; window: ColumnWindow }
  | { seq: number; ok: false; status: number; statusText: string; body: string; network?: string };

interface WorkerScope {
  onmessage: ((e: MessageEvent<WindowRequest>) => void) | null;
  postMessage(message: WindowAnswer, transfer?: Transferable[]): void;
}

const scope = self as unknown as WorkerScope;

scope.onmessage = (e: MessageEvent<WindowRequest>) => {
  void answer(e.data);
};

async function answer({ seq, url }: WindowRequest): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { Accept: 'application/json' } });
  } catch (err) {
    scope.postMessage({ seq, ok: false, status: 0, statusText: '', body: '', network: err instanceof Error ? err.message : String(err) });
    return;
  }
  const body = await response.text().catch(() => '');
  if (!response.ok) {
    scope.postMessage({ seq, ok: false, status: response.status, statusText: response.statusText, body });
    return;
  }
  let parsed: TraceWindow;
  try {
    parsed = JSON.parse(body) as TraceWindow;
  } catch {
    scope.postMessage({ seq, ok: false, status: response.status, statusText: 'not JSON', body: body.slice(0, 200) });
    return;
  }
  const window = windowColumns(parsed);
  scope.postMessage({ seq, ok: true, window }, columnBuffers(window));
}
