// ctx.fetch against a vendor on 127.0.0.1: a function making one small request, and one reading an
// 8 MiB JSON answer with .json(), served by `callable mcp`, beside the plain SDK server whose tools
// make the same requests with Node's fetch (plainServer.ts fetch). Calls alternate, each after
// the same idle gap, so the machine's noise hits both alike. The small request is also made by the
// hop floor (plainServer.ts fetch-hop): the plain server whose tool hands the call to one child
// process, whose function in a fresh context asks the server to make the request, as a sandbox host
// asks callable's engine.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { stop as stopEsbuild } from 'esbuild';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { URL_INPUT_SCHEMA } from './fixture.ts';
import { alternate, checkedCall, plainStdioMode, productStdio, startStdio, type CallOutcome } from './targets.ts';

export const BIG_JSON_BYTES = 8 * 1024 * 1024;
const SMALL = Buffer.from('{"ok":true,"vendor":"bench"}');

/** {"items":[{"id":0,"name":"item 0000000","tags":["a","b"]},…]} padded to exactly `bytes`. */
function bigJson(bytes: number): { body: Buffer; items: number } {
  const parts: string[] = [];
  let size = '{"items":[],"pad":""}'.length;
  for (let k = 0; size < bytes - 100; k++) {
    const item = `${k === 0 ? '' : ','}{"id":${k},"name":"item ${String(k).padStart(7, '0')}","tags":["a","b"]}`;
    parts.push(item);
    size += item.length;
  }
  const head = `{"items":[${parts.join('')}],"pad":"`;
  return { body: Buffer.from(`${head}${' '.repeat(bytes - head.length - 2)}"}`), items: parts.length };
}

/** The vendor: GET /small answers a short JSON, GET /big the 8 MiB one. */
async function startVendor(): Promise<{ url: string; items: number; close(): Promise<void> }> {
  const big = bigJson(BIG_JSON_BYTES);
  if (big.body.length !== BIG_JSON_BYTES) throw new Error(`the big answer is ${big.body.length} bytes, not ${BIG_JSON_BYTES}`);
  const server = createServer((req, res) => {
    const body = req.url === '/big' ? big.body : SMALL;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    items: big.items,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// The same answers as plainServer.ts's fetch tools.
const FETCH_ONE = 'export default async ({ url }, ctx) => { const r = await ctx.fetch(url); return { status: r.status, length: (await r.text()).length }; }';
const FETCH_JSON = 'export default async ({ url }, ctx) => { const r = await ctx.fetch(url); return { items: (await r.json()).items.length }; }';

export interface FetchResult {
  /** [product, plain, hop] sparse one-request calls. */
  sparse: [CallOutcome[], CallOutcome[], CallOutcome[]];
  /** [product, plain] 8 MiB .json() calls. */
  big: [CallOutcome[], CallOutcome[]];
}

export async function fetchComparison(dataDir: string, cfg: { warmup: number; sparseRounds: number; bigRounds: number; gapMs: number; maxMs: number }): Promise<FetchResult> {
  const vendor = await startVendor();
  try {
    const host = new URL(vendor.url).host;
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
    try {
      await engine.saveFunction({ spec: { name: 'fetch_one', description: 'One request.', inputSchema: URL_INPUT_SCHEMA, allowedHosts: [host] }, source: FETCH_ONE });
      await engine.saveFunction({
        // The 8 MiB answer, parsed: above the default response size, and the parsed copy in the isolate.
        spec: { name: 'fetch_json', description: 'One 8 MiB JSON answer.', inputSchema: URL_INPUT_SCHEMA, allowedHosts: [host], memoryMb: 256, limits: { responseBytes: 2 * BIG_JSON_BYTES } },
        source: FETCH_JSON,
      });
    } finally {
      engine.close();
    }
    await stopEsbuild();

    const product = await startStdio({ ...productStdio(dataDir), key: 'product-fetch', label: 'callable mcp (fetch)' });
    const plain = await startStdio(plainStdioMode('fetch'));
    const hop = await startStdio(plainStdioMode('fetch-hop'));
    try {
      const small = { url: `${vendor.url}/small` };
      const bigArgs = { url: `${vendor.url}/big` };
      const smallOk = (v: unknown): string | undefined => ((v as { length?: number }).length === SMALL.length ? undefined : `wrong answer: ${JSON.stringify(v).slice(0, 200)}`);
      const bigOk = (v: unknown): string | undefined => ((v as { items?: number }).items === vendor.items ? undefined : `wrong answer: ${JSON.stringify(v).slice(0, 200)}`);
      const one = [() => checkedCall(product, 'fetch_one', small, smallOk), () => checkedCall(plain, 'fetch_one', small, smallOk), () => checkedCall(hop, 'fetch_one', small, smallOk)];
      const json = [() => checkedCall(product, 'fetch_json', bigArgs, bigOk), () => checkedCall(plain, 'fetch_json', bigArgs, bigOk)];
      const until = performance.now() + cfg.maxMs;
      await alternate(one, cfg.warmup, 0, until);
      await alternate(json, 2, 0, until);
      const sparse = await alternate(one, cfg.sparseRounds, cfg.gapMs, until);
      const big = await alternate(json, cfg.bigRounds, cfg.gapMs, until);
      return { sparse: [sparse[0]!, sparse[1]!, sparse[2]!], big: [big[0]!, big[1]!] };
    } finally {
      await product.close();
      await plain.close();
      await hop.close();
    }
  } finally {
    await vendor.close();
  }
}
