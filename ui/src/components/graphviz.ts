// Graphviz compiled to WebAssembly (@hpcc-js/wasm-graphviz, bundled: works offline), loaded
// once on first use. Kept in its own module so the bundler puts the ~800 kB library in a
// separate chunk that only the graph viewer downloads.

import { Graphviz } from '@hpcc-js/wasm-graphviz';

let instance: Promise<Graphviz> | null = null;

/** Lays out `dot` with Graphviz's `dot` engine and returns the SVG text. */
export async function dotToSvg(dot: string): Promise<string> {
  instance ??= Graphviz.load();
  try {
    return (await instance).dot(dot, 'svg');
  } catch (e) {
    // A failed load (e.g. WebAssembly refused by the page's Content-Security-Policy) is retried next time.
    if (!(await instance.then(() => true, () => false))) instance = null;
    throw e;
  }
}
