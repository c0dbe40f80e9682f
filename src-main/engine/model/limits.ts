import { z } from 'zod';

/**
 * Every sandbox limit: its default, and the hard maximum no function may exceed.
 * A function overrides a default with `timeoutMs`, `memoryMb` or an entry in `limits`.
 */
export const LIMITS = {
  timeoutMs: { default: 15_000, min: 100, max: 300_000, what: 'wall-clock deadline' },
  memoryMb: { default: 64, min: 8, max: 512, what: 'isolate memory' },
  resultBytes: { default: 1024 * 1024, min: 1024, max: 16 * 1024 * 1024, what: 'result size' },
  logBytes: { default: 64 * 1024, min: 1024, max: 1024 * 1024, what: 'log volume' },
  fetchCount: { default: 20, min: 0, max: 200, what: 'number of fetches' },
  responseBytes: { default: 5 * 1024 * 1024, min: 1024, max: 50 * 1024 * 1024, what: 'response body size' },
} as const;

export type LimitName = keyof typeof LIMITS;

function bounded(name: LimitName) {
  const l = LIMITS[name];
  return z
    .number()
    .int(`${name} must be a whole number`)
    .min(l.min, `${name} must be at least ${l.min}`)
    .max(l.max, `${name} may be at most ${l.max} (the hard maximum for the ${l.what})`);
}

export const LimitOverridesSchema = z
  .object({
    resultBytes: bounded('resultBytes').optional(),
    logBytes: bounded('logBytes').optional(),
    fetchCount: bounded('fetchCount').optional(),
    responseBytes: bounded('responseBytes').optional(),
  })
  .strict();
export type LimitOverrides = z.infer<typeof LimitOverridesSchema>;

export const TimeoutMsSchema = bounded('timeoutMs');
export const MemoryMbSchema = bounded('memoryMb');

export type EffectiveLimits = { [K in LimitName]: number };

export function effectiveLimits(spec: { timeoutMs?: number | undefined; memoryMb?: number | undefined; limits?: LimitOverrides | undefined }): EffectiveLimits {
  const o = spec.limits ?? {};
  return {
    timeoutMs: spec.timeoutMs ?? LIMITS.timeoutMs.default,
    memoryMb: spec.memoryMb ?? LIMITS.memoryMb.default,
    resultBytes: o.resultBytes ?? LIMITS.resultBytes.default,
    logBytes: o.logBytes ?? LIMITS.logBytes.default,
    fetchCount: o.fetchCount ?? LIMITS.fetchCount.default,
    responseBytes: o.responseBytes ?? LIMITS.responseBytes.default,
  };
}
