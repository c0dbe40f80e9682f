import type { TestDifference } from '../model/index.ts';

type Step = { key: string } | { index: number } | { any: true };

/** Parses a JSON path of the form the case format allows ($.a, $['a b'], $[0], $[*], $.*). */
export function parseJsonPath(path: string): Step[] {
  const steps: Step[] = [];
  const re = /\.([A-Za-z_$][\w$-]*)|\.\*|\[(\d+)\]|\[\*\]|\['([^']*)'\]/g;
  let at = 1;
  for (let m = re.exec(path); m; m = re.exec(path)) {
    if (m.index !== at) break;
    at = re.lastIndex;
    if (m[1] !== undefined) steps.push({ key: m[1] });
    else if (m[2] !== undefined) steps.push({ index: Number(m[2]) });
    else if (m[3] !== undefined) steps.push({ key: m[3] });
    else steps.push({ any: true });
  }
  return steps;
}

type Segment = string | number;

function matches(pattern: Step[], at: Segment[]): boolean {
  if (pattern.length !== at.length) return false;
  return pattern.every((step, i) => {
    const seg = at[i]!;
    if ('any' in step) return true;
    if ('index' in step) return seg === step.index;
    return seg === step.key;
  });
}

/** `$.items[0].name` for a path of keys and indexes. */
export function formatPath(at: Segment[]): string {
  return `$${at.map((s) => (typeof s === 'number' ? `[${s}]` : /^[A-Za-z_$][\w$-]*$/.test(s) ? `.${s}` : `['${s}']`)).join('')}`;
}

/**
 * The differences between two JSON values, compared exactly (types, keys, array lengths, numbers),
 * except under the `ignore` paths. At most `limit` are listed.
 */
export function jsonDifferences(expected: unknown, actual: unknown, ignore: readonly string[] = [], limit = 50): TestDifference[] {
  const patterns = ignore.map(parseJsonPath);
  const out: TestDifference[] = [];
  const walk = (e: unknown, a: unknown, at: Segment[]): void => {
    if (out.length >= limit) return;
    if (patterns.some((p) => matches(p, at))) return;
    if (Array.isArray(e) && Array.isArray(a)) {
      for (let i = 0; i < Math.max(e.length, a.length); i++) {
        if (i >= e.length) out.push({ path: formatPath([...at, i]), expected: undefined, actual: a[i], note: 'not expected' });
        else if (i >= a.length) out.push({ path: formatPath([...at, i]), expected: e[i], actual: undefined, note: 'missing' });
        else walk(e[i], a[i], [...at, i]);
        if (out.length >= limit) return;
      }
      return;
    }
    if (isObject(e) && isObject(a)) {
      const keys = [...new Set([...Object.keys(e), ...Object.keys(a)])];
      for (const key of keys) {
        const inE = Object.prototype.hasOwnProperty.call(e, key);
        const inA = Object.prototype.hasOwnProperty.call(a, key);
        const here = [...at, key];
        if (!inA) {
          if (!patterns.some((p) => matches(p, here))) out.push({ path: formatPath(here), expected: e[key], actual: undefined, note: 'missing' });
        } else if (!inE) {
          if (!patterns.some((p) => matches(p, here))) out.push({ path: formatPath(here), expected: undefined, actual: a[key], note: 'not expected' });
        } else walk(e[key], a[key], here);
        if (out.length >= limit) return;
      }
      return;
    }
    if (JSON.stringify(e) !== JSON.stringify(a)) out.push({ path: formatPath(at), expected: e, actual: a });
  };
  walk(expected, actual, []);
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
