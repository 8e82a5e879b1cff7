// Build configuration: a deterministic bundle (no content hashes, relative base) in ui/dist,
// which the oxprof server embeds. `scripts/check-dist.mjs` verifies a rebuild reproduces it.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  base: '/',
  // Files the scripts load (the trace worker, lazy chunks) are found relative to the
  // script itself, so that the UI also works below a path (TensorBoard's tab serves it at
  // /data/plugin/oxprof/ui/); index.html keeps '/assets/...' for the server's deep links.
  experimental: {
    renderBuiltUrl: (_filename, { hostType }) => (hostType === 'js' ? { relative: true } : undefined),
  },
  build: {
    outDir: process.env.OXPROF_UI_OUT_DIR || 'dist',
    emptyOutDir: true,
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 1200,
    rollupOptions: {
      output: {
        entryFileNames: 'assets/index.js',
        chunkFileNames: 'assets/[name].js',
        assetFileNames: 'assets/[name][extname]',
      },
    },
  },
  // The trace viewer's window worker (src/trace/window_worker.ts), named like the other
  // assets so that the bundle stays deterministic.
  worker: {
    format: 'es',
    rollupOptions: {
      output: {
        entryFileNames: 'assets/[name].js',
        chunkFileNames: 'assets/[name].js',
      },
    },
  },
  server: {
    // `npm run dev` proxies the API to a running `oxprof serve` (OXPROF_URL, default port 8791).
    proxy: Object.fromEntries(
      ['/data', '/oxprof'].map((prefix) => [prefix, process.env.OXPROF_URL || 'http://127.0.0.1:8791']),
    ),
  },
  test: {
    environment: 'jsdom',
    include: ['test/**/*.test.ts'],
  },
});
