import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src-main/engine/index.ts';
import { defineFunction } from '../support/engine.ts';
import type { TestClient } from '../support/mcpClients.ts';
import { vendorServer } from '../support/vendor.ts';
import { deployedFolder } from './support.ts';

/**
 * Redaction deployed on the real npm workerd, as locally: a loopback vendor echoes a stored
 * secret encoded (base64, lower-hex percent-encoding, in a header value and a header name, in its
 * status text and in the URL it redirects to), the function decodes what it read, and the secret is
 * in no form in the MCP result.
 */
// Characters that percent-encoding changes, so its form differs from the raw secret.
const SECRET = `sk/deploy+${process.pid}=c0ffee`;
const lowerHexUrl = encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase());
const hexName = `x-key-${Buffer.from(SECRET).toString('hex')}`;

let deployed: Awaited<ReturnType<typeof deployedFolder>> | undefined;
let client: TestClient;
let engine: Engine;

beforeAll(async () => {
  const vendor = await vendorServer((req, res) => {
    // A careless vendor: it echoes the key it knows whatever the request carried.
    if (req.url === '/echo') {
      res.writeHead(302, { location: `/final?k=${lowerHexUrl}` });
      res.end();
      return;
    }
    res.statusMessage = `OK ${SECRET}`;
    res.setHeader('x-echo', `Bearer ${SECRET}`);
    res.setHeader(hexName, '1');
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ b64: Buffer.from(SECRET).toString('base64'), url: lowerHexUrl }));
  });
  const here = `127.0.0.1:${vendor.port}`;
  deployed = await deployedFolder('callable-deploy-redaction-', async (engine) => {
    await engine.credentials.set({ name: 'vendor_key', hosts: [here], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, SECRET);
    await defineFunction(
      engine,
      {
        name: 'decode_echo',
        description: 'Reads what the vendor echoes and decodes it',
        allowedHosts: [here],
        credentials: ['vendor_key'],
        inputSchema: { type: 'object', properties: { credential: { type: 'string' } } },
      },
      `export default async ({ credential }, ctx) => {
        const res = await ctx.fetch('http://${here}/echo', credential ? { credential } : {});
        const body = await res.json();
        let b64;
        try { b64 = atob(body.b64); } catch { b64 = body.b64; }
        return {
          b64,
          url: decodeURIComponent(body.url),
          header: res.headers.get('x-echo'),
          names: [...res.headers.keys()].filter((n) => n.startsWith('x-key-')),
          statusText: res.statusText,
          finalUrl: decodeURIComponent(res.url),
        };
      }`,
    );
  });
  ({ engine, client } = deployed);
}, 60_000);

afterAll(() => deployed?.close());

/** Every form in which `text` could still carry the secret once decoded by the function. */
function leaks(text: string): string[] {
  const forms = [SECRET, lowerHexUrl, encodeURIComponent(SECRET), Buffer.from(SECRET).toString('base64'), Buffer.from(SECRET).toString('hex')];
  return forms.filter((f) => text.includes(f));
}

describe('redaction on a deployed gateway', () => {
  it.each([
    // The injected header's whole value is a secret too, as locally.
    ['the credential the request injects', { credential: 'vendor_key' }, '[redacted:vendor_key]'],
    ['a credential the deployment holds but the request did not use', {}, 'Bearer [redacted:vendor_key]'],
  ])('redacts %s in every form, in the body and header values, and drops a header named by it', async (_what, args, header) => {
    const result = await client.callTool('decode_echo', args);
    expect(result.isError, result.content[0]?.text).toBeFalsy();
    const value: unknown = JSON.parse(result.content[0]!.text!);
    expect(value).toEqual({ b64: expect.stringContaining('[redacted:vendor_key]'), url: '[redacted:vendor_key]', header, names: [], statusText: 'OK [redacted:vendor_key]', finalUrl: expect.stringMatching(/\/final\?k=\[redacted:vendor_key\]$/) });
    expect(leaks(JSON.stringify(result))).toEqual([]);
    // The same function run locally reads the same.
    const local = await engine.run('decode_echo', args, { caller: 'test' });
    expect(local, JSON.stringify(local)).toMatchObject({ ok: true, value });
  });
});
