// The DOT → SVG renderer the graph pages share: Graphviz (WASM) is loaded on first use;
// tests replace the renderer with a stub.

/** Lays out DOT into SVG text. */
export type DotRenderer = (dot: string) => Promise<string>;

let renderer: DotRenderer = async (dot) => (await import('./graphviz')).dotToSvg(dot);

/** Lays out DOT with the current renderer. */
export function renderDot(dot: string): Promise<string> {
  return renderer(dot);
}

/** Replaces the DOT renderer (tests); returns the previous one. */
export function setDotRenderer(next: DotRenderer): DotRenderer {
  const previous = renderer;
  renderer = next;
  return previous;
}
