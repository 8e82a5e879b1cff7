// Rebuilds the UI into a scratch directory and checks that it equals the committed ui/dist
// byte for byte (the server embeds ui/dist, so it must be what the sources build to).
// Usage: node scripts/check-dist.mjs [--update]   (--update: rebuild ui/dist itself)
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ui = fileURLToPath(new URL('..', import.meta.url));
const scratch = join(ui, '.dist-check');
const dist = join(ui, 'dist');

function build(outDir) {
  execFileSync(process.execPath, [join(ui, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: ui,
    stdio: 'inherit',
    env: { ...process.env, OXPROF_UI_OUT_DIR: outDir },
  });
}

function files(dir) {
  const out = [];
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

if (process.argv.includes('--update')) {
  build(dist);
  console.log(`ui/dist rebuilt: ${files(dist).join(', ')}`);
  process.exit(0);
}

build(scratch);
const expected = files(scratch);
const actual = files(dist);
const problems = [];
for (const f of new Set([...expected, ...actual])) {
  if (!expected.includes(f)) problems.push(`${f}: in ui/dist but not built from the sources`);
  else if (!actual.includes(f)) problems.push(`${f}: built from the sources but missing in ui/dist`);
  else if (!readFileSync(join(scratch, f)).equals(readFileSync(join(dist, f)))) problems.push(`${f}: differs`);
}
rmSync(scratch, { recursive: true, force: true });
if (problems.length) {
  console.error('ui/dist is not what the sources build to:\n  ' + problems.join('\n  '));
  console.error('Run `npm run build` in ui/ and commit ui/dist.');
  process.exit(1);
}
console.log(`ui/dist reproduced from the sources (${expected.length} files).`);
