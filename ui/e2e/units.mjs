// Times as the UI shows them (ui/src/format.ts: adaptive units, about four significant
// digits), read back, so the browser tests check a shown value against the API's raw one.

const SCALE = { ps: 1, ns: 1e3, µs: 1e6, ms: 1e9, s: 1e12 };

/** Picoseconds of a shown time ("2.245 s", "430 µs", "1,234 s"), or NaN. */
export function parseTime(text) {
  const m = /^(-?[\d,]*\.?\d+) (ps|ns|µs|ms|s)$/.exec(String(text).trim());
  return m ? Number(m[1].replace(/,/g, '')) * SCALE[m[2]] : NaN;
}

/** Asserts `text` shows `ps` in adaptive units: at most four significant digits, within their rounding. */
export function assertTime(text, ps, what) {
  const got = parseTime(text);
  const digits = String(text).replace(/[^\d]/g, '').replace(/^0+/, '').length;
  if (!(Math.abs(got - ps) <= Math.abs(ps) * 5e-4 + 1e-9) || (digits > 4 && Math.abs(ps) < 1e15)) {
    throw new Error(`${what}: "${text}" does not read ${ps} ps in adaptive units`);
  }
}
