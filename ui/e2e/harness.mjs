// A small end-to-end harness: starts `oxprof serve` processes, launches Debian's chromium
// through playwright-core, runs named tests with console-error tracking and screenshots,
// and prints "N passed, N failed".
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.OXPROF_CHROMIUM || '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
  // A name of an attacker's that resolves to 127.0.0.1 (DNS rebinding), for the security test.
  '--host-resolver-rules=MAP rebind.test 127.0.0.1',
];

/**
 * The persistent analysis cache of this process's servers (`OXPROF_CACHE_DIR`): a fresh
 * temporary directory, removed at exit, so no run reads the user's cache or a previous
 * run's (set OXPROF_CACHE_DIR to choose one).
 */
let cacheDir = null;
function serverCacheDir() {
  if (process.env.OXPROF_CACHE_DIR) return process.env.OXPROF_CACHE_DIR;
  if (!cacheDir) {
    cacheDir = mkdtempSync(join(tmpdir(), 'oxprof-e2e-cache-'));
    process.on('exit', () => rmSync(cacheDir, { recursive: true, force: true }));
  }
  return cacheDir;
}

/** Starts `oxprof serve PATH --port 0` on 127.0.0.1 (plus `extra` arguments) and resolves with its URL once it listens. */
export function startServer(bin, path, extra = []) {
  return new Promise((resolve, reject) => {
    const args = ['serve', ...(path ? [path] : []), '--port', '0', '--bind', '127.0.0.1', '--quiet', ...extra];
    // OXPROF_E2E_DEV_DIST=dir (development): the server serves the UI build in that
    // directory instead of the one embedded in the binary (OXPROF_UI_DIR), so UI changes
    // are tested without rebuilding oxprof.
    const env = { ...process.env, OXPROF_CACHE_DIR: serverCacheDir() };
    if (process.env.OXPROF_E2E_DEV_DIST) env.OXPROF_UI_DIR = resolvePath(process.env.OXPROF_E2E_DEV_DIST);
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new Error(`oxprof serve did not start within 60 s\nstdout: ${out}\nstderr: ${err}`));
    }, 60_000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/at (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], stop: () => stopChild(child), child });
      }
    });
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`oxprof serve exited with ${code}\nstdout: ${out}\nstderr: ${err}`));
    });
  });
}


/**
 * The UI build the servers serve: OXPROF_E2E_DEV_DIST's (or OXPROF_UI_DIR's) directory,
 * else the ui/dist embedded in the binary when it was built.
 */
export function expectedUiDir(ui) {
  const dir = process.env.OXPROF_E2E_DEV_DIST || process.env.OXPROF_UI_DIR;
  return dir ? resolvePath(dir) : join(ui, 'dist');
}

/**
 * Throws unless the server at `base` serves the UI build in `dist` byte for byte: an
 * oxprof binary built before the UI changed serves its own, older UI, and every test of
 * the newer UI would then fail for no reason of its own.
 */
export async function checkServedUi(base, dist) {
  // (Not index.html: the server adds its token to it.)
  for (const file of ['assets/index.js', 'assets/index.css']) {
    const r = await fetch(new URL(`/${file}`, base));
    const served = Buffer.from(await r.arrayBuffer());
    if (!r.ok || !served.equals(readFileSync(join(dist, file)))) {
      throw new Error(
        `the server serves a UI other than ${dist} (${file} differs): rebuild oxprof (cargo build -p oxprof) or set OXPROF_E2E_DEV_DIST=${dist}`,
      );
    }
  }
}

function stopChild(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

export class Harness {
  constructor(artifacts) {
    this.artifacts = artifacts;
    this.results = [];
    mkdirSync(artifacts, { recursive: true });
  }

  async launch() {
    this.browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  }

  async close() {
    await this.browser?.close();
  }

  /**
   * Runs `fn({page, consoleErrors, shot})` in a fresh 1280x800 page. The test fails on an
   * exception or on console errors / page errors not matched by `allowConsole`.
   */
  async test(name, fn, { allowConsole = null, viewport = { width: 1280, height: 800 } } = {}) {
    // OXPROF_E2E_ONLY=text runs only the tests whose name contains it (development only).
    if (process.env.OXPROF_E2E_ONLY && !name.includes(process.env.OXPROF_E2E_ONLY)) return this.skip(name, 'OXPROF_E2E_ONLY');
    const context = await this.browser.newContext({ viewport, acceptDownloads: true });
    const page = await context.newPage();
    const consoleErrors = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !(allowConsole && allowConsole.test(msg.text()))) consoleErrors.push(msg.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
    const safe = name.replace(/[^A-Za-z0-9_-]+/g, '_');
    const shot = async (suffix = '') => {
      await page.evaluate(() => window.scrollTo(0, 0)).catch(() => undefined);
      return page.screenshot({ path: join(this.artifacts, `${safe}${suffix}.png`), fullPage: true });
    };
    const started = Date.now();
    try {
      await fn({ page, consoleErrors, shot });
      if (consoleErrors.length) throw new Error(`console errors:\n  ${consoleErrors.join('\n  ')}`);
      this.results.push({ name, ok: true });
      console.log(`ok   ${name} (${Date.now() - started} ms)`);
    } catch (e) {
      await shot('.failure').catch(() => undefined);
      this.results.push({ name, ok: false, error: e });
      console.log(`FAIL ${name}\n     ${String(e && e.stack ? e.stack : e).split('\n').join('\n     ')}`);
    } finally {
      await context.close();
    }
  }

  skip(name, why) {
    this.results.push({ name, ok: true, skipped: true });
    console.log(`SKIP ${name}: ${why}`);
  }

  summary() {
    const failed = this.results.filter((r) => !r.ok).length;
    const skipped = this.results.filter((r) => r.skipped).length;
    const passed = this.results.length - failed - skipped;
    console.log(`\ne2e: ${passed} passed, ${failed} failed, ${skipped} skipped`);
    return failed;
  }
}

export function assert(condition, message) {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}

export function assertEqual(actual, expected, message) {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  if (a !== b) throw new Error(`${message}: expected ${b}, got ${a}`);
}
