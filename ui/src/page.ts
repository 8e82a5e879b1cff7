// What a page gets: the loaded data, the URL state and a store for its view keys.

import type { Api } from './api';
import type { ViewStore } from './components/table';
import type { ViewState } from './state';

export interface PageContext {
  api: Api;
  state: ViewState;
  /** The tool's `/data` body, parsed. */
  data: unknown;
  /** View keys kept in the URL (sort, filter, idle, step...). */
  view: ViewStore;
  /** `href` of another tool for the same run and host. */
  link(tool: string): string;
  /** The server's CSV of this tool (`/data_csv`). */
  csvUrl: string;
  /** oxprof's notes shown above the page (pages leave out what they already say). */
  notes?: string[];
}

/** Whether oxprof's notes already explain that the profile has no steps. */
export function notesSayNoSteps(ctx: PageContext): boolean {
  return (ctx.notes ?? []).some((n) => /no steps/i.test(n));
}

export type Page = (ctx: PageContext) => HTMLElement;

/**
 * Titles of the tools, as the server's tool registry names them: learned from
 * `/oxprof/api/run` (see `serverApi.runTools`); a tool not seen yet shows its name.
 */
const TOOL_TITLES = new Map<string, string>();

/** The page showing each tool: the registry's `page` column, learned with the titles. */
const TOOL_PAGES = new Map<string, string>();

/** Remembers titles (and pages) the server sent (`{name, title, page}` rows of the registry). */
export function learnToolTitles(tools: { name: string; title: string; page?: string }[]): void {
  for (const t of tools) {
    TOOL_TITLES.set(t.name, t.title);
    if (t.page) TOOL_PAGES.set(t.name, t.page);
  }
}

/** The page showing `tool`, as the server's registry says (a tool not seen yet: its own name). */
export function pageIdOf(tool: string): string {
  return TOOL_PAGES.get(tool) ?? tool;
}

export function toolName(tool: string): string {
  return TOOL_TITLES.get(tool) ?? tool;
}
