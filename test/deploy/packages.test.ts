// Functions that import vendor SDKs, deployed to real workerd through the gateway: the bundle saved
// locally (the SDK, and the sandbox's Node compatibility modules it imports) is what the deployed
// isolate runs, its requests leaving through the egress Worker with the key swapped in there.
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestClient } from '../support/mcpClients.ts';
import { machineRegistry } from '../support/registry.ts';
import { vendorServer } from '../support/vendor.ts';
import { KEPT_PACKAGES } from '../support/vendors/sdkPins.ts';
import * as standIns from '../support/vendors/standIns.ts';
import { deployedFolder } from './support.ts';

const registry = await machineRegistry();
const KEY = `gsk_deploy_${process.pid}`;
const LINEAR_KEY = `lin_api_deploy_${process.pid}`;

describe.skipIf(!registry.reachable)(`vendor SDKs deployed to workerd (installed from ${registry.url}; skipped when it cannot be reached from here)`, () => {
  let deployed: Awaited<ReturnType<typeof deployedFolder>> | undefined;
  let client: TestClient;
  let groq: Awaited<ReturnType<typeof vendorServer>>;
  let linear: Awaited<ReturnType<typeof vendorServer>>;

  beforeAll(async () => {
    groq = await vendorServer(standIns.openAiLike(KEY, '/openai/v1'));
    linear = await vendorServer(standIns.linear(LINEAR_KEY));
    deployed = await deployedFolder('callable-deploy-packages-', async (engine) => {
      // The packages kept between runs by the vendor SDK test: exact versions installed there are taken without npm.
      mkdirSync(KEPT_PACKAGES, { recursive: true });
      symlinkSync(KEPT_PACKAGES, join(engine.dataDir, 'packages'), 'dir');
      const sdk = async (name: string, host: string, dependencies: Record<string, string>, key: string, source: string) => {
        await engine.credentials.set({ name, hosts: [host], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, key);
        await engine.saveFunction({ spec: { name, description: `${name} against a stand-in`, allowedHosts: [host], credentials: [name], inputSchema: { type: 'object' } }, source, packages: { dependencies } });
        engine.credentials.grant(name, name);
      };
      const G = `127.0.0.1:${groq.port}`;
      const L = `127.0.0.1:${linear.port}`;
      await sdk('groq_chat', G, { 'groq-sdk': '1.6.0' }, KEY, `import Groq from 'groq-sdk';
export default async (args, ctx) => {
  const groq = new Groq({ apiKey: ctx.secret('groq_chat'), baseURL: 'http://${G}', maxRetries: 0 });
  const completion = await groq.chat.completions.create({ model: 'llama-3.3-70b-versatile', messages: [{ role: 'user', content: 'Say hello' }] });
  return { id: completion.id, text: completion.choices[0].message.content };
};`);
      await sdk('linear_viewer', L, { '@linear/sdk': '98.0.0' }, LINEAR_KEY, `import { LinearClient } from '@linear/sdk';
export default async (args, ctx) => {
  const me = await new LinearClient({ apiKey: ctx.secret('linear_viewer'), apiUrl: 'http://${L}/graphql' }).viewer;
  return { id: me.id, name: me.name };
};`);
    });
    ({ client } = deployed);
  }, 240_000);

  afterAll(() => deployed?.close());

  const value = async (name: string): Promise<unknown> => {
    const result = await client.callTool(name, {});
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    return JSON.parse(result.content[0]!.text!);
  };

  it('groq-sdk: chat.completions.create from the deployed function; the vendor gets the real key', async () => {
    expect(await value('groq_chat')).toEqual({ id: 'chatcmpl-stand-in', text: 'Hello there' });
    const seen = groq.seen.at(-1)!;
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/openai/v1/chat/completions', `Bearer ${KEY}`]);
  });

  it("@linear/sdk: the viewer query, with the sandbox's crypto and process bundled in, runs the same on workerd", async () => {
    expect(await value('linear_viewer')).toEqual({ id: 'user-ada', name: 'Ada Lovelace' });
    const seen = linear.seen.at(-1)!;
    expect([seen.method, seen.url, seen.headers.authorization]).toEqual(['POST', '/graphql', LINEAR_KEY]);
  });
});
