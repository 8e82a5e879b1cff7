// Numbers people can read, one place for every page: times in adaptive units (ps, ns, µs,
// ms, s) with about four significant digits, bytes in B/KiB/MiB/GiB, counts with thousands
// separators. Pure functions, unit tested. Exact values stay in data attributes, titles and
// CSV exports (which keep raw values).

const TIME_UNITS: [number, string][] = [
  [1e12, 's'],
  [1e9, 'ms'],
  [1e6, 'µs'],
  [1e3, 'ns'],
  [1, 'ps'],
];

/** `v` with `digits` significant digits, without exponent or trailing zeros. */
function significant(v: number, digits: number): string {
  if (v === 0) return '0';
  const magnitude = Math.floor(Math.log10(Math.abs(v)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  return trimZeros(v.toFixed(Math.min(decimals, 20)));
}

function trimZeros(s: string): string {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/**
 * A duration or time in picoseconds in the largest unit that keeps it ≥ 1, with `digits`
 * significant digits (default 4): `7.013 s`, `68.45 µs`, `12 ns`. Values ≥ 1000 s stay in
 * seconds with thousands separators.
 */
export function formatTime(ps: number, digits = 4): string {
  if (!Number.isFinite(ps)) return String(ps);
  const abs = Math.abs(ps);
  if (abs === 0) return '0';
  for (let i = 0; i < TIME_UNITS.length; i++) {
    const [scale, unit] = TIME_UNITS[i] ?? [1, 'ps'];
    if (abs >= scale || i === TIME_UNITS.length - 1) {
      let text = significant(ps / scale, digits);
      // Rounding may reach 1000 of this unit: show it in the next larger unit.
      if (i > 0 && Math.abs(Number(text)) >= 1000) {
        const [bigger, biggerUnit] = TIME_UNITS[i - 1] ?? [scale, unit];
        return `${significant(ps / bigger, digits)} ${biggerUnit}`;
      }
      if (unit === 's' && Math.abs(ps / scale) >= 1000) text = groupThousands(trimZeros((ps / scale).toFixed(Math.max(0, digits - 4))));
      return `${text} ${unit}`;
    }
  }
  return `${ps} ps`;
}

/** Microseconds (XProf's tables) as an adaptive time. */
export function formatMicros(us: number, digits = 4): string {
  return formatTime(us * 1e6, digits);
}

/**
 * XProf's prose with times in microseconds (`Latency: 29,358 us`, `Start Time: 496419 us`)
 * with those times in adaptive units (`29.36 ms`, `496.4 ms`), as the tables beside it show them.
 */
export function readableMicros(text: string): string {
  return text.replace(/(^|[^\w.,])(-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?) ?(?:us|µs|μs)\b/g, (_, before: string, n: string) => `${before}${formatMicros(Number(n.replace(/,/g, '')))}`);
}

/** Milliseconds as an adaptive time. */
export function formatMillis(ms: number, digits = 4): string {
  return formatTime(ms * 1e9, digits);
}

/** One formatter for every exact time: `toLocaleString` with options builds one per call (~40 µs). */
const EXACT_MICROS = new Intl.NumberFormat('en-US', { maximumFractionDigits: 6 });

/** Picoseconds as exact microseconds with separators (`7,012,646.189 µs`): tooltips. */
export function exactMicros(ps: number): string {
  return `${EXACT_MICROS.format(ps / 1e6)} µs`;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/**
 * A value in `unit` for people: times (`µs`, `us`, `ms`, `s`, `ns`, `ps`) adaptive, bytes
 * (`B`, `bytes`, `MiB`) in binary units, anything else with thousands separators and at
 * most three decimals followed by the unit.
 */
export function formatWithUnit(value: number, unit: string): string {
  if (!Number.isFinite(value)) return String(value);
  const u = unit.trim();
  const time: Record<string, number> = { ps: 1, ns: 1e3, us: 1e6, 'µs': 1e6, 'μs': 1e6, ms: 1e9, s: 1e12 };
  const scale = time[u];
  if (scale !== undefined) return formatTime(value * scale);
  if (u === 'B' || u === 'bytes') return formatBytes(value);
  if (u === 'MiB') return formatMiB(value);
  const text = groupThousands(trimZeros(value.toFixed(Math.abs(value) >= 100 ? 1 : 3)));
  return u ? `${text} ${u}` : text;
}

/** Bytes in binary units with about four significant digits: `16 MiB`, `1.5 KiB`, `512 B`. */
export function formatBytes(bytes: number, digits = 4): string {
  if (!Number.isFinite(bytes)) return String(bytes);
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < BYTE_UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  let text = i === 0 ? String(Math.round(v)) : significant(v, digits);
  // 1023.99 KiB rounds to 1024: one unit up.
  if (i > 0 && i < BYTE_UNITS.length - 1 && Math.abs(Number(text)) >= 1024) {
    v /= 1024;
    i++;
    text = significant(v, digits);
  }
  return `${text} ${BYTE_UNITS[i]}`;
}

/** MiB (XProf's memory tools) as adaptive bytes. */
export function formatMiB(mib: number, digits = 4): string {
  return formatBytes(mib * 1024 * 1024, digits);
}

function groupThousands(text: string): string {
  const [int = '', frac] = text.split('.');
  const negative = int.startsWith('-');
  const digits = negative ? int.slice(1) : int;
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${frac ? `.${frac}` : ''}`;
}

/** A count with thousands separators (`3,091,954`). */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return groupThousands(String(Math.round(n)));
}

/**
 * A number XProf formatted as text (`"12.3"`), or `null` when it is not a finite number:
 * XProf prints NaN and infinities as `-nan`, `nan`, `inf` (the standard deviation of a
 * breakdown without samples), which pages leave out or show as "n/a".
 */
export function finiteText(text: string | number | null | undefined): string | null {
  if (text === null || text === undefined) return null;
  const t = String(text).trim();
  return t !== '' && Number.isFinite(Number(t)) ? t : null;
}

// ---- time axis ---------------------------------------------------------------------------

/** A round step (1, 2, 5 × 10^k) at least `raw`. */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

export interface Tick {
  /** Time on the profile's clock (ps). */
  ps: number;
  label: string;
}

export interface Ruler {
  ticks: Tick[];
  step: number;
  /**
   * Set at deep zoom: tick labels are offsets from this time (ps) and `baseLabel` shows it
   * in full (relative to the trace start), so that ticks never read alike.
   */
  base: number | null;
  baseLabel: string;
}

/** Most significant digits a tick label shows before labels turn relative to the view. */
const ABSOLUTE_DIGITS = 5;

/**
 * Ticks of a time axis over `view` (ps) about `targetPx` apart on `widthPx`, labelled from
 * `origin` (the trace start). Labels show as many digits as the step needs; when that is
 * more than five (deep zoom far from the start) labels become offsets (`+200 ns`) from a
 * base time shown once.
 */
export function ruler(view: { start: number; end: number }, origin: number, widthPx: number, targetPx = 110): Ruler {
  const len = Math.max(1, view.end - view.start);
  const step = niceStep((len * targetPx) / Math.max(1, widthPx));
  const first = Math.ceil((view.start - origin) / step) * step + origin;
  const times: number[] = [];
  for (let t = first; t <= view.end && times.length < 1000; t += step) times.push(t);
  const largest = Math.max(Math.abs(view.start - origin), Math.abs(view.end - origin));
  const needed = largest > 0 ? Math.ceil(Math.log10(largest / step) + 1e-9) + 1 : 1;
  if (needed <= ABSOLUTE_DIGITS) {
    const digits = Math.max(1, needed);
    return { ticks: times.map((ps) => ({ ps, label: formatTime(ps - origin, digits) })), step, base: null, baseLabel: '' };
  }
  // Relative: offsets from the first tick at or before the view start.
  const base = Math.floor((view.start - origin) / step) * step + origin;
  const span = Math.max(step, view.end - base);
  const offsetDigits = Math.max(1, Math.ceil(Math.log10(span / step) + 1e-9) + 1);
  const baseDigits = Math.min(15, Math.max(4, Math.ceil(Math.log10(Math.max(1, Math.abs(base - origin)) / step) + 1e-9) + 1));
  return {
    ticks: times.map((ps) => ({ ps, label: ps === base ? '+0' : `+${formatTime(ps - base, offsetDigits)}` })),
    step,
    base,
    baseLabel: formatTime(base - origin, baseDigits),
  };
}
