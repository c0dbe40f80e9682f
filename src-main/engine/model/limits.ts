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

/** ctx.sample: completions one run may ask for, when a function's `sampling` setting allows any. */
export const SAMPLING_CALLS = { default: 3, min: 1, max: 20 } as const;

/** A function's opt-in to ctx.sample; present means allowed, `maxCalls` bounds each run. */
export const SamplingSettingsSchema = z
  .object({
    maxCalls: z
      .number()
      .int('sampling.maxCalls must be a whole number')
      .min(SAMPLING_CALLS.min, `sampling.maxCalls must be at least ${SAMPLING_CALLS.min}`)
      .max(SAMPLING_CALLS.max, `sampling.maxCalls may be at most ${SAMPLING_CALLS.max} (the hard maximum for completions per run)`)
      .optional(),
  })
  .strict();
export type SamplingSettings = z.infer<typeof SamplingSettingsSchema>;

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
