// tf.data bottleneck analysis (the old TensorBoard profiler's tool, served by oxprof):
// whether the job is input bound, the bottleneck iterator of each slow pipeline with a
// suggestion, the table of input pipelines, and the iterator graph of one pipeline call
// laid out by Graphviz (WebAssembly) from DOT built here: the critical path in bold, the
// bottleneck in red. Pipeline and call rank are kept in the URL (`tfd.pipeline`,
// `tfd.rank`). A profile without tf.data events shows the tool's own message.

import { card, richText } from '../components/common';
import { renderDot } from '../components/dot_render';
import { renderTable } from '../components/table';
import { type DataTable, cellValue, columnIndex, findTableWithColumn } from '../datatable';
import { h, replaceChildren } from '../dom';
import { formatMicros, readableMicros } from '../format';
import type { PageContext } from '../page';

/** Role of an iterator in a call (`type` column): off the critical path, blocking, the bottleneck. */
export const ITERATOR_OTHER = 0;
export const ITERATOR_BLOCKING = 1;
export const ITERATOR_BOTTLENECK = 2;

export interface IteratorNode {
  id: string;
  parent: string;
  type: number;
  /** Iterator kind (`Prefetch`, `MapAndBatch`...). */
  name: string;
  /** `[label, value]` lines of the iterator's card (start time, durations, calls). */
  fields: [string, string][];
}

export interface PipelineCall {
  host: string;
  pipeline: string;
  rank: number;
  nodes: IteratorNode[];
}

/** Decodes the few HTML entities the tool's cards may hold. */
function unescapeHtml(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

/** Text of an HTML fragment: `<br/>` as new lines, other tags dropped (never interpreted). */
export function htmlText(html: string): string {
  return unescapeHtml(html.replace(/<br\s*\/?>/gi, '\n').replace(/<[^>]*>/g, ''));
}

/**
 * An iterator card (`<b>Name</b><br/>Start Time: 1 us<br/>...`) as its name and
 * `[label, value]` fields.
 */
export function parseIteratorCard(html: string): { name: string; fields: [string, string][] } {
  const bold = /<b>([\s\S]*?)<\/b>/i.exec(html);
  const name = bold ? htmlText(bold[1] ?? '') : '';
  const rest = bold ? html.slice((bold.index ?? 0) + bold[0].length) : html;
  const fields: [string, string][] = [];
  for (const line of htmlText(rest).split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const colon = t.indexOf(':');
    fields.push(colon > 0 ? [t.slice(0, colon).trim(), t.slice(colon + 1).trim()] : [t, '']);
  }
  return { name, fields };
}

/** The pipeline calls of the graph table, grouped by (host, pipeline, rank) in table order. */
export function pipelineCalls(table: DataTable | null): PipelineCall[] {
  if (!table) return [];
  const [host, pipeline, rank, name, parent, type] = ['host', 'input_pipeline', 'rank', 'name', 'parent', 'type'].map((id) => columnIndex(table, id)) as [number, number, number, number, number, number];
  const calls = new Map<string, PipelineCall>();
  for (const row of table.rows ?? []) {
    const key = [cellValue(row, host), cellValue(row, pipeline), cellValue(row, rank)].join('\u0000');
    let call = calls.get(key);
    if (!call) {
      call = { host: String(cellValue(row, host) ?? ''), pipeline: String(cellValue(row, pipeline) ?? ''), rank: Number(cellValue(row, rank) ?? 0), nodes: [] };
      calls.set(key, call);
    }
    const card = parseIteratorCard(row.c[name]?.f ?? String(cellValue(row, name) ?? ''));
    call.nodes.push({
      id: String(cellValue(row, name) ?? ''),
      parent: String(cellValue(row, parent) ?? ''),
      type: Number(cellValue(row, type) ?? 0),
      name: card.name,
      fields: card.fields,
    });
  }
  return [...calls.values()];
}

/** The key of a pipeline in the URL and the selector: `host/pipeline`. */
export function pipelineKey(host: string, pipeline: string): string {
  return `${host}/${pipeline}`;
}

/** A DOT string literal. */
function dotString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** Text escaped for a Graphviz HTML-like label. */
function dotHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** An iterator's box label (Graphviz HTML-like): its kind in bold, then its card's lines. */
export function iteratorLabel(n: IteratorNode): string {
  const lines = n.fields.map(([k, v]) => dotHtml(v ? `${k}: ${readableMicros(v)}` : k));
  return `<<B>${dotHtml(n.name || n.id)}</B>${lines.map((l) => `<BR/>${l}`).join('')}>`;
}

/**
 * The DOT of one pipeline call: one box per iterator (kind, then its card's lines), inputs
 * on the left of the iterator that consumes them (data flows left to right, the root on the
 * right); the critical path (blocking iterators and the edges between them) in bold, the
 * bottleneck in red.
 */
export function pipelineDot(nodes: IteratorNode[]): string {
  const ids = new Map(nodes.map((n, i) => [n.id, `n${i}`]));
  const lines = [
    'digraph pipeline {',
    '  rankdir=RL;',
    '  bgcolor="transparent";',
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", color="#9aa5b1", fontname="Helvetica", fontsize=10, penwidth=1, margin="0.3,0.08"];',
    '  edge [color="#9aa5b1", arrowsize=0.7, dir=back];',
  ];
  nodes.forEach((n, i) => {
    const attrs = [`label=${iteratorLabel(n)}`, `id=${dotString(`iter-${n.id}`)}`, `tooltip=${dotString(n.name)}`];
    if (n.type === ITERATOR_BOTTLENECK) attrs.push('color="#d62728"', 'fontcolor="#b00020"', 'fillcolor="#fde8e8"', 'penwidth=3', 'class="bottleneck"');
    else if (n.type === ITERATOR_BLOCKING) attrs.push('color="#333333"', 'penwidth=2.5', 'class="critical"');
    lines.push(`  n${i} [${attrs.join(', ')}];`);
  });
  for (const n of nodes) {
    const parent = ids.get(n.parent);
    const child = ids.get(n.id);
    if (!parent || !child) continue;
    const parentNode = nodes.find((x) => x.id === n.parent);
    const critical = n.type >= ITERATOR_BLOCKING && (parentNode?.type ?? 0) >= ITERATOR_BLOCKING;
    // Consumer first (ranked right with RL); dir=back points the arrow from the input to it.
    lines.push(`  ${parent} -> ${child}${critical ? ' [penwidth=2.5, color="#333333"]' : ''};`);
  }
  lines.push('}');
  return lines.join('\n');
}

export { setDotRenderer as setTfDataDotRenderer } from '../components/dot_render';

/** Parses Graphviz's SVG into an element safe to insert (no scripts, event attributes or external links). */
export function safeSvg(svgText: string): SVGSVGElement {
  const doc = new DOMParser().parseFromString(svgText, 'image/svg+xml');
  if (doc.documentElement.nodeName.toLowerCase() !== 'svg') throw new Error('Graphviz did not return an SVG');
  const svg = document.importNode(doc.documentElement, true) as unknown as SVGSVGElement;
  svg.querySelectorAll('script, foreignObject').forEach((e) => e.remove());
  svg.querySelectorAll('*').forEach((el) => {
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on')) el.removeAttribute(attr.name);
      else if ((name === 'href' || name === 'xlink:href') && !attr.value.startsWith('#')) el.removeAttribute(attr.name);
    }
  });
  return svg;
}

const ROLE_NAMES = ['', 'critical path', 'bottleneck'];

/** The iterators of a call as a table (also the graph's text fallback). */
export function iteratorTable(call: PipelineCall): DataTable {
  const byId = new Map(call.nodes.map((n) => [n.id, n]));
  const field = (n: IteratorNode, label: string) => {
    const v = n.fields.find(([k]) => k === label)?.[1] ?? '';
    const m = /^(-?[\d,.]+)\s*us$/.exec(v);
    return m ? Number((m[1] ?? '').replace(/,/g, '')) : v ? Number(v.replace(/,/g, '')) : null;
  };
  return {
    cols: [
      { id: 'iterator', label: 'Iterator', type: 'string' },
      { id: 'input_of', label: 'Input of', type: 'string' },
      { id: 'role', label: 'Role', type: 'string' },
      { id: 'start_us', label: 'Start time (us)', type: 'number' },
      { id: 'total_us', label: 'Total duration (us)', type: 'number' },
      { id: 'self_us', label: 'Self duration (us)', type: 'number' },
      { id: 'calls', label: '# calls', type: 'number' },
      { id: 'id', label: 'Iterator id', type: 'string' },
    ],
    rows: call.nodes.map((n) => ({
      c: [
        { v: n.name },
        { v: byId.get(n.parent)?.name ?? '' },
        { v: ROLE_NAMES[n.type] ?? '' },
        { v: field(n, 'Start Time') },
        { v: field(n, 'Total Duration') },
        { v: field(n, 'Self Duration') },
        { v: field(n, '# Calls') },
        { v: n.id },
      ],
    })),
  };
}

export function tfDataPage(ctx: PageContext): HTMLElement {
  const tables = ctx.data;
  const graph = findTableWithColumn(tables, 'parent');
  const summary = findTableWithColumn(tables, 'num_slow_calls');
  const analysis = findTableWithColumn(tables, 'bottleneck');
  const page = h('div', { class: 'page tf-data', 'data-page': 'tf_data_bottleneck_analysis' });
  const p = analysis?.p ?? {};
  const inputBound = p.is_input_bound === 'true';
  const message = p.summary_message ?? '';
  const calls = pipelineCalls(graph);

  if (!calls.length && !(summary?.rows ?? []).length && !(analysis?.rows ?? []).length) {
    page.append(
      card(
        'tf.data bottleneck analysis',
        h('p', { class: 'empty-chart', 'data-role': 'tfd-empty' }, message || 'No tf.data activity captured in this profile.'),
        h('p', { class: 'muted' }, 'TensorFlow records Iterator::… events while a tf.data iterator runs during the capture; JAX programs and TensorFlow programs fed otherwise have none.'),
      ),
    );
    return page;
  }

  // ---- summary: input bound?, first bottleneck and its suggestion ----
  const first = analysis?.rows?.[0];
  const col = (id: string) => (analysis ? columnIndex(analysis, id) : -1);
  page.append(
    card(
      'Summary',
      h(
        'p',
        { class: `statement ${inputBound ? 'remark-red' : 'remark-green'}`, 'data-role': 'tfd-input-bound', 'data-value': inputBound ? 'true' : 'false' },
        inputBound ? 'Your job is input bound: a tf.data input pipeline is slower than 50 µs.' : 'Your job is not input bound by tf.data.',
      ),
      message ? h('p', { 'data-role': 'tfd-message' }, message) : null,
      first
        ? h(
            'div',
            { class: 'remark', 'data-role': 'tfd-bottleneck' },
            h('strong', null, `Slowest pipeline: ${String(cellValue(first, col('host')) ?? '')} ${String(cellValue(first, col('input_pipeline')) ?? '')}, max latency ${formatMicros(Number(cellValue(first, col('max_latency')) ?? 0))}`),
            h('pre', { class: 'tfd-bottleneck-text' }, readableMicros(htmlText(String(cellValue(first, col('bottleneck')) ?? '')))),
            h('p', { 'data-role': 'tfd-suggestion' }, ...richText(String(cellValue(first, col('suggestion')) ?? ''))),
          )
        : null,
    ),
  );

  if (analysis) {
    page.append(
      renderTable(
        analysis,
        {
          key: 'tfd-bottlenecks',
          title: 'Bottleneck per input pipeline',
          csvName: 'tf_data_bottlenecks',
          filterColumns: ['host', 'input_pipeline'],
          renderCell: (column, value) => {
            if (column === 'bottleneck') return h('span', { class: 'tfd-multiline' }, readableMicros(htmlText(String(value ?? ''))));
            if (column === 'suggestion') return h('span', null, ...richText(String(value ?? '')));
            return null;
          },
          emptyText: 'No host input pipeline was captured.',
        },
        ctx.view,
      ),
    );
  }
  if (summary) {
    page.append(
      renderTable(
        summary,
        {
          key: 'tfd-pipelines',
          title: 'Input pipelines (latency of their calls)',
          description: 'Host:N pipelines feed the host, Device:N pipelines feed a device. A call is slow above 50 µs.',
          csvName: 'tf_data_pipelines',
          filterColumns: ['host', 'input_pipeline'],
        },
        ctx.view,
      ),
    );
  }

  // ---- the iterator graph of one call ----
  if (!calls.length) return page;
  const pipelines: { key: string; host: string; pipeline: string; ranks: number[] }[] = [];
  for (const c of calls) {
    const key = pipelineKey(c.host, c.pipeline);
    let entry = pipelines.find((x) => x.key === key);
    if (!entry) pipelines.push((entry = { key, host: c.host, pipeline: c.pipeline, ranks: [] }));
    entry.ranks.push(c.rank);
  }
  const pipelineSelect = h('select', { 'data-role': 'tfd-pipeline', 'aria-label': 'Input pipeline' }, pipelines.map((x) => h('option', { value: x.key }, `${x.host} · ${x.pipeline}`)));
  const rankSelect = h('select', { 'data-role': 'tfd-rank', 'aria-label': 'Call' });
  const status = h('span', { class: 'muted', 'data-role': 'tfd-graph-status' });
  const stage = h('div', { class: 'tfd-stage', 'data-role': 'tfd-stage' });
  const graphHost = h('div', { class: 'tfd-graph', 'data-chart': 'tfd-graph', 'data-ready': 'false' }, stage);
  const tableHolder = h('div');
  page.append(
    card(
      'Iterator graph of a pipeline call',
      h(
        'div',
        { class: 'controls' },
        h('label', { class: 'selector' }, h('span', null, 'Pipeline'), pipelineSelect),
        h('label', { class: 'selector' }, h('span', null, 'Call'), rankSelect),
        status,
      ),
      h(
        'p',
        { class: 'muted tfd-legend' },
        'Each box is an iterator; its inputs are on its left (data flows left to right, to the root). ',
        h('span', { class: 'tfd-key tfd-key-critical' }, 'Bold'),
        ': on the critical path (the call waited for it). ',
        h('span', { class: 'tfd-key tfd-key-bottleneck' }, 'Red'),
        ': the bottleneck (the blocking iterator with the longest self time).',
      ),
      graphHost,
    ),
    tableHolder,
  );

  let seq = 0;
  const currentPipeline = () => pipelines.find((x) => x.key === pipelineSelect.value) ?? pipelines[0];
  const fillRanks = (rank: number) => {
    const entry = currentPipeline();
    const ranks = entry?.ranks ?? [];
    replaceChildren(rankSelect, ranks.map((r) => h('option', { value: String(r) }, r === 0 ? 'Slowest call (rank 0)' : `Rank ${r}`)));
    rankSelect.value = String(ranks.includes(rank) ? rank : (ranks[0] ?? 0));
  };
  const draw = async () => {
    const mine = ++seq;
    const entry = currentPipeline();
    const rank = Number(rankSelect.value);
    const call = calls.find((c) => c.host === entry?.host && c.pipeline === entry?.pipeline && c.rank === rank);
    graphHost.dataset.ready = 'false';
    if (!call) return;
    graphHost.dataset.pipeline = pipelineKey(call.host, call.pipeline);
    graphHost.dataset.rank = String(call.rank);
    const bottleneck = call.nodes.find((n) => n.type === ITERATOR_BOTTLENECK);
    replaceChildren(
      tableHolder,
      renderTable(
        iteratorTable(call),
        { key: 'tfd-iterators', title: `Iterators of ${call.host} · ${call.pipeline}, call rank ${call.rank}`, csvName: `tf_data_iterators_${call.pipeline}_${call.rank}`, filterColumns: ['iterator', 'role'] },
        ctx.view,
      ),
    );
    replaceChildren(status, `${call.nodes.length} iterators${bottleneck ? `; bottleneck: ${bottleneck.name}` : ''}`);
    replaceChildren(stage, h('span', { class: 'spinner' }), 'Laying out the graph…');
    const dot = pipelineDot(call.nodes);
    try {
      const svg = safeSvg(await renderDot(dot));
      if (mine !== seq) return;
      svg.setAttribute('data-role', 'tfd-svg');
      svg.classList.add('tfd-svg');
      replaceChildren(stage, svg);
    } catch (e) {
      if (mine !== seq) return;
      const text = e instanceof Error ? e.message : String(e);
      replaceChildren(
        stage,
        h(
          'div',
          { class: 'error', 'data-role': 'tfd-graph-error' },
          h('p', null, `Graphviz could not draw the graph: ${text}`),
          /WebAssembly|wasm|unsafe-eval/i.test(text) ? h('p', { class: 'muted' }, 'The graph is drawn by Graphviz compiled to WebAssembly, which this page is not allowed to run. The iterators are listed in the table below.') : null,
        ),
      );
    }
    graphHost.dataset.ready = 'true';
  };

  const wanted = pipelines.find((x) => x.key === ctx.view.get('tfd.pipeline'));
  pipelineSelect.value = (wanted ?? pipelines[0])?.key ?? '';
  fillRanks(Number(ctx.view.get('tfd.rank') || 0));
  pipelineSelect.addEventListener('change', () => {
    ctx.view.set('tfd.pipeline', pipelineSelect.value === pipelines[0]?.key ? null : pipelineSelect.value);
    fillRanks(0);
    ctx.view.set('tfd.rank', null);
    void draw();
  });
  rankSelect.addEventListener('change', () => {
    ctx.view.set('tfd.rank', rankSelect.value === '0' ? null : rankSelect.value);
    void draw();
  });
  void draw();
  return page;
}
