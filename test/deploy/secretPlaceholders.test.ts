import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineFunction } from '../support/engine.ts';
import type { TestClient } from '../support/mcpClients.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';
import { deployedFolder } from './support.ts';

/**
 * ctx.secret on a deployed gateway (the real npm workerd), as locally: the gateway mints the
 * placeholder per call, the egress Worker swaps it for the secret only in header values and query
 * parameters towards the credential's hosts, and refuses it anywhere else.
 */
const SECRET = `sk/deploy+${process.pid}=placeholder`;
const PLACEHOLDER = /callable_secret_[0-9A-Za-z]{22}/;
const everything = (r: SeenRequest) => `${r.method} ${r.url} ${JSON.stringify(r.headers)} ${r.bytes.toString('latin1')}`;

let deployed: Awaited<ReturnType<typeof deployedFolder>> | undefined;
let client: TestClient;
let own: Awaited<ReturnType<typeof vendorServer>>;
let other: Awaited<ReturnType<typeof vendorServer>>;

beforeAll(async () => {
  own = await vendorServer((req, res) => {
    if (req.url === '/away') {
      res.writeHead(302, { location: `http://127.0.0.1:${other.port}/landed` }).end();
      return;
    }
    const query = new URL(req.url, 'http://x').searchParams;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ header: req.headers.authorization === `Bearer ${SECRET}`, query: query.get('api_key') === SECRET }));
  });
  other = await vendorServer((_req, res) => res.writeHead(200).end('ok'));
  const A = `127.0.0.1:${own.port}`;
  const B = `127.0.0.1:${other.port}`;
  deployed = await deployedFolder('callable-deploy-placeholders-', async (engine) => {
    await engine.credentials.set({ name: 'vendor', hosts: [A], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, SECRET);
    await defineFunction(
      engine,
      {
        name: 'use_key',
        description: 'Uses a placeholder in many ways',
        allowedHosts: [A, B],
        credentials: ['vendor'],
        inputSchema: { type: 'object', properties: { attack: { type: 'string' }, name: { type: 'string' } } },
      },
      `export default async ({ attack, name = 'vendor' }, ctx) => {
        const send = (url, init) => ctx.fetch(url, init).then(async (r) => ({ status: r.status, body: await r.text() }), (e) => ({ code: e.code, refused: e.message }));
        let key;
        try { key = ctx.secret(name); } catch (e) { return { code: e.code, message: e.message }; }
        const A = 'http://${A}', B = 'http://${B}';
        switch (attack) {
          case 'use': return (await ctx.fetch(A + '/check?api_key=' + key, { headers: { authorization: 'Bearer ' + key } })).json();
          case 'other': return send(B + '/steal', { headers: { authorization: 'Bearer ' + key } });
          case 'basic': return send(A + '/basic', { headers: { authorization: 'Basic ' + btoa('user:' + key) } });
          case 'body': return send(A + '/steal', { method: 'POST', body: btoa(key) });
          case 'path': return send(A + '/steal/' + key);
          case 'redirect': return send(A + '/away', { headers: { authorization: 'Bearer ' + key } });
          case 'forged': return send(A + '/forged', { headers: { 'x-callable-placeholders': JSON.stringify([['made-up', 'vendor']]), 'x-key': 'made-up' } });
          case 'log': ctx.log('key', key); return 'logged';
          default: return { key };
        }
      }`,
    );
  });
  ({ client } = deployed);
}, 60_000);

afterAll(() => deployed?.close());

const call = async (args: Record<string, unknown>) => {
  const result = await client.callTool('use_key', args);
  return { result, text: result.content[0]?.text ?? '' };
};
const refusal = (place: string, outcome = 'nothing was sent') =>
  `ctx.secret("vendor") was found in ${place}, so ${outcome}: it stands for the secret of credential "vendor" only in header values and query parameters of requests to 127.0.0.1:${own.port}`;

describe('ctx.secret on a deployed gateway', () => {
  it('the vendor receives the real key in a header the function builds and in a query parameter', async () => {
    const { result, text } = await call({ attack: 'use' });
    expect(result.isError, text).toBeFalsy();
    expect(JSON.parse(text)).toEqual({ header: true, query: true });
    expect(own.seen.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('the vendor receives Basic base64(user:key) for a Basic header built with the placeholder', async () => {
    const { result, text } = await call({ attack: 'basic' });
    expect(result.isError, text).toBeFalsy();
    expect(own.seen.at(-1)!.headers.authorization).toBe(`Basic ${Buffer.from(`user:${SECRET}`).toString('base64')}`);
  });

  it.each([
    ['other', () => `the "authorization" header of a request to 127.0.0.1:${other.port}, which is not one of its hosts`],
    ['body', () => 'the request body'],
    ['path', () => 'the URL path'],
  ])('refuses it in %s before anything is sent', async (attack, place) => {
    const before = own.seen.length + other.seen.length;
    const { result, text } = await call({ attack });
    expect(result.isError, text).toBeFalsy();
    const value = JSON.parse(text) as { code: string; refused: string };
    expect(value.code).toBe('egress_refused');
    expect(value.refused.endsWith(` refused: ${refusal(place())}`), value.refused).toBe(true);
    expect(value.refused).not.toMatch(PLACEHOLDER);
    expect(own.seen.length + other.seen.length).toBe(before);
  });

  it('a redirect to another host does not carry the headers that held it', async () => {
    const { text } = await call({ attack: 'redirect' });
    expect(JSON.parse(text)).toEqual({ status: 200, body: 'ok' });
    const landed = other.seen.filter((r) => r.url === '/landed').at(-1)!;
    expect(landed.headers.authorization).toBeUndefined();
    expect(everything(landed)).not.toContain(SECRET);
    expect(everything(landed)).not.toMatch(PLACEHOLDER);
  });

  it('a placeholder mapping the function makes up itself is not honoured', async () => {
    const { text } = await call({ attack: 'forged' });
    expect(JSON.parse(text)).toMatchObject({ status: 200 });
    const seen = own.seen.filter((r) => r.url === '/forged').at(-1)!;
    expect(seen.headers['x-key']).toBe('made-up');
    expect(everything(seen)).not.toContain(SECRET);
  });

  it.each([
    ['result', {}, 'the result'],
    ['log', { attack: 'log' }, 'a log line'],
  ])('a placeholder in the %s ends the call refused, and the client never gets it', async (_what, args, place) => {
    const { result, text } = await call(args);
    expect(result.isError).toBe(true);
    expect(text).toContain(refusal(place, 'the run was stopped and what it held is not kept'));
    expect(JSON.stringify(result)).not.toMatch(PLACEHOLDER);
  });

  it('a credential the function does not list is refused in one line, as locally', async () => {
    const { text } = await call({ name: 'github' });
    expect(JSON.parse(text)).toEqual({ code: 'credential_refused', message: `ctx.secret: this function may not use credential "github": add it to the function's "credentials" list` });
  });
});
