import { ProtocolError } from '@modelcontextprotocol/client';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ChildProcess } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { startServe } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { startMcpHttpServer } from '../../src-main/mcp/http.ts';
import { testEngine, waitVendorFunction } from '../support/engine.ts';
import { exchange, headers2026, mcpHeaders, messagesOf, open, request2026 } from '../support/rawHttp.ts';
import { connect, type Era } from '../support/mcpClients.ts';
import { scratch } from '../support/scratch.ts';
import { until } from '../support/wait.ts';

// Stopping `callable serve` (Ctrl-C or SIGTERM) while a call runs answers that call with a JSON-RPC error
// saying the server is shutting down, not a dropped stream the client must make sense of.

const s = scratch();

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** A data folder with `wait_vendor` (a call that lasts until its vendor answers) and that vendor. */
async function dataWithSlowCall() {
  const dataDir = s.dir('callable-shutdown-');
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    return { dataDir, vendor: await waitVendorFunction(engine) };
  } finally {
    engine.close();
  }
}

describe('Ctrl-C (SIGINT) or SIGTERM to callable serve with a call in flight', () => {
  for (const [era, errorClass, signal, exitCode] of [
    ['2025-11-25', McpError, 'SIGINT', 130],
    ['2026-07-28', ProtocolError, 'SIGINT', 130],
    ['2025-11-25', McpError, 'SIGTERM', 143],
    ['2026-07-28', ProtocolError, 'SIGTERM', 143],
  ] as Array<[Era, new (...args: never[]) => Error, NodeJS.Signals, number]>) {
    it(`${signal}: a ${era} client's call rejects with a JSON-RPC error saying the server is shutting down; exit ${exitCode}; the run is recorded as interrupted`, async () => {
      const { dataDir, vendor } = await dataWithSlowCall();
      const serve = await startServe(dataDir, ['--no-auth']);
      s.child(serve.child);
      const client = await connect(era, { transport: 'http', url: serve.url });
      try {
        const call = Promise.race([
          client.callTool('wait_vendor', { tag: 'stop' }).then(
            (result) => ({ result }),
            (error: unknown) => ({ error }),
          ),
          new Promise<{ error: Error }>((resolve) => setTimeout(() => resolve({ error: new Error('no answer within 10 s') }), 10_000)),
        ]);
        await until(() => vendor.seen() === 1, 'the call at the vendor');
        const exit = exited(serve.child);
        serve.child.kill(signal);
        const outcome = await call;
        expect(outcome, JSON.stringify(outcome)).toHaveProperty('error');
        const error = (outcome as { error: Error }).error;
        expect(error, `${error.constructor.name}: ${error.message}`).toBeInstanceOf(errorClass);
        expect(error.message).toMatch(/the server is shutting down/);
        expect(await exit, serve.stderr()).toEqual({ code: exitCode, signal: null });
        expect(serve.stderr()).toContain(`callable serve: interrupted (${signal})`);
        // Nothing on stderr but the lines of a normal start and stop.
        expect(serve.stderr()).not.toMatch(/mcp http:|\n\s+at /);
      } finally {
        await client.close().catch(() => {});
        vendor.release();
      }
      await until(() => vendor.closed() === 1, 'the vendor request to close', 2000);
      const runs = await cli(['runs', '--json', '--data-dir', dataDir]);
      expect(JSON.parse(runs.stdout)).toMatchObject([{ functionName: 'wait_vendor', caller: 'mcp', transport: 'http', ok: false, errorCode: 'interrupted' }]);
    });
  }
});

describe('shutting the HTTP server down', () => {
  const engine = testEngine();

  it('answers a call waiting for a slot and the running one with the shutting-down error, and refuses new requests meanwhile', async () => {
    const vendor = await waitVendorFunction(engine);
    const token = 'shutdown-token-0123456789';
    const server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token, diagnostic: () => {}, limits: { maxRunningCalls: 1 } });
    const call = (id: number) =>
      open(server.port, { headers: mcpHeaders(token, headers2026('tools/call', 'wait_vendor')), body: request2026(id, 'tools/call', { name: 'wait_vendor', arguments: { tag: `s${id}` } }) });
    try {
      const running = call(1);
      await until(() => vendor.seen() === 1, 'the running call at the vendor');
      const waiting = call(2);
      await new Promise((r) => setTimeout(r, 200));
      expect(vendor.seen()).toBe(1);
      server.shutdown();
      const queued = await waiting;
      expect(queued.status).toBe(200);
      expect(JSON.parse(await queued.ended)).toMatchObject({ jsonrpc: '2.0', id: 2, error: { message: expect.stringMatching(/the server is shutting down/) } });
      // No new connection is accepted meanwhile.
      const late = await exchange(server.port, { headers: mcpHeaders(token, headers2026('tools/list')), body: request2026(3, 'tools/list') }).catch((error: Error) => error);
      expect(late).toBeInstanceOf(Error);
      expect((late as Error).message).toMatch(/ECONNREFUSED/);
      // The engine stops the running call's run (as the CLI does on Ctrl-C): it gets the same error.
      const closing = server.close();
      await engine.interrupt();
      const first = await running;
      expect(messagesOf(await first.ended).at(-1)).toMatchObject({ id: 1, error: { message: expect.stringMatching(/the server is shutting down/) } });
      await closing;
      expect(vendor.seen()).toBe(1);
    } finally {
      vendor.release();
      await server.close();
    }
  });
});

describe('closing the HTTP server while calls run on', () => {
  // An engine of its own: the one above was told to stop, and refuses every run since.
  const engine = testEngine();

  for (const [era, errorClass] of [
    ['2025-11-25', McpError],
    ['2026-07-28', ProtocolError],
  ] as Array<[Era, new (...args: never[]) => Error]>) {
    it(`closing while a ${era} call runs on (the engine not stopping it, as when the studio stops its server) answers it "did not finish" after a short grace`, async () => {
      const vendor = await waitVendorFunction(engine);
      const token = 'shutdown-token-0123456789';
      const server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token, diagnostic: () => {} });
      const client = await connect(era, { transport: 'http', url: `http://127.0.0.1:${server.port}/mcp`, token });
      try {
        const seen = vendor.seen();
        const call = client.callTool('wait_vendor', { tag: 'straggler' }).then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
        await until(() => vendor.seen() === seen + 1, 'the call at the vendor');
        const started = performance.now();
        await server.close();
        const outcome = await call;
        expect(outcome, JSON.stringify(outcome)).toHaveProperty('error');
        const error = (outcome as { error: Error }).error;
        expect(error, `${error.constructor.name}: ${error.message}`).toBeInstanceOf(errorClass);
        expect(error.message).toMatch(/the server is shutting down; this call did not finish/);
        expect(performance.now() - started).toBeLessThan(3000);
      } finally {
        vendor.release();
        await client.close().catch(() => {});
        await server.close();
      }
    });
  }
});
