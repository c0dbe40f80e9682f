// What the web platform adds to a fresh context: the guest runtime as the sandbox host evaluates it
// in every context (src-main/sandboxHost/guestBundle.ts), against the same bundle built with the
// web platform's install left out (the base runtime only). One call = a fresh context, the guest
// script run in it, callablePrelude applied to two host callbacks, everything released: what a
// host pays per context before the function's module, measured here in process, no MCP.
import ivm from 'isolated-vm';
import { build, type Plugin } from 'esbuild';
import { performance } from 'node:perf_hooks';
import { GUEST_BUILD_OPTIONS, guestScript } from '../../src-main/sandboxHost/guestBundle.ts';

/** Resolves the guest's `./web/index.js` to an installWeb that installs nothing. */
const withoutWeb: Plugin = {
  name: 'bench-without-web',
  setup(b) {
    b.onResolve({ filter: /^\.\/web\/index\.js$/ }, () => ({ path: 'no-web', namespace: 'bench' }));
    b.onLoad({ filter: /.*/, namespace: 'bench' }, () => ({ contents: 'export function installWeb() {}', loader: 'js' }));
  },
};

export interface PlatformVariant {
  label: string;
  /** The guest script's size (bytes). */
  bytes: number;
  samples: number[];
}

/** Builds both guest bundles (the product's options; one with installWeb emptied). */
export async function guestVariants(): Promise<Array<{ label: string; source: string }>> {
  const [withWeb, without] = await Promise.all([build(GUEST_BUILD_OPTIONS), build({ ...GUEST_BUILD_OPTIONS, plugins: [withoutWeb] })]);
  // guestScript hashes every bundled file; the stub is no file.
  for (const input of Object.keys(without.metafile.inputs)) if (input.startsWith('bench:')) delete without.metafile.inputs[input];
  return [
    { label: 'with the web platform', source: guestScript(withWeb) },
    { label: 'base runtime only', source: guestScript(without) },
  ];
}

class GuestContexts {
  readonly #isolate = new ivm.Isolate({ memoryLimit: 64 });
  readonly #script: ivm.Script;
  readonly #callbacks = [new ivm.Callback(() => undefined), new ivm.Callback(() => undefined)];

  constructor(source: string) {
    this.#script = this.#isolate.compileScriptSync(source, { filename: 'bench:guest' });
  }

  /** One fresh context with the guest installed, then released (ms). */
  once(): number {
    const started = performance.now();
    const context = this.#isolate.createContextSync();
    try {
      const api = this.#script.runSync(context, { reference: true }) as ivm.Reference<(...a: unknown[]) => unknown>;
      const pair = api.applySync(undefined, this.#callbacks, { result: { reference: true } }) as ivm.Reference;
      pair.release();
      api.release();
    } finally {
      context.release();
    }
    return performance.now() - started;
  }

  dispose(): void {
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }
}

/**
 * Rounds of back-to-back fresh contexts, each variant for `blockMs` per round in rotating order
 * (each block's first context is not counted); stops at `until`.
 */
export async function freshContextCost(rounds: number, blockMs: number, until: number): Promise<PlatformVariant[]> {
  const variants = await guestVariants();
  const runners = variants.map((v) => ({ v, run: new GuestContexts(v.source), samples: [] as number[] }));
  try {
    for (let r = 0; r < rounds && performance.now() < until; r++) {
      for (let k = 0; k < runners.length; k++) {
        const x = runners[(r + k) % runners.length]!;
        x.run.once();
        const end = Math.min(until, performance.now() + blockMs);
        while (performance.now() < end) x.samples.push(x.run.once());
      }
      // Lets the isolates' garbage collection and this process's timers run between rounds.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    for (const x of runners) x.run.dispose();
  }
  return runners.map((x) => ({ label: x.v.label, bytes: Buffer.byteLength(x.v.source), samples: x.samples }));
}
