import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { MemorySecretStore } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';
import { vendorServer } from '../support/vendor.ts';

const SECRET = 'sk-live-THIS-IS-THE-SECRET-1234';
const secrets = new MemorySecretStore();
// Names the tests make resolve to chosen addresses (a rebinding attacker's DNS).
const dns: Record<string, string[]> = {
  'internal.example.com': ['10.0.0.5'],
  'metadata.example.com': ['169.254.169.254'],
  'mixed.example.com': ['93.184.215.14', '127.0.0.1'],
  'mapped.example.com': ['::ffff:127.0.0.1'],
  'rebind.example.com': ['127.0.0.1'],
};
const engine = testEngine({
  secrets,
  resolver: async (hostname) => {
    if (dns[hostname]) return dns[hostname].map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const { lookup } = await import('node:dns/promises');
    return lookup(hostname, { all: true });
  },
});

let port: number;
const slowClosed: number[] = [];
let seen: Awaited<ReturnType<typeof vendorServer>>['seen'];
let server: Awaited<ReturnType<typeof vendorServer>>['server'];

beforeAll(async () => {
  const vendor = await vendorServer((req, res) => {
    if (req.url.startsWith('/redirect')) {
      const to = new URL(req.url, 'http://x').searchParams.get('to')!;
      res.writeHead(302, { location: to }).end();
      return;
    }
    if (req.url === '/slow') {
      // Never answers: the test sees whether the run's cancellation closes the connection.
      res.on('close', () => slowClosed.push(Date.now()));
      return;
    }
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('x'.repeat(50_000));
      return;
    }
    if (req.url === '/gzip-bomb') {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(gzipSync(Buffer.alloc(20_000_000)));
      return;
    }
    if (req.url === '/conn') {
      // Which connection the request came on (the client's port): a kept connection keeps its port.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ clientPort: res.socket?.remotePort, authorization: req.headers.authorization ?? null }));
      return;
    }
    if (req.url === '/gzip') {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' });
      res.end(gzipSync(JSON.stringify({ zipped: true })));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'x-vendor': 'yes' });
    res.end(JSON.stringify({ method: req.method, url: req.url, authorization: req.headers.authorization ?? null, body: req.body }));
  });
  port = vendor.port;
  seen = vendor.seen;
  server = vendor.server;
  await engine.credentials.set({ name: 'vendor', hosts: [`127.0.0.1:${port}`], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, SECRET);
  await engine.credentials.set({ name: 'vendor_q', hosts: [`127.0.0.1:${port}`], placement: { kind: 'query', param: 'api_key' } }, SECRET);
  await engine.credentials.set({ name: 'elsewhere', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Key', template: '{secret}' } }, SECRET);
});

/** A function that fetches `url` with `init` and returns what it saw, or the error it got. */
async function fetcher(name: string, allowedHosts: string[], credentials: string[] = []) {
  await defineFunction(
    engine,
    { name, allowedHosts, credentials, inputSchema: { type: 'object', properties: { url: { type: 'string' }, init: { type: 'object' } } } },
    `export default async ({ url, init }, ctx) => {
      try {
        const res = await ctx.fetch(url, init);
        return { status: res.status, ok: res.ok, body: await res.text(), vendor: res.headers.get('x-vendor'), url: res.url, redirected: res.redirected };
      } catch (e) {
        return { error: e.message, code: e.code };
      }
    }`,
  );
}

describe('ctx.fetch to a real local vendor', () => {
  it('reaches a literal local address named in allowedHosts, with a Response-like result and a trace', async () => {
    await fetcher('plain', [`127.0.0.1:${port}`]);
    const result = await engine.run('plain', { url: `http://127.0.0.1:${port}/v1/echo?x=1`, init: { method: 'POST', json: { a: 1 } } }, { caller: 'test' });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject({ status: 200, ok: true, vendor: 'yes' });
    expect(JSON.parse((result.value as { body: string }).body)).toMatchObject({ method: 'POST', url: '/v1/echo?x=1', body: '{"a":1}' });
    expect(result.trace).toEqual([expect.objectContaining({ method: 'POST', url: `http://127.0.0.1:${port}/v1/echo?x=1`, status: 200, bytesOut: 7 })]);
    expect(result.trace[0]!.bytesIn).toBeGreaterThan(0);
  });

  it('injects a header credential host-side; the function never sees it and echoes are redacted', async () => {
    await fetcher('with_cred', [`127.0.0.1:${port}`], ['vendor']);
    const before = seen.length;
    const result = await engine.run('with_cred', { url: `http://127.0.0.1:${port}/secure`, init: { credential: 'vendor' } }, { caller: 'test' });
    expect(seen[before]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    const text = JSON.stringify(result);
    expect(text).not.toContain(SECRET);
    expect(text).toContain('[redacted:vendor]');
    expect(result.trace[0]).toMatchObject({ credential: 'vendor', status: 200 });
    const audit = engine.runs.list({ functionName: 'with_cred' });
    expect(JSON.stringify(audit)).not.toContain(SECRET);
  });

  it('injects a query credential, and keeps it out of the trace', async () => {
    await fetcher('with_query', [`127.0.0.1:${port}`], ['vendor_q']);
    const before = seen.length;
    const result = await engine.run('with_query', { url: `http://127.0.0.1:${port}/q?text=hi`, init: { credential: 'vendor_q' } }, { caller: 'test' });
    expect(seen[before]!.url).toBe(`/q?text=hi&api_key=${SECRET}`);
    expect(result.trace[0]!.url).toBe(`http://127.0.0.1:${port}/q?text=hi`);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('refuses a credential the function did not declare', async () => {
    await fetcher('undeclared', [`127.0.0.1:${port}`], []);
    const before = seen.length;
    const result = await engine.run('undeclared', { url: `http://127.0.0.1:${port}/`, init: { credential: 'vendor' } }, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { code: 'credential_refused' } });
    expect(seen.length).toBe(before);
  });

  it("refuses to send a credential to a host outside the credential's hosts", async () => {
    await fetcher('wrong_host', [`127.0.0.1:${port}`], ['elsewhere']);
    const before = seen.length;
    const result = await engine.run('wrong_host', { url: `http://127.0.0.1:${port}/`, init: { credential: 'elsewhere' } }, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { code: 'egress_refused' } });
    expect((result as { value: { error: string } }).value.error).toContain('may only be sent to api.example.com');
    expect(seen.length).toBe(before);
  });

  it('decompresses gzip, and bounds the decompressed size', async () => {
    await fetcher('zipped', [`127.0.0.1:${port}`]);
    const ok = await engine.run('zipped', { url: `http://127.0.0.1:${port}/gzip` }, { caller: 'test' });
    expect(ok).toMatchObject({ ok: true, value: { body: '{"zipped":true}' } });
    const bomb = await engine.run('zipped', { url: `http://127.0.0.1:${port}/gzip-bomb` }, { caller: 'test' });
    expect(bomb).toMatchObject({ ok: false, error: { code: 'response_too_large' } });
  });

  it('ends the run when a response is over the response body limit', async () => {
    await defineFunction(
      engine,
      { name: 'big_body', allowedHosts: [`127.0.0.1:${port}`], limits: { responseBytes: 10_000 } },
      `export default async (a, ctx) => { try { return (await (await ctx.fetch('http://127.0.0.1:${port}/big')).text()).length; } catch (e) { return 'caught: ' + e.message; } }`,
    );
    const result = await engine.run('big_body', {}, { caller: 'test' });
    expect(result).toMatchObject({ ok: false, error: { code: 'response_too_large' } });
    expect(result.ok ? '' : result.error.message).toContain('responseBytes');
  });
});

describe('kept connections', () => {
  const clientPort = (result: Awaited<ReturnType<typeof engine.run>>): number => {
    if (!result.ok) throw new Error(result.error.message);
    return (JSON.parse((result.value as { body: string }).body) as { clientPort: number }).clientPort;
  };

  it('sends the next request to the same checked address on the connection the last one used, from any run', async () => {
    await fetcher('kept_a', [`127.0.0.1:${port}`]);
    await fetcher('kept_b', [`127.0.0.1:${port}`]);
    const first = clientPort(await engine.run('kept_a', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' }));
    const again = clientPort(await engine.run('kept_a', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' }));
    const other = clientPort(await engine.run('kept_b', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' }));
    expect([again, other]).toEqual([first, first]);
  });

  it('lends a kept connection to no request the egress check refuses: another allow-list, a name that resolves to its address', async () => {
    await fetcher('kept_open', [`127.0.0.1:${port}`]);
    await engine.run('kept_open', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' });
    const before = seen.length;
    await fetcher('kept_not_allowed', [`127.0.0.2:${port}`]);
    const notAllowed = await engine.run('kept_not_allowed', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' });
    expect(notAllowed).toMatchObject({ ok: true, value: { code: 'egress_refused' } });
    await fetcher('kept_rebound', [`rebind.example.com:${port}`]);
    const rebound = await engine.run('kept_rebound', { url: `https://rebind.example.com:${port}/conn` }, { caller: 'test' });
    expect(rebound).toMatchObject({ ok: true, value: { code: 'egress_refused', error: expect.stringMatching(/rebind\.example\.com resolves to a loopback address/) } });
    expect(seen.length).toBe(before);
  });

  it('keeps a connection that carried a credential for requests carrying the same one only', async () => {
    await fetcher('kept_cred', [`127.0.0.1:${port}`], ['vendor']);
    const withCredential = await engine.run('kept_cred', { url: `http://127.0.0.1:${port}/conn`, init: { credential: 'vendor' } }, { caller: 'test' });
    const carried = clientPort(withCredential);
    const without = await engine.run('kept_cred', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' });
    expect(clientPort(without)).not.toBe(carried);
    expect(JSON.parse((without as { value: { body: string } }).value.body)).toMatchObject({ authorization: null });
    const withAgain = await engine.run('kept_cred', { url: `http://127.0.0.1:${port}/conn`, init: { credential: 'vendor' } }, { caller: 'test' });
    expect(clientPort(withAgain)).toBe(carried);
  });

  it('sends the next request on a new connection once the vendor closed the kept one', async () => {
    await fetcher('kept_closed', [`127.0.0.1:${port}`]);
    const first = clientPort(await engine.run('kept_closed', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' }));
    // The vendor drops its idle connections (as a server whose keep-alive timeout passed does).
    server.closeIdleConnections();
    const result = await engine.run('kept_closed', { url: `http://127.0.0.1:${port}/conn` }, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { status: 200 } });
    expect(clientPort(result)).not.toBe(first);
  });
});

describe('cancellation', () => {
  it('stops the run and closes its in-flight request', async () => {
    await fetcher('slow_vendor', [`127.0.0.1:${port}`]);
    const controller = new AbortController();
    const pending = engine.run('slow_vendor', { url: `http://127.0.0.1:${port}/slow` }, { caller: 'test', signal: controller.signal });
    await expect.poll(() => seen.some((r) => r.url === '/slow')).toBe(true);
    controller.abort();
    expect(await pending).toMatchObject({ ok: false, error: { code: 'cancelled' } });
    await expect.poll(() => slowClosed.length).toBe(1);
  });
});

describe('refused egress', () => {
  // [label, allowedHosts, url, what the function is told, what the trace keeps (if different: the resolved address)]
  const refusedCases: Array<[string, string[], string, RegExp, RegExp?]> = [
    ['a host not on the allow-list', ['api.example.com'], 'https://evil.example.net/', /not an allowed host/],
    ['no network at all for an empty allow-list', [], 'https://api.example.com/', /no allowedHosts/],
    ['plain http to a host name', ['api.example.com'], 'http://api.example.com/', /plain http/],
    ['a hostname that resolves to 127.0.0.1', ['localhost:PORT'], 'http://localhost:PORT/', /plain http|loopback/],
    ['a hostname that resolves to 127.0.0.1 over https', ['localhost:PORT'], 'https://localhost:PORT/', /localhost resolves to a loopback address/, /resolves to 127\.0\.0\.1 is a loopback address/],
    ['a name that resolves to a private address', ['internal.example.com'], 'https://internal.example.com/', /internal\.example\.com resolves to a private-network address/, /10\.0\.0\.5 is a private-network address/],
    ['a name that resolves to the cloud metadata address', ['metadata.example.com'], 'https://metadata.example.com/', /cloud metadata/],
    ['a name with one public and one loopback address', ['mixed.example.com'], 'https://mixed.example.com/', /mixed\.example\.com resolves to a loopback/, /127\.0\.0\.1 is a loopback/],
    ['a name that resolves to IPv4-mapped IPv6', ['mapped.example.com'], 'https://mapped.example.com/', /IPv4-mapped/],
    ['an IPv4-mapped IPv6 literal of loopback', ['[::ffff:127.0.0.1]:PORT'], 'http://[::ffff:127.0.0.1]:PORT/', /IPv4-mapped/],
    ['the metadata literal even when named', ['169.254.169.254'], 'http://169.254.169.254/latest/meta-data', /cloud metadata/],
    ['an unspecified address', ['0.0.0.0:PORT'], 'http://0.0.0.0:PORT/', /unspecified/],
    ['a loopback literal that is not named', ['127.0.0.1:1'], 'http://127.0.0.2:PORT/', /not an allowed host/],
    ['a CGNAT literal', ['100.64.0.1'], 'https://100.64.0.1/', /carrier-grade NAT/],
    ['a userinfo URL', ['127.0.0.1:PORT'], 'http://user:pw@127.0.0.1:PORT/', /user name or password/],
    ['a non-http scheme', ['127.0.0.1:PORT'], 'file:///etc/passwd', /only https/],
  ];
  for (const [label, hosts, rawUrl, reason, traced = reason] of refusedCases) {
    it(`refuses ${label}`, async () => {
      const sub = (s: string) => s.replace(/PORT/g, String(port));
      const name = `refuse_${label.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`.slice(0, 60);
      await fetcher(name, hosts.map(sub));
      const before = seen.length;
      const result = await engine.run(name, { url: sub(rawUrl) }, { caller: 'test' });
      expect(result).toMatchObject({ ok: true, value: { code: 'egress_refused' } });
      expect((result as { value: { error: string } }).value.error).toMatch(reason);
      expect(result.trace).toEqual([expect.objectContaining({ refused: expect.stringMatching(traced) })]);
      expect(seen.length).toBe(before);
    });
  }

  it('refuses a redirect to a refused address, hop by hop', async () => {
    await fetcher('redirected', [`127.0.0.1:${port}`, 'internal.example.com']);
    const result = await engine.run('redirected', { url: `http://127.0.0.1:${port}/redirect?to=${encodeURIComponent('https://internal.example.com/admin')}` }, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { code: 'egress_refused' } });
    expect(result.trace).toEqual([
      expect.objectContaining({ status: 302 }),
      expect.objectContaining({ url: 'https://internal.example.com/admin', redirectFrom: `http://127.0.0.1:${port}/redirect?to=https%3A%2F%2Finternal.example.com%2Fadmin`, refused: expect.stringMatching(/private-network/) }),
    ]);
  });

  it('follows an allowed redirect', async () => {
    await fetcher('redirect_ok', [`127.0.0.1:${port}`]);
    const result = await engine.run('redirect_ok', { url: `http://127.0.0.1:${port}/redirect?to=/final` }, { caller: 'test' });
    expect(result).toMatchObject({ ok: true, value: { status: 200, redirected: true, url: `http://127.0.0.1:${port}/final` } });
    expect(result.trace).toHaveLength(2);
  });

  for (const header of ['Host', 'Connection', 'Transfer-Encoding', 'Proxy-Authorization']) {
    it(`refuses a ${header} header from the function`, async () => {
      await fetcher('bad_header', [`127.0.0.1:${port}`]);
      const before = seen.length;
      const result = await engine.run('bad_header', { url: `http://127.0.0.1:${port}/`, init: { headers: { [header]: 'evil' } } }, { caller: 'test' });
      expect(result).toMatchObject({ ok: true, value: { code: 'egress_refused' } });
      expect(seen.length).toBe(before);
    });
  }

  it('accepts a Content-Length from the function only when it is exactly the body length, and the host writes its own', async () => {
    await fetcher('own_length', [`127.0.0.1:${port}`]);
    const before = seen.length;
    const body = 'héllo'; // 6 bytes, 5 characters
    const exact = await engine.run('own_length', { url: `http://127.0.0.1:${port}/len`, init: { method: 'POST', body, headers: { 'Content-Length': '6' } } }, { caller: 'test' });
    expect(exact).toMatchObject({ ok: true, value: { status: 200 } });
    expect(seen[before]!.headers['content-length']).toBe('6');
    expect(seen[before]!.body).toBe(body);

    const wrong = await engine.run('own_length', { url: `http://127.0.0.1:${port}/len`, init: { method: 'POST', body, headers: { 'Content-Length': '5' } } }, { caller: 'test' });
    expect(wrong).toMatchObject({
      ok: true,
      value: { code: 'egress_refused', error: `POST http://127.0.0.1:${port}/len refused: the "content-length" header says "5" but the body is 6 bytes; remove the header (the host sets it) or make it match` },
    });
    expect(seen.length).toBe(before + 1);
  });
});
