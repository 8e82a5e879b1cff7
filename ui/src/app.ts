// The app shell: Runs, Tools and Hosts selectors, a refresh button, loading/error/empty
// states, oxprof's notes, and the page of the selected tool. The URL holds the whole view
// (`?run=R&tool=T&host=H&...`), so every view can be linked to and restored.

import { type Api, ApiError, getJson } from './api';
import { CaptureDialog } from './capture';
import { disposeCharts } from './components/chart';
import { notesBox } from './components/common';
import type { ViewStore } from './components/table';
import { h, replaceChildren } from './dom';
import { type Page, type PageContext, learnToolTitles, toolName } from './page';
import { pageFor, toolNeedsNoData } from './pages';
import { ALL_HOSTS, COMPARE_TOOL, comparePage } from './pages/compare';
import { QUERY_TOOL } from './pages/query';
import { type ViewState, formatState, parseState, toolLink } from './state';
import { progressLine } from './progress';
import { ThemeToggle } from './theme';
import { defaultTool, offeredAlias, pytorchToolNote, toolGroups } from './tools';

export { offeredAlias } from './tools';

type Phase = 'loading' | 'ready' | 'error' | 'empty';

export class App {
  private state: ViewState;
  private generation = 0;
  /** A host to keep after a tool change, when the new tool's host list has it. */
  private preferredHost = '';
  private runs: string[] = [];
  private tools: string[] = [];
  private hosts: string[] = [];
  private readonly runSelect = h('select', { id: 'run-select', 'data-role': 'run', 'aria-label': 'Run' });
  private readonly toolSelect = h('select', { id: 'tool-select', 'data-role': 'tool', 'aria-label': 'Tool' });
  private readonly hostSelect = h('select', { id: 'host-select', 'data-role': 'host', 'aria-label': 'Host' });
  private readonly refreshButton = h(
    'button',
    { type: 'button', class: 'button', 'data-role': 'refresh', title: 'Look for new runs and recompute' },
    '⟳ Refresh',
  );
  /** Shown only when the server's `/config` offers capturing (`hideCaptureProfileButton: false`). */
  private readonly captureButton = h(
    'button',
    { type: 'button', class: 'button hidden', 'data-role': 'capture', 'aria-haspopup': 'dialog', title: 'Capture a profile from running programs into a new run' },
    '● Capture profile',
  );
  private captureDialog: CaptureDialog | null = null;
  /** Opens the compare view: this run (and host) against another. */
  private readonly compareButton = h(
    'button',
    { type: 'button', class: 'button', 'data-role': 'compare', title: 'Compare this run with another (run B)' },
    '⇄ Compare…',
  );
  /** The SQL query page of the selected run (not a tool of the registry: no hosts). */
  private readonly sqlLink = h('a', { class: 'button', 'data-role': 'sql-link', href: '?tool=query', title: 'Query the run with SQL' }, 'SQL');
  private readonly main = h('main', { id: 'content', tabindex: -1 });
  /** Light / dark / the system's; a change redraws the page (charts take the theme at creation). */
  private readonly theme = new ThemeToggle(() => {
    if (document.body.dataset.state === 'ready') void this.load();
  });

  constructor(
    private readonly root: HTMLElement,
    private readonly api: Api,
  ) {
    this.state = parseState(location.search);
    this.runSelect.addEventListener('change', () => this.select({ run: this.runSelect.value, tool: this.state.tool, host: '' }, this.compareView()));
    this.toolSelect.addEventListener('change', () => {
      // Keep the host when the new tool lists it too (checked in load()).
      this.preferredHost = this.state.host;
      this.select({ run: this.state.run, tool: this.toolSelect.value, host: '' });
    });
    this.hostSelect.addEventListener('change', () => this.select({ run: this.state.run, tool: this.state.tool, host: this.hostSelect.value }, this.compareView()));
    this.refreshButton.addEventListener('click', () => void this.load());
    this.captureButton.addEventListener('click', () => this.openCapture());
    this.compareButton.addEventListener('click', () => this.select({ run: this.state.run, tool: COMPARE_TOOL, host: this.state.host }));
    learnToolTitles([{ name: COMPARE_TOOL, title: 'Compare runs' }]);
    window.addEventListener('popstate', () => {
      this.state = parseState(location.search);
      void this.load();
    });
  }

  start(): void {
    const label = (text: string, control: HTMLElement, extra = '') => h('label', { class: `selector${extra}` }, h('span', null, text), control);
    replaceChildren(
      this.root,
      h('a', { class: 'skip-link', href: '#content' }, 'Skip to the page'),
      h(
        'header',
        { class: 'app-header' },
        h('a', { class: 'brand', href: '?' }, 'oxprof'),
        label('Runs', this.runSelect),
        label('Tools', this.toolSelect),
        label('Hosts', this.hostSelect, ' selector-host'),
        this.refreshButton,
        this.compareButton,
        this.captureButton,
        this.sqlLink,
        h('span', { class: 'spacer' }),
        this.theme.button,
      ),
      this.main,
    );
    void this.showCaptureWhenOffered();
    void this.load();
  }

  /** Shows the Capture profile button when the server says capturing is wired. */
  private async showCaptureWhenOffered(): Promise<void> {
    const capture = this.api.capture;
    if (!this.api.config || !capture) return;
    try {
      const config = await this.api.config();
      if (config.hideCaptureProfileButton !== false) return;
    } catch {
      return; // no config: no button.
    }
    this.captureDialog = new CaptureDialog({
      capture: (params) => capture(params),
      // The new run: refresh the Runs selector and open it (its first tool).
      onCaptured: (run) => this.select({ run, tool: '', host: '' }),
    });
    this.root.appendChild(this.captureDialog.element);
    this.captureButton.classList.remove('hidden');
  }

  private openCapture(): void {
    this.captureDialog?.open();
  }

  /** In the compare view, run B and its host (kept when run A or its host changes). */
  private compareView(): Record<string, string> {
    if (this.state.tool !== COMPARE_TOOL) return {};
    const keep: Record<string, string> = {};
    for (const key of ['run_b', 'host_b']) if (this.state.view[key]) keep[key] = this.state.view[key];
    return keep;
  }

  /** A new selection from the selectors: a new history entry, then load. */
  private select(selection: { run: string; tool: string; host: string }, view: Record<string, string> = {}): void {
    this.state = { ...selection, view };
    history.pushState(null, '', formatState(this.state) || location.pathname);
    void this.load();
  }

  private setPhase(phase: Phase): void {
    document.body.dataset.state = phase;
    if (phase !== 'ready') document.body.classList.remove('fill-viewport');
  }

  /** Loads runs, tools, hosts and the data of the view in the URL, then shows its page. */
  private async load(): Promise<void> {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    this.setPhase('loading');
    disposeCharts();
    replaceChildren(this.main, h('div', { class: 'loading', 'data-role': 'loading' }, h('span', { class: 'spinner' }), 'Looking for runs…'));
    try {
      this.runs = await this.api.runs();
      if (stale()) return;
      if (this.runs.length === 0) {
        await this.showEmpty(stale);
        return;
      }
      const run = this.state.run || this.runs[0] || '';
      fillSelect(this.runSelect, this.runs, run, (r) => r);
      if (!this.runs.includes(run)) {
        throw new ApiError(`No run named "${run}". Available runs: ${this.runs.join(', ')}.`, 404, '');
      }
      this.tools = await this.api.runTools(run);
      if (stale()) return;
      this.sqlLink.setAttribute('href', formatState({ run, tool: QUERY_TOOL, host: '', view: {} }));
      if (this.state.tool === COMPARE_TOOL) {
        await this.showCompare(run, stale);
        return;
      }
      if (this.state.tool === QUERY_TOOL) {
        fillSelect(this.toolSelect, [...this.tools, QUERY_TOOL], QUERY_TOOL, toolName);
        fillSelect(this.hostSelect, [], '', (x) => x);
        if (this.state.run !== run) {
          this.state = { ...this.state, run, host: '' };
          history.replaceState(null, '', formatState(this.state));
        }
        document.title = `SQL · ${run} · oxprof`;
        await this.showTool(stale);
        return;
      }
      const tool = offeredAlias(this.state.tool, this.tools) || defaultTool(this.tools);
      fillSelect(this.toolSelect, this.tools, tool, toolName, toolGroups(this.tools));
      if (!tool) throw new ApiError(`Run "${run}" has no tools (no readable profile files).`, 404, '');
      this.hosts = await this.api.hosts(run, tool);
      if (stale()) return;
      const preferred = this.preferredHost && this.hosts.includes(this.preferredHost) ? this.preferredHost : '';
      this.preferredHost = '';
      const host = this.state.host || preferred || this.hosts[0] || '';
      fillSelect(this.hostSelect, this.hosts, host, (x) => x);
      const resolved = { run, tool, host };
      if (resolved.run !== this.state.run || resolved.tool !== this.state.tool || resolved.host !== this.state.host) {
        this.state = { ...this.state, ...resolved };
        history.replaceState(null, '', formatState(this.state));
      }
      document.title = `${toolName(tool)} · ${run} · oxprof`;
      await this.showTool(stale);
    } catch (e) {
      if (stale()) return;
      this.showError(e);
    }
  }

  private async showTool(stale: () => boolean): Promise<void> {
    const { run, tool, host } = this.state;
    replaceChildren(
      this.main,
      h(
        'div',
        { class: 'loading', 'data-role': 'loading' },
        h('span', { class: 'spinner' }),
        `Loading ${toolName(tool)} for ${run}${host ? ` (${host})` : ''}…`,
        this.api.progress ? progressLine(this.api.progress) : '',
      ),
    );
    const page: Page = pageFor(tool);
    const [data, notes] = toolNeedsNoData(tool)
      ? [null, [] as string[]]
      : await Promise.all([this.api.data(run, tool, host), this.api.notes(run, tool, host).catch(() => [] as string[])]);
    if (stale()) return;
    const view = this.viewStore(stale);
    const ctx: PageContext = {
      api: this.api,
      state: this.state,
      data,
      view,
      link: (t) => toolLink(this.state, t),
      csvUrl: this.api.dataCsvUrl(run, tool, host),
      notes,
    };
    disposeCharts();
    const body = page(ctx);
    // Workspace pages (the trace viewer) fill the window below the header.
    document.body.classList.toggle('fill-viewport', body.dataset.fill === 'viewport');
    replaceChildren(
      this.main,
      h('h1', { class: 'page-title', 'data-role': 'page-title' }, toolName(tool), h('span', { class: 'page-subtitle' }, ` ${run}${host ? ' · ' + host : ''}`)),
      pytorchToolNote(this.tools, tool, (t) => toolLink(this.state, t)),
      notesBox(notes, (t) => toolLink(this.state, t)),
      body,
    );
    this.setPhase('ready');
  }

  /** The page's view keys, kept in the URL. */
  private viewStore(stale: () => boolean): ViewStore {
    // Several keys set together (a page's whole view) write the URL once (each
    // `replaceState` costs a few ms, which panning a trace felt).
    let urlPending = false;
    const view: ViewStore = {
      get: (key) => this.state.view[key] ?? '',
      set: (key, value) => {
        if (value === null || value === '') delete this.state.view[key];
        else this.state.view[key] = value;
        if (urlPending) return;
        urlPending = true;
        queueMicrotask(() => {
          urlPending = false;
          if (stale()) return;
          const next = formatState(this.state);
          if (next !== location.search) history.replaceState(null, '', next || location.pathname);
        });
      },
    };
    return view;
  }

  /** Host selections of a run for a comparison: its hosts, `ALL_HOSTS` first when it has several. */
  private async compareHosts(run: string): Promise<string[]> {
    const tools = run === this.state.run ? this.tools : await this.api.runTools(run);
    const tool = tools.includes('overview_page') ? 'overview_page' : (tools[0] ?? '');
    const hosts = tool ? await this.api.hosts(run, tool) : [];
    return hosts.length > 1 && !hosts.includes(ALL_HOSTS) ? [ALL_HOSTS, ...hosts] : hosts;
  }

  /** The compare view: run A is the header's run and host; the page picks run B. */
  private async showCompare(run: string, stale: () => boolean): Promise<void> {
    fillSelect(this.toolSelect, [...this.tools, COMPARE_TOOL], COMPARE_TOOL, toolName);
    this.hosts = await this.compareHosts(run);
    if (stale()) return;
    const host = this.state.host && this.hosts.includes(this.state.host) ? this.state.host : (this.hosts[0] ?? '');
    fillSelect(this.hostSelect, this.hosts, host, (x) => x);
    if (host !== this.state.host || run !== this.state.run) {
      this.state = { ...this.state, run, host };
      history.replaceState(null, '', formatState(this.state));
    }
    document.title = `Compare · ${run} · oxprof`;
    const api = this.api;
    const ctx: PageContext = {
      api,
      state: this.state,
      data: null,
      view: this.viewStore(stale),
      link: (t) => toolLink(this.state, t),
      csvUrl: '',
    };
    disposeCharts();
    const body = comparePage(ctx, {
      api,
      runs: this.runs,
      hostsOf: (r) => this.compareHosts(r),
      diff: (params) => (api.diff ? api.diff(params) : Promise.reject(new Error('This server cannot compare runs.'))),
      navigate: (next) => this.select(next, next.view),
    });
    document.body.classList.remove('fill-viewport');
    replaceChildren(
      this.main,
      h('h1', { class: 'page-title', 'data-role': 'page-title' }, 'Compare runs', h('span', { class: 'page-subtitle' }, ` ${run}${host ? ' · ' + host : ''}`)),
      body,
    );
    this.setPhase('ready');
  }

  private showError(e: unknown): void {
    disposeCharts();
    const message = e instanceof Error ? e.message : String(e);
    const status = e instanceof ApiError && e.status ? `HTTP ${e.status}` : '';
    replaceChildren(
      this.main,
      h(
        'div',
        { class: 'error', 'data-role': 'error', role: 'alert' },
        h('h2', null, 'Could not load this view'),
        h('p', { 'data-role': 'error-message' }, message),
        status ? h('p', { class: 'muted' }, status) : null,
        h('button', { type: 'button', class: 'button', onclick: () => void this.load() }, 'Try again'),
      ),
    );
    this.setPhase('error');
  }

  private async showEmpty(stale: () => boolean): Promise<void> {
    fillSelect(this.runSelect, [], '', (x) => x);
    fillSelect(this.toolSelect, [], '', (x) => x);
    fillSelect(this.hostSelect, [], '', (x) => x);
    let root = '';
    let reason = '';
    let skipped: string[] = [];
    try {
      const info = await getJson<{ root?: string; empty_reason?: string | null; skipped?: string[] }>('/oxprof/api/runs');
      root = info.root ?? '';
      reason = info.empty_reason ?? '';
      skipped = info.skipped ?? [];
    } catch {
      // The explanation below is enough without the server's details.
    }
    if (stale()) return;
    // A specific reason (profiles that are symlinks out of the served path, a folder that
    // cannot be read) is the headline: it is what the user has to act on.
    const specific = reason !== '' && !/^no profiles found/i.test(reason);
    replaceChildren(
      this.main,
      h(
        'div',
        { class: 'empty card', 'data-role': 'empty' },
        h('h2', { 'data-role': 'empty-headline' }, specific ? reason.charAt(0).toUpperCase() + reason.slice(1) : 'No profiles found'),
        root ? h('p', null, 'oxprof serves ', h('code', null, root), '.') : null,
        h('p', null, 'oxprof looks for XProf/TensorBoard profiles laid out like this:'),
        h(
          'pre',
          { class: 'layout' },
          [
            'LOGDIR/',
            '  [train/]plugins/profile/',
            '    RUN_NAME/                       (one folder per capture, e.g. 2024_01_31_12_00_00)',
            '      HOST.xplane.pb[.gz]           (one file per host)',
          ].join('\n'),
        ),
        h('p', null, 'Start oxprof with that directory (', h('code', null, 'oxprof serve LOGDIR'), '), a run directory, or a single ', h('code', null, '.xplane.pb'), ' file. New runs appear when you press Refresh.'),
        skipped.length ? h('details', null, h('summary', null, `${skipped.length} paths skipped`), h('ul', null, skipped.map((s) => h('li', null, s)))) : null,
      ),
    );
    this.setPhase('empty');
  }
}

function fillSelect(select: HTMLSelectElement, values: string[], selected: string, label: (v: string) => string, groups: [string, string[]][] | null = null): void {
  const option = (v: string) => h('option', { value: v, title: v }, label(v) === v ? v : `${label(v)} (${v})`);
  const options: HTMLElement[] = groups ? groups.filter(([, list]) => list.length).map(([name, list]) => h('optgroup', { label: name }, list.map(option))) : values.map(option);
  if (selected && !values.includes(selected)) options.unshift(h('option', { value: selected }, `${label(selected) === selected ? selected : `${label(selected)} (${selected})`} (not listed)`));
  replaceChildren(select, options);
  select.value = selected;
  select.disabled = values.length === 0;
}
