// Small statistics and formatting helpers for the benchmark.

/** Nearest-rank quantile (q in [0, 1]) of unsorted samples; NaN for none. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

export const median = (samples: readonly number[]): number => quantile(samples, 0.5);

export function maxOf(samples: readonly number[]): number {
  let m = Number.NaN;
  for (const v of samples) if (!(v <= m)) m = v;
  return m;
}

export function minOf(samples: readonly number[]): number {
  let m = Number.NaN;
  for (const v of samples) if (!(v >= m)) m = v;
  return m;
}

export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : samples.reduce((a, b) => a + b, 0) / samples.length;
}

/** Rotates a list left by `by` (round-robin order that changes every round). */
export function rotate<T>(list: readonly T[], by: number): T[] {
  if (list.length === 0) return [];
  const k = ((by % list.length) + list.length) % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (Math.abs(value) >= 100) return value.toFixed(Math.min(digits, 1));
  return value.toFixed(digits);
}

/** Rounds for JSON output: 3 decimals (or 4 significant digits for tiny values). */
export function round(value: number): number | null {
  if (!Number.isFinite(value)) return null;
  if (value !== 0 && Math.abs(value) < 0.01) return Number(value.toPrecision(4));
  return Math.round(value * 1000) / 1000;
}

/** A plain-text table: first column left-aligned, the rest right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
