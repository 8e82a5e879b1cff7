// Where the server's routes are: at the root of the page's origin (`oxprof serve`), or below
// a path when a proxy serves the UI there (TensorBoard's oxprof tab serves it at
// /data/plugin/oxprof/ui/). Told by this bundle's own URL (`<prefix>/assets/index.js`), so
// one build works in both places; routes are written from the root ('/oxprof/api/...') and
// put under the prefix by `withBase` where they are requested or linked.

/** The path before `/assets/` in the URL of a bundled script ('' at the origin's root or
 * for any other URL: a module under test, the dev server's sources). */
export function basePath(scriptUrl: string): string {
  let path: string;
  try {
    path = new URL(scriptUrl).pathname;
  } catch {
    return '';
  }
  const m = /^(\/.*)\/assets\/[^/]+\.js$/.exec(path);
  return m?.[1] ?? '';
}

/** This page's prefix ('' when served by `oxprof serve` itself). */
export const BASE = basePath(import.meta.url);

/** `url` below `base` when it is a path from the origin's root ('/data/...'); anything else
 * (relative, absolute with a scheme, already below `base`) as it is. */
export function withBase(url: string, base: string = BASE): string {
  if (!base || !url.startsWith('/') || url.startsWith('//')) return url;
  if (url === base || url.startsWith(`${base}/`) || url.startsWith(`${base}?`)) return url;
  return base + url;
}
