import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMcpHttpServer, type RunningHttpServer } from '../../src-main/mcp/http.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { connect, type TestClient } from '../support/mcpClients.ts';

// Names a rebinding attacker's DNS points at internal addresses.
const dns: Record<string, string[]> = {
  'internal.example.com': ['10.0.0.5'],
  'loop.example.com': ['127.0.0.1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
};
const engine = testEngine({
  resolver: async (hostname) => (dns[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
});
const ADDRESSES = /10\.0\.0\.5|127\.0\.0\.1|::ffff:(127\.0\.0\.1|7f00:1)/;
/** The text without the refusal's fixed advice, whose example address is not a resolved one. */
const told = (text: string): string => text.replaceAll('e.g. 127.0.0.1:8080', 'e.g. EXAMPLE');

let server: RunningHttpServer;
let client: TestClient;

beforeAll(async () => {
  const allowedHosts = Object.keys(dns);
  const inputSchema = { type: 'object' as const, properties: { url: { type: 'string' } } };
  // One lets the refusal fail the run, one hands the error text back as its result.
  await defineFunction(engine, { name: 'probe_throws', allowedHosts, inputSchema }, 'export default async ({ url }, ctx) => (await ctx.fetch(url)).status');
  await defineFunction(
    engine,
    { name: 'probe_returns', allowedHosts, inputSchema },
    `export default async ({ url }, ctx) => { try { return String((await ctx.fetch(url)).status); } catch (e) { ctx.log.info(e.message); return e.message; } }`,
  );
  server = await startMcpHttpServer(engine, { host: '127.0.0.1', port: 0, token: undefined, diagnostic: () => {} });
  client = await connect('2025-11-25', { transport: 'http', url: server.url });
});

afterAll(async () => {
  await client?.close();
  await server?.close();
});

describe('errors returned to MCP clients do not reveal resolved internal addresses', () => {
  for (const host of Object.keys(dns)) {
    it(`a name resolving to an internal address (${host}): the client sees why, the trace keeps the address`, async () => {
      const url = `https://${host}/admin`;
      const failed = await client.callTool('probe_throws', { url });
      expect(failed.isError).toBe(true);
      const failedText = failed.content.map((c) => c.text ?? '').join('\n');
      expect(failedText).toContain(`${host} resolves to a`);
      expect(failedText).toMatch(/e\.g\. 127\.0\.0\.1:8080|IPv4-mapped/);
      expect(told(failedText)).not.toMatch(ADDRESSES);

      const returned = await client.callTool('probe_returns', { url }, { logLevel: 'debug' });
      const returnedText = returned.content.map((c) => c.text ?? '').join('\n');
      expect(returnedText).toMatch(/refused: .* resolves to a/);
      expect(told(returnedText)).not.toMatch(ADDRESSES);
      expect(client.logs.length).toBeGreaterThan(0);
      expect(told(JSON.stringify(client.logs))).not.toMatch(ADDRESSES);

      // The run's own record (studio, `callable runs`) still names the address.
      const direct = await engine.run('probe_throws', { url }, { caller: 'test' });
      expect(direct.trace).toEqual([expect.objectContaining({ url, refused: expect.stringMatching(ADDRESSES) })]);
    });
  }
});
