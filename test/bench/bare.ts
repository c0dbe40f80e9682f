// The physical floor of the fresh-context model (issue #8): bare isolated-vm in the bench process
// itself, no MCP, no prelude, no host process. One call = a fresh context, the echo function's body
// run once in it (its answer crossing back as a JSON string, as the product's does), the context
// released. Nothing here is product code: it is what any fresh-context design pays at least.
import ivm from 'isolated-vm';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ECHO_SOURCE, ECHO_TEXT } from './fixture.ts';

/** The echo function's body applied to fixed arguments, stringified inside the isolate. */
const FLOOR_N = 21;
export const FLOOR_SOURCE = `JSON.stringify((${ECHO_SOURCE.replace(/^export default\s+/, '')})({ text: ${JSON.stringify(ECHO_TEXT)}, n: ${FLOOR_N} }))`;
const EXPECTED = JSON.stringify({ echo: ECHO_TEXT, n: FLOOR_N * 2 });
/** The memory limit of the bare isolates (MB). */
export const FLOOR_MEMORY_MB = 32;

export interface BareOutcome {
  ms: number;
  ok: boolean;
  error?: string;
}

interface BareIsolate {
  isolate: ivm.Isolate;
  script: ivm.Script;
}

function newBare(): BareIsolate {
  const isolate = new ivm.Isolate({ memoryLimit: FLOOR_MEMORY_MB });
  return { isolate, script: isolate.compileScriptSync(FLOOR_SOURCE, { filename: 'bench:floor' }) };
}

function problem(value: unknown): string | undefined {
  return value === EXPECTED ? undefined : `wrong answer: ${String(value).slice(0, 200)}`;
}

export class BareFloor {
  /** One isolate for the synchronous loop; one per core for the concurrent one. */
  readonly #single = newBare();
  readonly #perCore: BareIsolate[];
  readonly cores = availableParallelism();

  constructor() {
    this.#perCore = Array.from({ length: this.cores }, newBare);
  }

  /**
   * Synchronous fresh context + call + release, back to back for `blockMs` (at most `maxCalls`,
   * never past `hardUntil`). The block's first iteration is not recorded, like a burst block's first
   * call. Returns the wall time of the recorded iterations.
   */
  syncBlock(blockMs: number, hardUntil: number, maxCalls: number, record: (o: BareOutcome) => void): number {
    const { isolate, script } = this.#single;
    let wallStart = 0;
    let blockEnd = hardUntil;
    for (let k = 0; k <= maxCalls; k++) {
      const started = performance.now();
      if (k === 1) {
        wallStart = started;
        blockEnd = Math.min(hardUntil, started + blockMs);
      }
      if (k > 0 && started >= blockEnd) break;
      let outcome: BareOutcome;
      try {
        const context = isolate.createContextSync();
        const value: unknown = script.runSync(context);
        context.release();
        const ms = performance.now() - started;
        const p = problem(value);
        outcome = p === undefined ? { ms, ok: true } : { ms, ok: false, error: p };
      } catch (error) {
        outcome = { ms: performance.now() - started, ok: false, error: error instanceof Error ? error.message : String(error) };
      }
      if (k > 0) record(outcome);
    }
    return wallStart > 0 ? performance.now() - wallStart : 0;
  }

  /**
   * The same loop with the async API, `concurrency` loops in flight spread over one isolate per
   * core, until `until` (at most `maxCalls`). Returns the wall time until the last answer.
   */
  async concurrent(concurrency: number, until: number, maxCalls: number, record: (o: BareOutcome) => void): Promise<number> {
    let issued = 0;
    const started = performance.now();
    const worker = async (w: number): Promise<void> => {
      const { isolate, script } = this.#perCore[w % this.#perCore.length]!;
      while (issued < maxCalls && performance.now() < until) {
        issued++;
        const t0 = performance.now();
        try {
          const context = await isolate.createContext();
          const value: unknown = await script.run(context);
          context.release();
          const ms = performance.now() - t0;
          const p = problem(value);
          record(p === undefined ? { ms, ok: true } : { ms, ok: false, error: p });
        } catch (error) {
          record({ ms: performance.now() - t0, ok: false, error: error instanceof Error ? error.message : String(error) });
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
    return performance.now() - started;
  }

  dispose(): void {
    for (const b of [this.#single, ...this.#perCore]) if (!b.isolate.isDisposed) b.isolate.dispose();
  }
}
