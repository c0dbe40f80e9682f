import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src-main/engine/index.ts';
import { defineFunction } from '../support/engine.ts';
import type { TestClient } from '../support/mcpClients.ts';
import { vendorServer, type SeenRequest } from '../support/vendor.ts';
import { deployedFolder } from './support.ts';

/**
 * Request bodies through a deployed gateway on the real npm workerd: what ctx.fetch sends with
 * json, body, form and multipart, as the bytes a loopback vendor receives, and the same as the
 * local sandbox sends for the same function.
 */
let vendor: Awaited<ReturnType<typeof vendorServer>>;
let deployed: Awaited<ReturnType<typeof deployedFolder>> | undefined;
let client: TestClient;
let engine: Engine;

beforeAll(async () => {
  vendor = await vendorServer((_req, res) => res.end('received'));
  const here = `127.0.0.1:${vendor.port}`;
  deployed = await deployedFolder('callable-deploy-bodies-', async (engine) => {
    await defineFunction(
      engine,
      {
        name: 'send',
        description: 'Sends what it is given to the vendor',
        allowedHosts: [here],
        inputSchema: { type: 'object', properties: { method: { type: 'string' }, options: { type: 'object' }, bytes: { type: 'boolean' } } },
      },
      `export default async ({ method, options, bytes }, ctx) => {
        const init = { ...options, method };
        // JSON cannot carry bytes: a multipart part's data becomes a Uint8Array when asked.
        if (bytes) init.multipart.file.data = new TextEncoder().encode(init.multipart.file.data);
        const res = await ctx.fetch('http://${here}/in', init);
        return res.status + ' ' + (await res.text());
      }`,
    );
  });
  ({ engine, client } = deployed);
}, 60_000);

afterAll(() => deployed?.close());

/** A multipart body's parts, without its boundary (each side picks its own). */
function partsOf(seen: SeenRequest): string[] | undefined {
  const boundary = /^multipart\/form-data; boundary="?([^";]+)"?$/.exec(String(seen.headers['content-type']))?.[1];
  if (boundary === undefined) return undefined;
  expect(seen.body.endsWith(`--${boundary}--\r\n`) || seen.body.endsWith(`--${boundary}--`)).toBe(true);
  return seen.body
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((p) => p.replace(/^\r\n/, '').replace(/\r\n$/, ''));
}

/** What a vendor can tell apart: method, content type (but the boundary), and the body. */
function shapeOf(seen: SeenRequest): Record<string, unknown> {
  const parts = partsOf(seen);
  return { method: seen.method, contentType: parts ? 'multipart/form-data' : seen.headers['content-type'], body: parts ?? seen.body };
}

/** Calls `send` through the deployed gateway and returns what the vendor received; the local sandbox must send the same. */
async function sent(args: Record<string, unknown>): Promise<SeenRequest> {
  const before = vendor.seen.length;
  const result = await client.callTool('send', args);
  expect(result.isError, result.content[0]?.text).toBeFalsy();
  expect(result.content[0]!.text).toBe('200 received');
  expect(vendor.seen.length).toBe(before + 1);
  const seen = vendor.seen.at(-1)!;
  // The host frames the body: its length is the one the vendor counted.
  expect(Number(seen.headers['content-length'])).toBe(Buffer.byteLength(seen.body));
  const local = await engine.run('send', args, { caller: 'test' });
  expect(local, JSON.stringify(local)).toMatchObject({ ok: true, value: '200 received' });
  expect(shapeOf(vendor.seen.at(-1)!)).toEqual(shapeOf(seen));
  return seen;
}

describe('ctx.fetch with a body, deployed on workerd', () => {
  it('POSTs JSON', async () => {
    const seen = await sent({ method: 'POST', options: { json: { a: 1, b: ['é', null] } } });
    expect(seen.method).toBe('POST');
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.body).toBe('{"a":1,"b":["é",null]}');
  });

  it('PUTs text with its own content type', async () => {
    const seen = await sent({ method: 'PUT', options: { body: 'plain words', headers: { 'content-type': 'text/plain' } } });
    expect(seen).toMatchObject({ method: 'PUT', body: 'plain words', headers: { 'content-type': 'text/plain' } });
  });

  it('PATCHes a form, urlencoded, a list giving the name once per value', async () => {
    const seen = await sent({ method: 'PATCH', options: { form: { q: 'a b&c', tag: ['x', 'y'], n: 3, yes: true } } });
    expect(seen.method).toBe('PATCH');
    expect(seen.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(seen.body).toBe('q=a+b%26c&tag=x&tag=y&n=3&yes=true');
  });

  it('POSTs multipart: text fields and a file part with its name and type', async () => {
    for (const bytes of [false, true]) {
      const seen = await sent({
        method: 'POST',
        bytes,
        options: { multipart: { note: ['first', 'two\nlines'], file: { data: 'file contents', filename: 'a.txt', contentType: 'text/plain' } } },
      });
      expect(partsOf(seen)).toEqual([
        'Content-Disposition: form-data; name="note"\r\n\r\nfirst',
        'Content-Disposition: form-data; name="note"\r\n\r\ntwo\r\nlines',
        'Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nfile contents',
      ]);
    }
  });

  it('takes a content-length the function sets only when it is the body length, and refuses more than one kind of body, as locally', async () => {
    const seen = await sent({ method: 'POST', options: { body: 'héllo', headers: { 'content-length': '6' } } });
    expect([seen.headers['content-length'], seen.body]).toEqual(['6', 'héllo']);
    const wrongLength = { method: 'POST', options: { body: 'x', headers: { 'content-length': '5' } } };
    const refusal = `POST http://127.0.0.1:${vendor.port}/in refused: the "content-length" header says "5" but the body is 1 bytes; remove the header (the host sets it) or make it match`;
    expect((await client.callTool('send', wrongLength)).content[0]!.text).toBe(`send failed: Error: ${refusal}`);
    expect(await engine.run('send', wrongLength, { caller: 'test' })).toMatchObject({ ok: false, error: { code: 'function_error', message: `Error: ${refusal}` } });
    const twoBodies = { method: 'POST', options: { json: {}, form: { a: 'b' } } };
    const mistake = 'TypeError: ctx.fetch: give one of json, body, form or multipart, not json and form';
    expect((await client.callTool('send', twoBodies)).content[0]!.text).toBe(`send failed: ${mistake}`);
    expect(await engine.run('send', twoBodies, { caller: 'test' })).toMatchObject({ ok: false, error: { code: 'function_error', message: mistake } });
  });
});
