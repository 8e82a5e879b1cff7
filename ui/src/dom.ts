// Tiny DOM helpers: build elements declaratively without a framework (no innerHTML, so
// profile strings can never inject markup).

type Child = Node | string | number | null | undefined | false;
type Children = Child | Children[];
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** Creates `<tag>` with attributes (`on*` keys add listeners; `class` sets className) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Children[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith('on') && typeof value === 'function') {
        el.addEventListener(key.slice(2), value);
      } else if (key === 'class') {
        el.className = String(value);
      } else if (value === true) {
        el.setAttribute(key, '');
      } else {
        el.setAttribute(key, String(value));
      }
    }
  }
  append(el, children);
  return el;
}

/** Appends children (nested arrays flattened; null/false skipped) to `el`. */
export function append(el: Node, children: Children[]): void {
  for (const child of flatten(children)) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** Children arrays flattened to any depth. */
function flatten(children: Children[]): Child[] {
  const out: Child[] = [];
  const walk = (c: Children) => {
    if (Array.isArray(c)) c.forEach(walk);
    else out.push(c);
  };
  children.forEach(walk);
  return out;
}

/** Removes every child of `el` and appends `children`. */
export function replaceChildren(el: Element, ...children: Children[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, children);
}

/** Escapes text for the few places where ECharts wants HTML strings (tooltips). */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
