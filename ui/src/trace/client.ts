// The trace viewer's client of oxprof's level-of-detail routes (/oxprof/api/trace/*): one
// run and one host, or several hosts merged (`hosts=`, see API.md's Trace section).

import { buildUrl, getJson } from '../api';
import type { FlowResult, SearchResult, StepSpan, TraceAggregate, TraceEvent, TraceTracks, TraceWindow } from '../trace';

export const TRACE_API = '/oxprof/api/trace';

export class TraceClient {
  constructor(
    readonly run: string,
    readonly host: string,
    /** Hosts shown together (empty or one: the page's host alone). */
    readonly hosts: readonly string[] = [],
  ) {}

  /** Whether several hosts are merged (`ALL_HOSTS`: every host of the run). */
  get multiHost(): boolean {
    return this.hosts.length > 1 || this.hosts.includes('ALL_HOSTS');
  }

  url(route: string, params: Record<string, string | undefined> = {}): string {
    const where = this.multiHost ? { hosts: this.hosts.join(',') } : { host: this.host };
    return buildUrl(`${TRACE_API}/${route}`, { run: this.run, ...where, ...params });
  }

  tracks(): Promise<TraceTracks> {
    return getJson<TraceTracks>(this.url('tracks'));
  }

  windowUrl(start: number, end: number, width: number, tracks?: string): string {
    return this.url('window', { start_ps: String(start), end_ps: String(end), width: String(width), tracks: tracks || undefined });
  }

  window(start: number, end: number, width: number, tracks?: string, exactLimit?: number): Promise<TraceWindow> {
    const url = this.windowUrl(start, end, width, tracks);
    return getJson<TraceWindow>(exactLimit ? `${url}&exact_limit=${exactLimit}` : url);
  }

  /** A window URL (see windowUrl, maybe with more parameters) as JSON, on the main thread. */
  windowJson(url: string): Promise<TraceWindow> {
    return getJson<TraceWindow>(url);
  }

  event(id: number): Promise<TraceEvent> {
    return getJson<TraceEvent>(this.url('event', { id: String(id) }));
  }

  flow(id: string): Promise<FlowResult> {
    return getJson<FlowResult>(this.url('flow', { id }));
  }

  /** Names containing `text` in any case (argument values too with `args`), or with `prefix` names starting with it (case-sensitive). */
  search(text: string, args: boolean, limit: number, prefix = false): Promise<SearchResult> {
    const what = prefix ? { prefix: text.slice(0, 1000) } : { q: text, args: args ? '1' : undefined };
    return getJson<SearchResult>(this.url('search', { ...what, limit: String(limit) }));
  }

  aggregate(start: number, end: number, tracks: readonly number[]): Promise<TraceAggregate> {
    return getJson<TraceAggregate>(this.url('aggregate', { start_ps: String(Math.round(start)), end_ps: String(Math.round(end)), tracks: tracks.join(',') }));
  }

  step(step: { number?: string; name?: string }): Promise<StepSpan> {
    return getJson<StepSpan>(this.url('step', { step: step.number, name: step.number ? undefined : step.name }));
  }
}
