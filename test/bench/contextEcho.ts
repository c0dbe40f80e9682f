// The ideal's echo (issue #25): a fresh isolated-vm context per call, the function's body run once
// in it, its JSON answer out, the context released, synchronously. Used in process by the ideal
// server (plainServer.ts stdio-context) and, one hop away, by the hop floor's child (hopChild.ts).
import ivm from 'isolated-vm';

export type EchoArgs = { text: string; n: number };

/** The echo in a fresh context per call: context, one call in, the JSON answer out, release (sync, like the floor). */
export function contextEcho(): (args: EchoArgs) => string {
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  const script = isolate.compileScriptSync(`(function (argsJson) { const { text, n } = JSON.parse(argsJson); return JSON.stringify({ echo: text, n: n * 2 }); })`);
  return (args) => {
    const context = isolate.createContextSync();
    try {
      const fn = script.runSync(context, { reference: true }) as ivm.Reference<(json: string) => string>;
      const json = fn.applySync(undefined, [JSON.stringify(args)], { result: { copy: true } }) as string;
      fn.release();
      return json;
    } finally {
      context.release();
    }
  };
}

/** What a fetch asked of the parent comes back as: the status and the body as text. */
export interface Fetched {
  status: number;
  body: string;
}

/**
 * The fetch_one function in a fresh context per call: it asks `fetch` (outside the isolate) for the
 * URL, awaits the answer inside the context, and answers { status, length } as JSON.
 */
export function contextFetchOne(): (url: string, fetch: (url: string) => Promise<Fetched>) => Promise<string> {
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  const script = isolate.compileScriptSync(
    `(async function (url, fetch) { const r = await fetch.apply(undefined, [url], { result: { promise: true, copy: true } }); return JSON.stringify({ status: r.status, length: r.body.length }); })`,
  );
  return async (url, fetch) => {
    const context = isolate.createContextSync();
    const bridge = new ivm.Reference(fetch);
    try {
      const fn = script.runSync(context, { reference: true }) as ivm.Reference<(url: string, fetch: ivm.Reference) => Promise<string>>;
      const json = (await fn.apply(undefined, [url, bridge], { result: { promise: true, copy: true } })) as string;
      fn.release();
      return json;
    } finally {
      bridge.release();
      context.release();
    }
  };
}
