import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFunction } from '../support/engine.ts';
import type { TestClient } from '../support/mcpClients.ts';
import { bearersSeen, LONG_LIVED, MACHINE, oauthProvider, type OAuthProvider } from '../support/oauthProvider.ts';
import { deployedFolder } from './support.ts';

/**
 * An OAuth client credentials credential on a deployed gateway (the real npm workerd), against a real
 * oidc-provider whose access tokens live 2 seconds: `callable deploy --serve` gives the egress Worker
 * the client secret (never a token), and the Worker obtains, caches, refreshes and, after a 401,
 * replaces the access token itself, as the local engine does.
 */
let op: OAuthProvider;
let deployed: Awaited<ReturnType<typeof deployedFolder>> | undefined;
let client: TestClient;
/** Token requests made before the deployment served anything: the engine's own, at connect. */
let atStart: number;

beforeAll(async () => {
  op = await oauthProvider({ accessTokenTtl: 2 });
  const host = `127.0.0.1:${op.resource.port}`;
  deployed = await deployedFolder('callable-deploy-oauth-', async (engine) => {
    for (const [name, app] of [['machine', MACHINE], ['long', LONG_LIVED]] as const) {
      await engine.credentials.connect({ name, hosts: [host], issuer: op.issuer, clientId: app.id, scopes: ['read'], grant: 'client_credentials' }, { clientSecret: app.secret });
    }
    await defineFunction(
      engine,
      { name: 'calls', description: 'Calls the resource server through an OAuth credential', allowedHosts: [host], credentials: ['machine'], timeoutMs: 20_000, inputSchema: { type: 'object', properties: { times: { type: 'number' }, gap: { type: 'number' } } } },
      `export default async ({ times = 1, gap = 0 }, ctx) => {
        const seen = [];
        for (let i = 0; i < times; i++) {
          const r = await ctx.fetch('${op.resource.origin}/items/' + i, { credential: 'machine' });
          seen.push(r.status);
          await new Promise((f) => setTimeout(f, gap));
        }
        return seen;
      }`,
    );
    await defineFunction(
      engine,
      { name: 'sdk_style', description: 'Builds its own Authorization header with ctx.secret', allowedHosts: [host], credentials: ['machine'] },
      `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/echo', { headers: { authorization: 'Bearer ' + ctx.secret('machine') } })).json()`,
    );
    await defineFunction(
      engine,
      { name: 'long_call', description: 'One call with a long-lived token', allowedHosts: [host], credentials: ['long'] },
      `export default async (a, ctx) => (await ctx.fetch('${op.resource.origin}/long', { credential: 'long' })).status`,
    );
  });
  ({ client } = deployed);
  atStart = op.tokenRequests.length;
}, 60_000);

afterAll(() => deployed?.close());

async function call(name: string, args: Record<string, unknown> = {}): Promise<unknown> {
  const result = await client.callTool(name, args);
  const text = result.content[0]?.text ?? '';
  expect(result.isError, text).toBeFalsy();
  return JSON.parse(text);
}

describe('a deployed function with an OAuth client credentials credential', () => {
  it('the egress Worker obtains the access token and refreshes it as it nears expiry: calls across two token lifetimes all succeed', async () => {
    expect(await call('calls', { times: 5, gap: 900 })).toEqual([200, 200, 200, 200, 200]);
    const made = op.tokenRequests.slice(atStart);
    // 4 s of calls with 2 s tokens refreshed at half their life: a few token requests, not one per call.
    expect(made.length).toBeGreaterThanOrEqual(2);
    expect(made.length).toBeLessThan(5);
    expect(made.every((r) => r.grantType === 'client_credentials')).toBe(true);
  }, 30_000);

  it("ctx.secret's placeholder is swapped for the Worker's access token; the token a vendor echoes comes back redacted", async () => {
    const echoed = (await call('sdk_style')) as { ok: boolean; authorization: string };
    expect(echoed.ok).toBe(true);
    expect(echoed.authorization).toBe('Bearer [redacted:machine]');
    for (const token of bearersSeen(op.resource)) expect(JSON.stringify(echoed)).not.toContain(token);
  });

  it('answers a 401 to a token the server dropped early with one new token and one retry of the request', async () => {
    expect(await call('long_call')).toBe(200);
    const token = bearersSeen(op.resource).at(-1);
    await (await op.provider.ClientCredentials.find(token!))!.destroy();
    const requests = op.tokenRequests.length;
    const rejected = op.resource.rejected;
    expect(await call('long_call')).toBe(200);
    expect(op.tokenRequests.length).toBe(requests + 1);
    expect(op.resource.rejected).toBe(rejected + 1);
  });
});
