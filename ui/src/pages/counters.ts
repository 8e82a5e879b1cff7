// The pages of the tools that read XSpaces directly: perf counters (every counter reading,
// with a chart of one sample's largest counters), megascale stats (DCN collectives: a chart
// of each rendezvous' slack and stall, and the table) and smart suggestions (XProf's
// rule-based advice, HTML from the server shown as text-safe markup).

import { PALETTE, chartElement } from '../components/chart';
import { card, metric } from '../components/common';
import { renderTable } from '../components/table';
import { asTables, cellValue, columnIndex, type DataTable } from '../datatable';
import { PROFILE_PREFIX, buildUrl } from '../api';
import { escapeHtml, h } from '../dom';
import type { PageContext } from '../page';

const EMPTY: DataTable = { cols: [], rows: [] };

/** ECharts option of horizontal bars, largest first (`pairs` as given). */
function barOption(title: string, pairs: [string, number][], unit: string): Record<string, unknown> {
  const shown = [...pairs].reverse();
  return {
    animation: false,
    color: PALETTE,
    title: { text: title, left: 'center', textStyle: { fontSize: 13 } },
    tooltip: {
      trigger: 'axis',
      confine: true,
      axisPointer: { type: 'shadow' },
      formatter: (ps: { name: string; value: number }[]) =>
        ps.map((p) => `${escapeHtml(p.name)}<br>${p.value.toLocaleString('en-US', { maximumFractionDigits: 6 })} ${escapeHtml(unit)}`).join('<br>'),
    },
    grid: { left: 8, right: 24, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'value', name: unit },
    yAxis: {
      type: 'category',
      data: shown.map(([name]) => name),
      axisLabel: { formatter: (name: string) => (name.length > 48 ? `…${name.slice(-47)}` : name) },
    },
    series: [{ type: 'bar', data: shown.map(([, v]) => v) }],
  };
}

/** `perf_counters`: counter readings per host, chip and sample. */
export function perfCountersPage(ctx: PageContext): HTMLElement {
  const table = asTables(ctx.data)[0] ?? EMPTY;
  const page = h('div', { class: 'page perf-counters', 'data-page': 'perf_counters' });
  const rows = table.rows ?? [];
  const host = columnIndex(table, 'Host');
  const chip = columnIndex(table, 'Chip');
  const kernel = columnIndex(table, 'Kernel');
  const sample = columnIndex(table, 'Sample');
  const counter = columnIndex(table, 'Counter');
  const value = columnIndex(table, 'Value');
  const distinct = (i: number) => new Set(rows.map((r) => String(cellValue(r, i)))).size;
  page.append(
    card(
      'Performance counters',
      h(
        'div',
        { class: 'metrics' },
        metric('Readings', rows.length.toLocaleString('en-US'), 'readings'),
        metric('Counters', distinct(counter).toLocaleString('en-US'), 'counters'),
        metric('Hosts', distinct(host).toLocaleString('en-US'), 'hosts'),
        metric('Chip samples', new Set(rows.map((r) => `${cellValue(r, host)}/${cellValue(r, chip)}/${cellValue(r, sample)}`)).size.toLocaleString('en-US'), 'samples'),
      ),
    ),
  );
  const first = rows[0];
  if (first) {
    // The first sample's largest counters (values differ by orders of magnitude per kind).
    const same = (r: (typeof rows)[number]) => [host, chip, sample].every((i) => cellValue(r, i) === cellValue(first, i));
    const pairs = rows
      .filter(same)
      .map((r): [string, number] => [String(cellValue(r, counter)), Number(cellValue(r, value) ?? 0)])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15);
    const what = `${cellValue(first, host)}, chip ${cellValue(first, chip)}, ${cellValue(first, kernel)} sample ${cellValue(first, sample)}`;
    page.append(card('Largest counters of the first sample', h('p', { class: 'hint', 'data-role': 'chart-sample' }, what), chartElement('perf-counters-top', barOption('Counter value, top 15', pairs, 'count'), undefined, 420)));
  } else {
    page.append(card('Largest counters of the first sample', h('p', { class: 'empty-chart', 'data-role': 'no-counters' }, 'No performance counter events in this profile (TPU or GPU planes with counter_value events).')));
  }
  // XProf's Value cells carry the hex text as their formatted value: shown in a column of
  // its own beside the number (which sorts).
  const withHex: DataTable = {
    cols: [...(table.cols ?? []).map((c) => (c.id === 'Value' ? { ...c, label: 'Value' } : c)), { id: 'ValueHex', label: 'Value (hex)', type: 'string' }],
    rows: rows.map((r) => ({ c: [...r.c, { v: r.c[value]?.f ?? '' }] })),
  };
  page.append(
    renderTable(
      withHex,
      {
        key: 'perf-counters',
        title: 'Counter readings',
        csvName: 'perf_counters',
        formats: { Chip: 'integer', Sample: 'integer', Value: 'integer' },
        filterColumns: ['Counter', 'Kernel', 'Description', 'Set', 'Host', 'ValueHex'],
        keyColumns: ['Host', 'Chip', 'Kernel', 'Sample', 'Counter', 'Value', 'ValueHex', 'Description', 'Set'],
        filterPlaceholder: 'Filter by counter, kernel, description or set',
        emptyText: 'No performance counter events in this profile.',
      },
      ctx.view,
    ),
  );
  return page;
}

/**
 * XProf's "Open in Perfetto" of the megascale page: the host's Perfetto trace of its TPU ops
 * and Megascale collectives (`megascale_stats` with `perfetto=true`, gzipped), to download
 * and open in ui.perfetto.dev. XProf offers it per host only.
 */
function perfettoTraceCard(ctx: PageContext): HTMLElement {
  const { run, host } = ctx.state;
  if (!host || host === 'ALL_HOSTS') {
    return card('Perfetto trace', h('p', { 'data-role': 'perfetto-needs-host' }, 'Select a host in the left side bar to get its Perfetto trace of TPU ops and DCN collectives.'));
  }
  const href = buildUrl(`${PROFILE_PREFIX}/data`, { run, tag: 'megascale_stats', host, perfetto: 'true' });
  const link = h('a', { href, download: `${host}.megascale.perfetto-trace.gz`, 'data-role': 'perfetto-trace' }, 'Download the Perfetto trace');
  return card('Perfetto trace', h('p', {}, link, ' of this host\'s TPU ops and DCN collectives (gzip; open it at ui.perfetto.dev).'));
}

/** `megascale_stats`: DCN collectives per rendezvous. */
export function megascaleStatsPage(ctx: PageContext): HTMLElement {
  const table = asTables(ctx.data)[0] ?? EMPTY;
  const page = h('div', { class: 'page megascale-stats', 'data-page': 'megascale_stats' });
  const rows = table.rows ?? [];
  const name = columnIndex(table, 'rendezvous_name');
  const slack = columnIndex(table, 'slack_time');
  page.append(perfettoTraceCard(ctx));
  if (rows.length) {
    const option = barOption(
      'Slack time per rendezvous (ms)',
      rows.map((r): [string, number] => [String(cellValue(r, name)), Number(cellValue(r, slack) ?? 0)]).sort((a, b) => b[1] - a[1]).slice(0, 20),
      'ms',
    );
    page.append(card('DCN collectives', chartElement('megascale-slack', option, undefined, 360)));
  } else {
    page.append(
      card(
        'DCN collectives',
        h('p', { class: 'empty-chart', 'data-role': 'no-collectives' }, 'No DCN collectives in this profile (megascale stats need MegaScale: events of a multi-slice TPU run).'),
      ),
    );
  }
  page.append(
    renderTable(
      table,
      {
        key: 'megascale',
        title: 'Collectives by rendezvous',
        csvName: 'megascale_stats',
        formats: { occurrences: 'integer' },
        filterColumns: ['rendezvous_name', 'recv_op_name', 'send_op_name', 'transfer_type'],
        filterPlaceholder: 'Filter by rendezvous or op name',
        emptyText: 'No DCN collectives in this profile.',
      },
      ctx.view,
    ),
  );
  return page;
}

interface Suggestion {
  ruleName?: string;
  suggestionText?: string;
}

/** The suggestions of a `smart_suggestion` body. */
export function suggestionsOf(data: unknown): Suggestion[] {
  const list = (data as { suggestions?: unknown } | null)?.suggestions;
  return Array.isArray(list) ? (list as Suggestion[]) : [];
}

/**
 * XProf's suggestion HTML reduced to safe markup: its text, with the few tags XProf writes
 * (p, ul, li, b) rebuilt as elements; anything else is shown as text.
 */
export function suggestionBody(html: string): HTMLElement {
  const root = h('div', { class: 'suggestion-text' });
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const allowed = new Set(['P', 'UL', 'LI', 'B']);
  const copy = (from: Node, to: HTMLElement) => {
    for (const child of Array.from(from.childNodes)) {
      if (child.nodeType === Node.TEXT_NODE) to.append(child.textContent ?? '');
      else if (child instanceof Element && allowed.has(child.tagName)) {
        const el = document.createElement(child.tagName.toLowerCase());
        copy(child, el);
        to.append(el);
      } else to.append(child.textContent ?? '');
    }
  };
  copy(doc.body, root);
  return root;
}

/** The list of suggestions (also shown on the overview page); `link` makes tool names links. */
export function suggestionsCard(data: unknown, link?: (tool: string) => string): HTMLElement {
  const suggestions = suggestionsOf(data);
  return card(
    'Smart suggestions',
    suggestions.length
      ? h(
          'ul',
          { class: 'suggestions', 'data-role': 'suggestions' },
          ...suggestions.map((s) => h('li', { 'data-rule': s.ruleName ?? '' }, h('strong', {}, s.ruleName ?? ''), suggestionBody(s.suggestionText ?? ''))),
        )
      : h(
          'p',
          { 'data-role': 'no-suggestions' },
          // XProf's open rule set checks a few patterns (most of them TPU-only): no rule
          // firing is not "no bottleneck" (an input-bound GPU run fires none).
          'XProf’s rules made no suggestion. They check a few patterns, most of them TPU-only, so this does not mean there is no bottleneck: ',
          link ? h('a', { href: link('input_pipeline_analyzer'), class: 'tool-link' }, 'the input pipeline analysis') : 'the input pipeline analysis',
          ' and the step-time breakdown say where the time goes.',
        ),
  );
}

/** `smart_suggestion`: XProf's rule-based advice for the run. */
export function smartSuggestionPage(ctx: PageContext): HTMLElement {
  const page = h('div', { class: 'page smart-suggestion', 'data-page': 'smart_suggestion' });
  page.append(suggestionsCard(ctx.data, ctx.link));
  return page;
}

/**
 * The overview page's smart-suggestions section: loads `smart_suggestion` (all hosts) on
 * its own, so the overview draws at once; says so when the server cannot answer.
 */
export function smartSuggestionsSection(ctx: PageContext): HTMLElement {
  const section = h('div', { class: 'overview-suggestions', 'data-role': 'smart-suggestions', 'data-state': 'loading' }, card('Smart suggestions', h('p', { class: 'hint' }, 'Loading…')));
  ctx.api
    .data(ctx.state.run, 'smart_suggestion', 'ALL_HOSTS')
    .then((data) => {
      section.replaceChildren(suggestionsCard(data, ctx.link));
      section.dataset.state = 'ready';
    })
    .catch((err: unknown) => {
      section.replaceChildren(card('Smart suggestions', h('p', { class: 'hint', 'data-role': 'suggestions-error' }, `Not available: ${err instanceof Error ? err.message : String(err)}`)));
      section.dataset.state = 'error';
    });
  return section;
}

/** `utilization_viewer`: TPU unit utilization (achieved vs peak) per device and sample. */
export function utilizationViewerPage(ctx: PageContext): HTMLElement {
  const table = asTables(ctx.data)[0] ?? EMPTY;
  const page = h('div', { class: 'page utilization-viewer', 'data-page': 'utilization_viewer' });
  const rows = table.rows ?? [];
  const [device, sample, node, name, achieved, peak] = ['device', 'sample', 'node', 'name', 'achieved', 'peak'].map((id) => columnIndex(table, id)) as [number, number, number, number, number, number];
  const first = rows[0];
  if (first) {
    // One sample's metrics as percent of their peak (metrics without a peak left out).
    const same = (r: (typeof rows)[number]) => cellValue(r, device) === cellValue(first, device) && cellValue(r, sample) === cellValue(first, sample);
    const pairs = rows
      .filter((r) => same(r) && Number(cellValue(r, peak) ?? 0) > 0)
      .map((r): [string, number] => [`${cellValue(r, name)} (node ${cellValue(r, node)})`, (100 * Number(cellValue(r, achieved) ?? 0)) / Number(cellValue(r, peak))]);
    page.append(
      card(
        'Utilization of the first sample',
        h('p', { class: 'hint', 'data-role': 'chart-sample' }, `device ${cellValue(first, device)}, sample ${cellValue(first, sample)}: achieved as % of peak`),
        chartElement('utilization-first', barOption('Achieved / peak (%)', pairs, '%'), undefined, Math.max(360, 18 * pairs.length + 60)),
      ),
    );
  } else {
    page.append(card('Utilization', h('p', { class: 'empty-chart', 'data-role': 'no-utilization' }, 'No TPU v6e or v7x counter samples in this host (the utilization viewer needs TPU performance counters).')));
  }
  page.append(
    renderTable(
      table,
      {
        key: 'utilization',
        title: 'Utilization by device, sample and unit',
        csvName: 'utilization_viewer',
        formats: { host: 'integer', device: 'integer', sample: 'integer', node: 'integer' },
        filterColumns: ['name', 'unit'],
        filterPlaceholder: 'Filter by metric or unit',
        emptyText: 'No TPU v6e or v7x counter samples in this host.',
      },
      ctx.view,
    ),
  );
  return page;
}
