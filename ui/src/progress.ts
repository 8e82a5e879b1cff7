// Progress of a long first analysis: while a page waits for the server, a line under the
// spinner says what the server is reading (`/oxprof/api/progress`: the loads under way, in
// bytes), how fast and how long is left, or that it is analysing what it read. It polls
// only while the line is in the page, and stops by itself once the page replaced it.

import { buildUrl, getJson } from './api';
import { h } from './dom';
import { formatBytes } from './format';

/** The server's loads under way (`/oxprof/api/progress`). */
export interface LoadProgress {
  /** Loads under way (0: none; the server is analysing, or idle). */
  loads: number;
  /** The latest load's phase and file, e.g. `reading trace.pt.trace.json`. */
  what: string;
  /** Bytes the loads under way will read in all. */
  total_bytes: number;
  /** Bytes read so far. */
  done_bytes: number;
  /** Time since the first of them began, ms. */
  elapsed_ms: number;
}

export const PROGRESS_ROUTE = '/oxprof/api/progress';

/** How often the line asks. */
const POLL_MS = 500;

/** The line for people: what, how far, how fast and how long is left. */
export function progressText(p: LoadProgress | null): string {
  if (!p || p.loads === 0) return '';
  const parts = [p.what || 'reading the profile'];
  if (p.total_bytes > 0) {
    const share = Math.min(100, Math.floor((100 * p.done_bytes) / p.total_bytes));
    parts.push(`${formatBytes(p.done_bytes, 3)} of ${formatBytes(p.total_bytes, 3)} (${share} %)`);
    const seconds = p.elapsed_ms / 1000;
    if (seconds >= 1 && p.done_bytes > 0) {
      const rate = p.done_bytes / seconds;
      parts.push(`${formatBytes(rate, 3)}/s`);
      const left = (p.total_bytes - p.done_bytes) / rate;
      if (left >= 1) parts.push(`about ${Math.ceil(left)} s left`);
    }
  }
  return parts.join(' · ');
}

/** A JSON value as progress (`null` when it is not one). */
export function parseProgress(body: unknown): LoadProgress | null {
  if (!body || typeof body !== 'object') return null;
  const b = body as Record<string, unknown>;
  const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
  return {
    loads: num(b.loads),
    what: typeof b.what === 'string' ? b.what : '',
    total_bytes: num(b.total_bytes),
    done_bytes: num(b.done_bytes),
    elapsed_ms: num(b.elapsed_ms),
  };
}

/**
 * A line that shows the server's progress while it is in the document. After a load it
 * says the server is analysing (the time after reading is the analysis). An older server
 * without the route leaves the line empty and stops asking.
 */
export function progressLine(
  fetchProgress: () => Promise<unknown> = () => getJson<unknown>(buildUrl(PROGRESS_ROUTE)),
  schedule: (f: () => void, ms: number) => unknown = (f, ms) => setTimeout(f, ms),
): HTMLElement {
  const line = h('span', { class: 'progress-line hint', 'data-role': 'load-progress', 'aria-live': 'polite' });
  let sawLoad = false;
  let polls = 0;
  const tick = async (): Promise<void> => {
    // The first poll runs before the line is attached; later ones stop once it is gone.
    if (polls++ > 0 && !line.isConnected) return;
    let progress: LoadProgress | null;
    try {
      progress = parseProgress(await fetchProgress());
    } catch {
      return;
    }
    const text = progressText(progress);
    if (text) sawLoad = true;
    line.textContent = text || (sawLoad ? 'Analysing what was read…' : '');
    line.dataset.loads = String(progress?.loads ?? 0);
    schedule(() => void tick(), POLL_MS);
  };
  schedule(() => void tick(), POLL_MS);
  return line;
}
