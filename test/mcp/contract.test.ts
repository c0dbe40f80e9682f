import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, type Engine } from '../../src-main/engine/index.ts';
import { startServe, type ServeProcess } from '../support/callable.ts';
import { freePort, startDeployServe, type DeployServe } from '../deploy/support.ts';
import { defineFunction } from '../support/engine.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';
import { vendorServer } from '../support/vendor.ts';
import { connect, type Era, type TestClient, type TransportKind } from '../support/mcpClients.ts';

/**
 * One contract, six ways: real clients of both protocol eras over a real stdio pipe
 * (spawning `callable mcp`), over real Streamable HTTP (against `callable serve`), and against the
 * gateway of `callable deploy --target workerd --serve` on the real npm workerd.
 * The test process changes functions through its own engine: another process than the server.
 * Both eras of a transport share its data folder and server (one server answers clients of both
 * eras); their suites run one after the other, each with its own client.
 */
const transports: Array<TransportKind | 'workerd'> = ['stdio', 'http', 'workerd'];
const eras: Era[] = ['2026-07-28', '2025-11-25'];

/** A local server standing in for a vendor, for the functions that fetch. */
let vendor: Awaited<ReturnType<typeof vendorServer>>;
beforeAll(async () => {
  vendor = await vendorServer((req, res) => res.end(req.url.startsWith('/big') ? 'x'.repeat(5000) : 'ok'));
});

/** What a model reads when a call fails: the same words from every server. */
const failures = (here: string): Array<[string, Record<string, unknown>, string | RegExp]> => [
  ['echo', { txt: 'typo' }, 'Invalid arguments for echo: args.text is required; args has an unexpected property "txt". Fix the arguments to match the tool\'s input schema and call again.'],
  ['broken', {}, 'broken failed: Error: vendor said no'],
  ['sleepy', {}, 'sleepy stopped at a sandbox limit (timeout): the run exceeded its deadline of 300 ms (timeoutMs); make it faster or raise timeoutMs'],
  // The local sandbox counts the result with its envelope: the figure differs by a few bytes.
  ['too_big', {}, /^too_big stopped at a sandbox limit \(result_too_large\): the result is 20\d\d bytes, over the result size limit of 1024 bytes \(limits\.resultBytes\); return less or raise the limit$/],
  ['bad_output', {}, 'bad_output failed (output_invalid): the result does not match the outputSchema: result.n must be number'],
  ['too_chatty', {}, 'too_chatty stopped at a sandbox limit (log_limit): the function logged more than 1024 bytes (limits.logBytes); log less or raise the limit'],
  [
    'go_unlisted',
    {},
    `go_unlisted failed: Error: GET https://api.example.com/v1 refused: api.example.com is not an allowed host: allowedHosts is ${here}; add it to the function's allowedHosts`,
  ],
  [
    'go_plain',
    {},
    'go_plain failed: Error: GET http://api.example.com/v1 refused: plain http is only allowed to a literal local address named in allowedHosts (e.g. 127.0.0.1:8080); use https',
  ],
  ['many_fetches', {}, 'many_fetches stopped at a sandbox limit (fetch_limit): the function made more than 2 requests (limits.fetchCount); make fewer or raise the limit'],
  [
    'big_body',
    {},
    `big_body stopped at a sandbox limit (response_too_large): the response from ${here} is larger than the response body limit (1024 bytes); raise limits.responseBytes if that is expected`,
  ],
];

/** The functions `failures` calls, beside the MCP suites' own. */
async function seedFailingFunctions(engine: Engine, here: string): Promise<void> {
  await defineFunction(engine, { name: 'too_chatty', description: 'Logs more than its log limit', limits: { logBytes: 1024 } }, 'export default (a, ctx) => { ctx.log("y".repeat(2000)); return "said it"; }');
  await defineFunction(engine, { name: 'go_unlisted', description: 'Fetches a host not on its list', allowedHosts: [here] }, "export default async (a, ctx) => (await ctx.fetch('https://api.example.com/v1')).status");
  await defineFunction(engine, { name: 'go_plain', description: 'Fetches a listed host over plain http', allowedHosts: ['api.example.com'] }, "export default async (a, ctx) => (await ctx.fetch('http://api.example.com/v1')).status");
  await defineFunction(
    engine,
    { name: 'many_fetches', description: 'Fetches three times, even when refused', allowedHosts: [here], limits: { fetchCount: 2 } },
    `export default async (a, ctx) => { for (let i = 0; i < 3; i++) await ctx.fetch('http://${here}/n' + i).catch(() => {}); return 'all three'; }`,
  );
  await defineFunction(
    engine,
    { name: 'big_body', description: 'Reads a body over its limit', allowedHosts: [here], limits: { responseBytes: 1024 } },
    `export default async (a, ctx) => (await (await ctx.fetch('http://${here}/big')).text()).length`,
  );
  await defineFunction(engine, { name: 'sleepy', description: 'Outlives its deadline', timeoutMs: 300 }, 'export default async () => { await new Promise((r) => setTimeout(r, 5000)); return "late"; }');
  await defineFunction(engine, { name: 'too_big', description: 'Returns more than its result limit', limits: { resultBytes: 1024 } }, 'export default () => "x".repeat(2000)');
  await defineFunction(
    engine,
    { name: 'bad_output', description: 'Breaks its output schema', outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } },
    'export default () => ({ n: "not a number" })',
  );
}

async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

for (const transport of transports) {
  describe(`MCP over ${transport}`, () => {
    let dataDir: string;
    let engine: Engine;
    let serve: ServeProcess | undefined;
    let token: string | undefined;
    let deployed: DeployServe | undefined;
    // The deployed gateway keeps no run history and has a fixed tool list (README: "What it does not do").
    const local = transport !== 'workerd';

    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), `callable-mcp-${transport}-`));
      engine = createEngine({ dataDir });
      await seedMcpFunctions(engine);
      await seedFailingFunctions(engine, `127.0.0.1:${vendor.port}`);
      if (transport === 'workerd') {
        deployed = await startDeployServe(dataDir, ['--port', String(await freePort())]);
      } else if (transport === 'http') {
        token = await engine.mcpToken();
        serve = await startServe(dataDir);
      }
    });

    afterAll(async () => {
      await serve?.stop();
      await deployed?.stop();
      engine?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    for (const era of eras) {
      describe(`${era} client`, () => {
        let client: TestClient;
        // What this suite adds to the shared data folder is its own: the other era's suite ran there first.
        const fresh = `fresh_${era.slice(0, 4)}`;
        const auditText = `audit me (${era})`;

        beforeAll(async () => {
          if (transport === 'workerd') client = await connect(era, { transport: 'http', url: deployed!.url, token: deployed!.token });
          else if (transport === 'stdio') client = await connect(era, { transport, stdioArgs: ['--data-dir', dataDir] });
          else client = await connect(era, { transport, url: serve!.url, token: token! });
        });

        afterAll(async () => {
          await client?.close();
        });

        it('lists the enabled functions with their schemas and annotations', async () => {
          const tools = await client.listTools();
          expect(tools.map((t) => t.name).sort()).toEqual(['bad_output', 'big_body', 'broken', 'chatty', 'echo', 'go_plain', 'go_unlisted', 'many_fetches', 'picture', 'sleepy', 'slow', 'too_big', 'too_chatty']);
          const echo = tools.find((t) => t.name === 'echo')!;
          expect(echo).toMatchObject({
            title: 'Echo',
            description: 'Echoes text and doubles n',
            inputSchema: { type: 'object', required: ['text'] },
            outputSchema: { type: 'object', required: ['echo', 'n'] },
            annotations: { readOnlyHint: true },
          });
        });

        it('calls a function: JSON as text plus structuredContent', async () => {
          const result = await client.callTool('echo', { text: 'hi', n: 2 });
          expect(result.isError).toBeFalsy();
          expect(result.structuredContent).toEqual({ echo: 'hi', n: 4 });
          expect(JSON.parse(result.content[0]!.text!)).toEqual({ echo: 'hi', n: 4 });
        });

        it('answers bad arguments, a throwing function, limits and a broken output schema with error results in the same words', async () => {
          for (const [name, args, text] of failures(`127.0.0.1:${vendor.port}`)) {
            const result = await client.callTool(name, args);
            expect(result.isError, name).toBe(true);
            expect(result.content, name).toEqual([{ type: 'text', text: typeof text === 'string' ? text : expect.stringMatching(text) }]);
          }
        });

        it('answers an unknown tool with a protocol error', async () => {
          await expect(client.callTool('no_such_tool', {})).rejects.toThrow(/Unknown tool: no_such_tool/);
        });

        it('returns image content', async () => {
          const result = await client.callTool('picture', {});
          expect(result.content).toEqual([{ type: 'image', data: 'iVBORw==', mimeType: 'image/png' }]);
        });

        // A 2025-11-25 client asks for a level with logging/setLevel, which a stateless gateway cannot keep (README says so).
        it.runIf(local || era === '2026-07-28')("sends the function's logs at the level the client asked for", async () => {
          const before = client.logs.length;
          await client.callTool('chatty', {}, { logLevel: 'info' });
          const got = await eventually(() => (client.logs.length - before >= 2 ? client.logs.slice(before) : undefined), 'log messages');
          expect(got.map((l) => [l.level, l.data])).toEqual([
            ['info', 'i-msg'],
            ['warning', 'w-msg'],
          ]);
        });

        it('turns ctx.progress into progress notifications', async () => {
          const seen: Array<{ progress: number; total?: number; message?: string }> = [];
          const result = await client.callTool('slow', { ms: 200, steps: 3 }, { onprogress: (p) => seen.push(p) });
          expect(result.content[0]!.text).toBe('done');
          expect(seen.map((p) => p.progress)).toEqual([1, 2, 3]);
          expect(seen[2]).toMatchObject({ total: 3, message: 'step 3' });
        });

        it('does not hold fast calls behind a slow one', async () => {
          const order: string[] = [];
          const slow = client.callTool('slow', { ms: 1500, steps: 1 }).then(() => order.push('slow'));
          await new Promise((r) => setTimeout(r, 100));
          await client.callTool('echo', { text: 'quick' }).then(() => order.push('fast'));
          await slow;
          expect(order).toEqual(['fast', 'slow']);
        });

        it.runIf(local)('cancels a running call', async () => {
          const controller = new AbortController();
          const call = client.callTool('slow', { ms: 20_000, steps: 2 }, { signal: controller.signal });
          setTimeout(() => controller.abort(new Error('user cancelled')), 300);
          await expect(call).rejects.toThrow();
          const run = await eventually(() => engine.runs.list({ functionName: 'slow', limit: 5 }).find((r) => r.errorCode === 'cancelled' && r.clientName === client.clientName), 'a cancelled run in the audit log');
          expect(run.durationMs).toBeLessThan(10_000);
        });

        it.runIf(local)('records each call with the client name, transport and outcome', async () => {
          await client.callTool('echo', { text: auditText });
          // The server process writes its audit records right after answering.
          const run = await eventually(() => engine.runs.list({ functionName: 'echo', limit: 1 }).find((r) => (r.args as { text?: string }).text === auditText), 'the audit record');
          expect(run).toMatchObject({ caller: 'mcp', clientName: client.clientName, transport, ok: true, args: { text: auditText } });
        });

        it.runIf(local)('tells the client when another process changes the functions, and serves the latest version', async () => {
          const changed = client.nextListChanged();
          await engine.saveFunction({ spec: { name: fresh, description: 'added while connected' }, source: 'export default () => "v1"' });
          expect(await changed).toContain(fresh);
          expect((await client.callTool(fresh, {})).content[0]!.text).toBe('v1');

          await engine.saveFunction({ spec: { name: fresh, description: 'edited' }, source: 'export default () => "v2"' });
          expect((await client.callTool(fresh, {})).content[0]!.text).toBe('v2');

          const removed = client.nextListChanged();
          await engine.functions.setEnabled(fresh, false);
          expect(await removed).not.toContain(fresh);
          await expect(client.callTool(fresh, {})).rejects.toThrow(/Unknown tool/);
        });
      });
    }
  });
}
