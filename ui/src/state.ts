// The view state held in the URL: run, tool, host and per-page view keys (sort, filter,
// idle option, pod-viewer step...). `/?run=R&tool=T&host=H` opens that view directly.

export interface ViewState {
  run: string;
  tool: string;
  host: string;
  /** Page-specific keys (e.g. `sort`, `q`, `idle`, `step`), kept in the URL too. */
  view: Record<string, string>;
}

const MAIN_KEYS = ['run', 'tool', 'host'] as const;

/** Reads the state from a query string (`?run=...`). */
export function parseState(search: string): ViewState {
  const params = new URLSearchParams(search);
  const state: ViewState = { run: '', tool: '', host: '', view: {} };
  for (const [key, value] of params) {
    if ((MAIN_KEYS as readonly string[]).includes(key)) {
      state[key as (typeof MAIN_KEYS)[number]] = value;
    } else {
      state.view[key] = value;
    }
  }
  return state;
}

/** The query string of a state (main keys first, then view keys sorted; empty values dropped). */
export function formatState(state: ViewState): string {
  const params = new URLSearchParams();
  for (const key of MAIN_KEYS) if (state[key]) params.set(key, state[key]);
  for (const key of Object.keys(state.view).sort()) {
    const value = state.view[key];
    if (value) params.set(key, value);
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** A link to another tool of the same run and host (used by the recommendations). */
export function toolLink(state: ViewState, tool: string): string {
  return formatState({ run: state.run, tool, host: state.host, view: {} }) || '?';
}
