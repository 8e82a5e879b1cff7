// Graph viewer: the HLO neighbourhood of an op, laid out by Graphviz (WebAssembly) from the
// server's DOT (`/data?tag=graph_viewer&type=dot`). Module selector (`/module_list`), op
// name, graph width, merge-fusion and metadata options; pan (drag) and zoom (wheel,
// buttons) on the SVG; a click on a node re-centres the graph on it; the module's text
// (`short_txt`, `long_txt`) as another view. Module, op and options are in the URL, so the
// trace viewer, op profile, HLO stats and roofline pages can link here.

import { PROFILE_PREFIX, buildUrl, getText } from '../api';
import { card } from '../components/common';
import { renderDot } from '../components/dot_render';
import { costliestFirst, fetchModuleList, fillModuleSelect, traceProgramTimes } from '../components/xla';
import { h, replaceChildren } from '../dom';
import type { PageContext } from '../page';

export { type DotRenderer, setDotRenderer } from '../components/dot_render';

export type GraphView = 'graph' | 'short_txt' | 'long_txt';
const VIEWS: [GraphView, string][] = [
  ['graph', 'Graph'],
  ['short_txt', 'Text (short)'],
  ['long_txt', 'Text (long)'],
];
export const DEFAULT_WIDTH = 3;

/** The DOT of a response: plain DOT, or the DOT embedded in XProf's `type=graph` HTML page. */
export function extractDot(text: string): string {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('digraph') || trimmed.startsWith('graph') || trimmed.startsWith('strict')) return text;
  const m = /const data = `([\s\S]*?)`;/.exec(text);
  return m?.[1] ?? text;
}

/**
 * XLA's DOT carries a stylesheet (hover colours of edges) as a URI-escaped data URI that
 * Graphviz handles badly: it is cut out of the DOT (as XProf's page does) and returned as
 * CSS for the SVG, without its `@import` of a web font (the page loads nothing from elsewhere).
 */
export function splitStylesheet(dot: string): { dot: string; css: string } {
  const re = /stylesheet=<([\s\S]*?)\n>\n/m;
  const m = re.exec(dot);
  if (!m) return { dot, css: '' };
  let css = (m[1] ?? '').replace(/\s*data:[^,]*,/, '');
  try {
    css = decodeURIComponent(css.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    css = '';
  }
  // XLA's font rule asks for Roboto (imported from the web): fall back to local sans fonts,
  // which are closer to Graphviz's text measurements than its serif default.
  css = css.replace(/@import[^;]*;/g, '').replace(/font-family:\s*'Roboto';/g, "font-family: 'Roboto', Arial, sans-serif;");
  return { dot: dot.replace(re, ''), css };
}

/** An SVG viewBox. */
export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** The box zoomed by `factor` (> 1 zooms out) keeping the point (`ax`, `ay`) in place. */
export function zoomBox(box: Box, factor: number, ax: number, ay: number): Box {
  const f = Math.max(0.02, Math.min(50, factor));
  return { x: ax - (ax - box.x) * f, y: ay - (ay - box.y) * f, w: box.w * f, h: box.h * f };
}

/** The box moved by (`dx`, `dy`) in its own units. */
export function panBox(box: Box, dx: number, dy: number): Box {
  return { ...box, x: box.x + dx, y: box.y + dy };
}

/** The name a node or cluster of XLA's graph shows in bold (its instruction, or the fusion / subcomputation owner). */
export function displayedName(g: Element): string {
  const bold = [...g.querySelectorAll('text')].find((t) => t.getAttribute('font-weight') === 'bold');
  return (bold?.textContent ?? '').trim();
}

/** Names that are not instructions of the module (fused parameters are shown as `Parameter N`). */
function isInstructionName(name: string): boolean {
  return !!name && !/^Parameter \d+$/.test(name) && !name.includes(' ');
}

/**
 * Parses Graphviz's SVG into an element safe to insert (no scripts, no event attributes,
 * no external links), marks every node and cluster with `data-node-name` and the one named
 * `center` with `data-center`; returns the element and the centre (or null).
 */
export function prepareSvg(svgText: string, center: string): { svg: SVGSVGElement; center: Element | null } {
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
  let centre: Element | null = null;
  svg.querySelectorAll('g.node, g.cluster').forEach((g) => {
    const name = displayedName(g);
    if (!name) return;
    g.setAttribute('data-node-name', name);
    if (isInstructionName(name)) g.classList.add('gv-clickable');
    if (name === center && (!centre || g.classList.contains('node'))) centre = g;
  });
  if (centre) (centre as Element).setAttribute('data-center', 'true');
  return { svg, center: centre };
}

export function graphViewerPage(ctx: PageContext): HTMLElement {
  const { run } = ctx.state;
  const view = ctx.view;
  const widthOf = () => {
    const n = Number(view.get('graph_width'));
    return Number.isInteger(n) && n > 0 ? n : DEFAULT_WIDTH;
  };
  const currentView = (): GraphView => (VIEWS.some(([k]) => k === view.get('gv.view')) ? (view.get('gv.view') as GraphView) : 'graph');

  const moduleSelect = h('select', { 'data-role': 'gv-module', 'aria-label': 'HLO module' }, h('option', { value: '' }, 'Loading modules…'));
  const nodeInput = h('input', { type: 'search', 'data-role': 'gv-node', placeholder: 'Op name, e.g. fusion.3', 'aria-label': 'Op name', class: 'filter' });
  const widthInput = h('input', { type: 'number', min: 1, max: 20, step: 1, 'data-role': 'gv-width', 'aria-label': 'Graph width', class: 'gv-width' });
  const mergeBox = h('input', { type: 'checkbox', 'data-role': 'gv-merge-fusion', 'aria-label': 'Merge fusion' });
  const metaBox = h('input', { type: 'checkbox', 'data-role': 'gv-metadata', 'aria-label': 'Show metadata' });
  const viewSelect = h('select', { 'data-role': 'gv-view', 'aria-label': 'View' }, VIEWS.map(([k, label]) => h('option', { value: k }, label)));
  const submit = h('button', { type: 'submit', class: 'button primary', 'data-role': 'gv-search' }, 'Show graph');
  nodeInput.value = view.get('node_name');
  widthInput.value = String(widthOf());
  mergeBox.checked = view.get('merge_fusion') === 'true';
  metaBox.checked = view.get('show_metadata') === 'true';
  viewSelect.value = currentView();

  const label = (text: string, control: HTMLElement) => h('label', { class: 'selector' }, h('span', null, text), control);
  const form = h(
    'form',
    { class: 'controls gv-controls', 'data-role': 'gv-form' },
    label('Module', moduleSelect),
    label('Op name', nodeInput),
    label('Graph width', widthInput),
    h('label', { class: 'selector', title: 'Hide the fusion subcomputations' }, mergeBox, h('span', null, 'Merge fusion')),
    h('label', { class: 'selector' }, metaBox, h('span', null, 'Show metadata')),
    label('View', viewSelect),
    submit,
  );
  const status = h('div', { class: 'gv-status', 'data-role': 'gv-status' });
  const stage = h('div', { class: 'gv-stage', 'data-role': 'gv-stage' });
  const zoomIn = h('button', { type: 'button', class: 'button', 'data-role': 'gv-zoom-in', title: 'Zoom in' }, '+');
  const zoomOut = h('button', { type: 'button', class: 'button', 'data-role': 'gv-zoom-out', title: 'Zoom out' }, '−');
  const fit = h('button', { type: 'button', class: 'button', 'data-role': 'gv-fit', title: 'Fit the whole graph' }, 'Fit');
  const downloads = h('span', { class: 'gv-downloads' });
  const toolbar = h('div', { class: 'controls gv-toolbar' }, status, h('div', { class: 'spacer' }), downloads, zoomOut, zoomIn, fit);
  const host = h('div', { class: 'gv-host', 'data-chart': 'graph', 'data-ready': 'false' }, toolbar, stage);
  const page = h(
    'div',
    { class: 'page graph-viewer', 'data-page': 'graph_viewer' },
    card(null, form, h('p', { class: 'muted gv-help' }, 'Drag to pan, wheel or +/− to zoom. Click a node to centre the graph on it.')),
    card(null, host),
  );

  let modules: string[] = [];
  let svg: SVGSVGElement | null = null;
  let box: Box = { x: 0, y: 0, w: 1, h: 1 };
  let full: Box = box;
  let seq = 0;

  const setStatus = (...children: (Node | string)[]) => replaceChildren(status, ...children);
  const setBox = (b: Box) => {
    box = b;
    svg?.setAttribute('viewBox', `${b.x} ${b.y} ${b.w} ${b.h}`);
  };
  const done = (): void => {
    host.dataset.ready = 'true';
  };

  function params(type: string): Record<string, string> {
    const module = moduleSelect.value;
    // No `host`: XProf's frontend sends the module as the host, which oxprof's HTTP layer
    // rejects as an unknown host; the module is named by `module_name`.
    const p: Record<string, string> = { run, tag: 'graph_viewer', module_name: module, type };
    if (type === 'dot') {
      p.node_name = nodeInput.value.trim();
      p.graph_width = String(widthOf());
      if (mergeBox.checked) p.merge_fusion = 'true';
    }
    if (metaBox.checked) p.show_metadata = 'true';
    return p;
  }

  /** Saves the form into the URL. */
  function saveState(): void {
    view.set('module_name', moduleSelect.value || null);
    view.set('program_id', null);
    view.set('node_name', nodeInput.value.trim() || null);
    const w = Number(widthInput.value);
    view.set('graph_width', Number.isInteger(w) && w > 0 && w !== DEFAULT_WIDTH ? String(w) : null);
    view.set('merge_fusion', mergeBox.checked ? 'true' : null);
    view.set('show_metadata', metaBox.checked ? 'true' : null);
    view.set('gv.view', viewSelect.value === 'graph' ? null : viewSelect.value);
  }

  async function show(): Promise<void> {
    const mine = ++seq;
    host.dataset.ready = 'false';
    svg = null;
    replaceChildren(downloads);
    const module = moduleSelect.value;
    host.dataset.module = module;
    if (!module) {
      replaceChildren(stage, h('p', { class: 'muted', 'data-role': 'gv-no-module' }, 'This run has no HLO modules (the graph viewer needs XLA programs in the profile).'));
      setStatus('');
      return done();
    }
    const kind = currentView();
    if (kind !== 'graph') {
      setStatus(h('span', { class: 'spinner' }), 'Loading the module text…');
      try {
        const text = await getText(buildUrl(`${PROFILE_PREFIX}/data`, params(kind)));
        if (mine !== seq) return;
        showText(text);
        setStatus(`${module}: ${text.split('\n').length.toLocaleString()} lines`);
      } catch (e) {
        if (mine !== seq) return;
        showError(e);
      }
      return done();
    }
    const node = nodeInput.value.trim();
    host.dataset.node = node;
    if (!node) {
      replaceChildren(stage, h('p', { class: 'muted', 'data-role': 'gv-need-node' }, 'Enter the name of an op of this module (e.g. from the op profile or the text view) to see its neighbourhood.'));
      setStatus('');
      return done();
    }
    setStatus(h('span', { class: 'spinner' }), `Laying out the graph around ${node}…`);
    try {
      const dotUrl = buildUrl(`${PROFILE_PREFIX}/data`, params('dot'));
      const text = await getText(dotUrl);
      if (mine !== seq) return;
      const { dot, css } = splitStylesheet(extractDot(text));
      let svgText: string;
      try {
        svgText = await renderDot(dot);
      } catch (e) {
        throw new Error(`Graphviz could not draw the graph: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      if (mine !== seq) return;
      const prepared = prepareSvg(svgText, node);
      svg = prepared.svg;
      svg.removeAttribute('width');
      svg.removeAttribute('height');
      svg.classList.add('gv-svg');
      svg.setAttribute('data-role', 'gv-svg');
      if (css) {
        const style = document.createElementNS('http://www.w3.org/2000/svg', 'style');
        style.textContent = css;
        svg.insertBefore(style, svg.firstChild);
      }
      const vb = svg.viewBox?.baseVal;
      full = vb && vb.width > 0 ? { x: vb.x, y: vb.y, w: vb.width, h: vb.height } : { x: 0, y: 0, w: 1000, h: 800 };
      replaceChildren(stage, svg);
      full = readableFull(full);
      setBox(full);
      if (prepared.center) setBox(focusBox(prepared.center));
      const count = svg.querySelectorAll('g.node').length;
      setStatus(
        h('span', { 'data-role': 'gv-summary', 'data-nodes': count, 'data-center-found': prepared.center ? 'true' : 'false' }, `${module}: ${count} nodes around ${node}${prepared.center ? '' : ' (not drawn as a node)'}`),
      );
      downloads.append(
        h('a', { class: 'button', href: dotUrl, download: `${module}.${node}.dot`, 'data-role': 'gv-download-dot' }, 'DOT'),
        h('a', { class: 'button', href: URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' })), download: `${module}.${node}.svg`, 'data-role': 'gv-download-svg' }, 'SVG'),
      );
    } catch (e) {
      if (mine !== seq) return;
      showError(e);
    }
    done();
  }

  /** The whole graph's box, widened around its centre so a small graph is not blown up beyond 1.5× (0.67 SVG units per pixel). */
  function readableFull(b: Box): Box {
    const rect = stage.getBoundingClientRect();
    if (!rect.width || !rect.height) return b;
    const k = Math.max(b.w / rect.width, b.h / rect.height);
    if (k >= 2 / 3) return b;
    const w = (rect.width * 2) / 3;
    const h = (rect.height * 2) / 3;
    return { x: b.x + b.w / 2 - w / 2, y: b.y + b.h / 2 - h / 2, w, h };
  }

  /**
   * The view box showing `el` (the centre node) readably: the whole graph when it already
   * fits at a readable scale, else a window around the node (3× its size, or the top of a
   * centre cluster), at least 1.2 SVG units per pixel wide.
   */
  function focusBox(el: Element): Box {
    const rect = stage.getBoundingClientRect();
    const r = el.getBoundingClientRect();
    if (!rect.width || !r.width || unitsPerPixel(full) <= 1.5) return full;
    const a = svgPoint(r.left, r.top);
    const b = svgPoint(r.right, r.bottom);
    const cx = (a.x + b.x) / 2;
    const cy = (a.y + b.y) / 2;
    const aspect = rect.height / rect.width;
    // A cluster (a fusion) can be taller than the stage: show its top, where its name is.
    const cluster = el.classList.contains('cluster');
    const w = Math.min(full.w, Math.max(rect.width * 1.2, (b.x - a.x) * (cluster ? 1.3 : 3), cluster ? 0 : ((b.y - a.y) * 3) / aspect));
    const h = w * aspect;
    return { x: cx - w / 2, y: cluster ? a.y - h * 0.1 : cy - h / 2, w, h };
  }

  function showText(text: string): void {
    const node = nodeInput.value.trim();
    const pre = h('pre', { class: 'gv-text', 'data-role': 'gv-text' });
    let mark: HTMLElement | null = null;
    const lines = text.split('\n');
    const re = node ? new RegExp(`^\\s*(ROOT\\s+)?%?${node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*=`) : null;
    const chunk: string[] = [];
    const flush = () => {
      if (chunk.length) pre.append(document.createTextNode(chunk.join('\n') + '\n'));
      chunk.length = 0;
    };
    for (const line of lines) {
      if (re && !mark && re.test(line)) {
        flush();
        mark = h('mark', { 'data-role': 'gv-text-mark' }, line);
        pre.append(mark, '\n');
      } else chunk.push(line);
    }
    flush();
    replaceChildren(stage, pre);
    if (mark) requestAnimationFrame(() => (mark as HTMLElement).scrollIntoView({ block: 'center' }));
  }

  function showError(e: unknown): void {
    const message = e instanceof Error ? e.message : String(e);
    const wasm = /WebAssembly|wasm|unsafe-eval/i.test(message);
    replaceChildren(
      stage,
      h(
        'div',
        { class: 'error', 'data-role': 'gv-error' },
        h('p', null, message),
        wasm ? h('p', { class: 'muted' }, 'The graph is drawn by Graphviz compiled to WebAssembly; this page is not allowed to run WebAssembly. The text views still work.') : null,
      ),
    );
    setStatus('');
  }

  // ---- interaction ----
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    saveState();
    void show();
  });
  moduleSelect.addEventListener('change', () => {
    saveState();
    void show();
  });
  viewSelect.addEventListener('change', () => {
    saveState();
    void show();
  });
  /** A client (pixel) point in SVG units (through the SVG's screen transform when there is one). */
  const svgPoint = (clientX: number, clientY: number) => {
    const ctm = svg?.getScreenCTM?.();
    if (svg && ctm) {
      const p = new DOMPoint(clientX, clientY).matrixTransform(ctm.inverse());
      return { x: p.x, y: p.y };
    }
    const rect = stage.getBoundingClientRect();
    return { x: box.x + ((clientX - rect.left) / Math.max(1, rect.width)) * box.w, y: box.y + ((clientY - rect.top) / Math.max(1, rect.height)) * box.h };
  };
  /** SVG units per screen pixel (the view box is fitted into the stage keeping its aspect). */
  const unitsPerPixel = (b: Box) => {
    const rect = stage.getBoundingClientRect();
    return Math.max(b.w / Math.max(1, rect.width), b.h / Math.max(1, rect.height));
  };
  stage.addEventListener(
    'wheel',
    (e) => {
      if (!svg) return;
      e.preventDefault();
      const p = svgPoint(e.clientX, e.clientY);
      setBox(zoomBox(box, Math.pow(1.0015, Math.max(-300, Math.min(300, e.deltaY))), p.x, p.y));
    },
    { passive: false },
  );
  let drag: { x: number; y: number; box: Box; moved: boolean } | null = null;
  stage.addEventListener('mousedown', (e) => {
    if (!svg || e.button !== 0) return;
    drag = { x: e.clientX, y: e.clientY, box, moved: false };
    e.preventDefault();
  });
  const onMove = (e: MouseEvent) => {
    if (!drag) return;
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (!drag.moved) return;
    const k = unitsPerPixel(drag.box);
    setBox(panBox(drag.box, -dx * k, -dy * k));
  };
  const onUp = (e: MouseEvent) => {
    if (!stage.isConnected) return detach();
    if (!drag) return;
    const click = !drag.moved;
    drag = null;
    if (!click) return;
    const target = (e.target as Element | null)?.closest?.('g.gv-clickable');
    const name = target?.getAttribute('data-node-name');
    if (name && name !== nodeInput.value.trim()) {
      nodeInput.value = name;
      saveState();
      void show();
    }
  };
  function detach(): void {
    window.removeEventListener('mousemove', onMove);
    window.removeEventListener('mouseup', onUp);
  }
  window.addEventListener('mousemove', onMove);
  window.addEventListener('mouseup', onUp);
  const zoomAtCentre = (f: number) => svg && setBox(zoomBox(box, f, box.x + box.w / 2, box.y + box.h / 2));
  zoomIn.addEventListener('click', () => zoomAtCentre(1 / 1.4));
  zoomOut.addEventListener('click', () => zoomAtCentre(1.4));
  fit.addEventListener('click', () => svg && setBox(full));

  // ---- load ----
  void (async () => {
    try {
      // Costliest first: the one to open when the URL names none.
      modules = await costliestFirst(await fetchModuleList(run), () => ctx.api.data(run, 'op_profile', ctx.state.host), () => traceProgramTimes(run));
    } catch (e) {
      modules = [];
      setStatus(`Could not list the HLO modules: ${e instanceof Error ? e.message : String(e)}`);
    }
    const module = fillModuleSelect(moduleSelect, modules, view.get('module_name'), view.get('program_id'));
    if (module && module !== view.get('module_name')) saveState();
    await show();
  })();
  return page;
}
