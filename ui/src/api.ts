// The server API: XProf-compatible routes under /data/plugin/profile and oxprof's own
// /oxprof/api routes. Errors carry the server's own message (its JSON `error` field).

import { withBase } from './base';
import { learnToolTitles } from './page';

export const PROFILE_PREFIX = '/data/plugin/profile';

/** A failed request: `message` is the server's message when it sent one. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly url: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Extracts a human-readable message from an error body (JSON `{error|message}` or text). */
export function errorMessage(body: string, status: number, statusText: string): string {
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) {
    try {
      const parsed = JSON.parse(trimmed) as Record<string, unknown>;
      for (const key of ['error', 'message', 'detail']) {
        const v = parsed[key];
        if (typeof v === 'string' && v) return v;
        if (v && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string') {
          return (v as { message: string }).message;
        }
      }
    } catch {
      // not JSON after all: fall through to the text.
    }
  }
  if (trimmed && trimmed.length < 2000 && !trimmed.startsWith('<')) return trimmed;
  return `${status} ${statusText}`.trim();
}

export type Params = Record<string, string | undefined>;

/** The header carrying the server's token on state-changing requests. */
export const TOKEN_HEADER = 'X-Oxprof-Token';

/** The token the server wrote into this page (`<meta name="oxprof-token">`); other origins cannot read it. */
export function pageToken(doc: Document = document): string {
  return doc.querySelector('meta[name="oxprof-token"]')?.getAttribute('content') ?? '';
}

/** The URL of `route` with the non-empty `params`. */
export function buildUrl(route: string, params: Params = {}): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, v);
  const q = search.toString();
  return withBase(q ? `${route}?${q}` : route);
}

async function request(url: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(withBase(url), { headers: { Accept: 'application/json, text/plain, */*' } });
  } catch (e) {
    throw new ApiError(`Cannot reach the oxprof server (${e instanceof Error ? e.message : String(e)})`, 0, url);
  }
  if (!response.ok) {
    const body = await response.text().catch(() => '');
    throw new ApiError(errorMessage(body, response.status, response.statusText), response.status, url);
  }
  return response;
}

export async function getJson<T>(url: string): Promise<T> {
  const response = await request(url);
  const text = await response.text();
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(`The server's answer is not JSON: ${text.slice(0, 200)}`, response.status, url);
  }
}

export async function getText(url: string): Promise<string> {
  return (await request(url)).text();
}

/** oxprof's description of one run, with the tools it offers. */
export const OXPROF_RUN_ROUTE = '/oxprof/api/run';

/** A tool as the server's registry describes it. */
export interface OfferedTool {
  name: string;
  title: string;
  page: string;
}

export interface HostEntry {
  hostname: string;
}

/** What the UI asks the server. */
export interface Api {
  runs(): Promise<string[]>;
  runTools(run: string): Promise<string[]>;
  hosts(run: string, tool: string): Promise<string[]>;
  data(run: string, tool: string, host: string, params?: Params): Promise<unknown>;
  dataCsvUrl(run: string, tool: string, host: string, params?: Params): string;
  notes(run: string, tool: string, host: string, params?: Params): Promise<string[]>;
  /** `/config` (absent in tests that do not need it). */
  config?(): Promise<ProfileConfig>;
  /** `/capture_profile`: the server's answer, success or error. */
  capture?(params: Params): Promise<CaptureReply>;
  /** `/oxprof/api/diff` (JSON): the comparison of two runs (absent in tests that do not need it). */
  diff?(params: Params): Promise<unknown>;
  /** `/oxprof/api/explain` (JSON, schema `oxprof.explain/1`): what bounds a run (absent in tests that do not need it). */
  explain?(run: string, host: string): Promise<Explanation>;
  /** `/oxprof/api/progress` (JSON): the server's loads under way, for a long first analysis (absent in tests that do not need it). */
  progress?(): Promise<unknown>;
  /** How many hosts one trace view merges (`/oxprof/api/run`'s `trace_view_max_hosts`; absent: no limit known). */
  traceViewMaxHosts?(run: string): Promise<number>;
}

/** One finding of `oxprof explain` (the fields the UI shows). */
export interface Finding {
  id: string;
  title: string;
  severity: 'info' | 'warning' | 'critical';
  time_at_stake_ms: number;
  percent_of_step: number;
  evidence: string[];
  suggestion: string;
  see: string;
}

/** `oxprof explain`'s answer (the fields the UI shows). */
export interface Explanation {
  schema: string;
  bound_by: string | null;
  findings: Finding[];
  checked: string[];
}

/** XProf's `/config`. */
export interface ProfileConfig {
  hideCaptureProfileButton?: boolean;
}

export interface CapturedWorker {
  address: string;
}

export interface FailedWorker {
  address: string;
  error?: string;
  kind?: string;
  attempts?: number;
}

/** A `/capture_profile` answer: 200 `{result, run, captured, failed}` or an error `{error, failed?}`. */
export interface CaptureReply {
  ok: boolean;
  status: number;
  result?: string;
  run?: string;
  error?: string;
  captured: CapturedWorker[];
  failed: FailedWorker[];
}

/** Reads a `/capture_profile` answer (any status) into a [`CaptureReply`]. */
export function parseCaptureReply(status: number, statusText: string, body: string): CaptureReply {
  const ok = status >= 200 && status < 300;
  let parsed: Record<string, unknown> | null = null;
  try {
    const value: unknown = JSON.parse(body);
    if (value && typeof value === 'object' && !Array.isArray(value)) parsed = value as Record<string, unknown>;
  } catch {
    // not JSON: the text is the message.
  }
  const list = <T>(v: unknown, check: (x: Record<string, unknown>) => T | null): T[] =>
    Array.isArray(v) ? v.flatMap((x) => (x && typeof x === 'object' ? [check(x as Record<string, unknown>)] : [])).filter((x): x is T => x !== null) : [];
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const captured = list(parsed?.captured, (x) => (typeof x.address === 'string' ? { address: x.address } : null));
  const failed = list(parsed?.failed, (x) =>
    typeof x.address === 'string'
      ? { address: x.address, error: str(x.error), kind: str(x.kind), attempts: typeof x.attempts === 'number' ? x.attempts : undefined }
      : null,
  );
  const error = str(parsed?.error) || (ok && parsed ? undefined : errorMessage(body, status, statusText));
  return { ok: ok && !parsed?.error, status, result: str(parsed?.result), run: str(parsed?.run), error, captured, failed };
}

/** The notes route oxprof adds (oxprof's own user-facing notes for a data request). */
export const NOTES_ROUTE = '/oxprof/api/notes';

/** The API of the server this page came from. */
export const serverApi: Api = {
  runs: () => getJson<string[]>(`${PROFILE_PREFIX}/runs`),
  // The tools oxprof offers for the run (its registry, which shows more than XProf's
  // `/run_tools`: pod viewer, tf.data bottleneck analysis), with their titles.
  runTools: async (run) => {
    const info = await getJson<{ offered?: OfferedTool[] }>(buildUrl(OXPROF_RUN_ROUTE, { run }));
    const offered = info.offered ?? [];
    learnToolTitles(offered);
    return offered.map((t) => t.name);
  },
  traceViewMaxHosts: async (run) => {
    const info = await getJson<{ trace_view_max_hosts?: number }>(buildUrl(OXPROF_RUN_ROUTE, { run }));
    return info.trace_view_max_hosts ?? 0;
  },
  hosts: async (run, tool) => {
    const list = await getJson<(HostEntry | string)[]>(buildUrl(`${PROFILE_PREFIX}/hosts`, { run, tag: tool }));
    return list.map((h) => (typeof h === 'string' ? h : h.hostname));
  },
  data: (run, tool, host, params = {}) =>
    getJson<unknown>(buildUrl(`${PROFILE_PREFIX}/data`, { run, tag: tool, host, ...params })),
  dataCsvUrl: (run, tool, host, params = {}) =>
    buildUrl(`${PROFILE_PREFIX}/data_csv`, { run, tag: tool, host, ...params }),
  config: () => getJson<ProfileConfig>(`${PROFILE_PREFIX}/config`),
  diff: (params) => getJson<unknown>(buildUrl('/oxprof/api/diff', params)),
  explain: (run, host) => getJson<Explanation>(buildUrl('/oxprof/api/explain', { run, host })),
  progress: () => getJson<unknown>(buildUrl('/oxprof/api/progress')),
  capture: async (params) => {
    const url = buildUrl(`${PROFILE_PREFIX}/capture_profile`, params);
    let response: Response;
    try {
      // A state-changing route: POST with the token the server put in this page.
      response = await fetch(withBase(url), { method: 'POST', headers: { Accept: 'application/json', [TOKEN_HEADER]: pageToken() } });
    } catch (e) {
      throw new ApiError(`Cannot reach the oxprof server (${e instanceof Error ? e.message : String(e)})`, 0, url);
    }
    return parseCaptureReply(response.status, response.statusText, await response.text().catch(() => ''));
  },
  notes: async (run, tool, host, params = {}) => {
    try {
      const body = await getJson<unknown>(buildUrl(NOTES_ROUTE, { run, tag: tool, host, ...params }));
      return parseNotes(body);
    } catch (e) {
      // Older servers have no notes route: no notes then.
      if (e instanceof ApiError && e.status === 404) return [];
      throw e;
    }
  },
};

/** Notes from `{"notes": [...]}` or a plain list of strings. */
export function parseNotes(body: unknown): string[] {
  const list = Array.isArray(body) ? body : (body as { notes?: unknown } | null)?.notes;
  return Array.isArray(list) ? list.filter((n): n is string => typeof n === 'string' && n.length > 0) : [];
}
