// The bench's hop floor (issue #25) as a client sees it: the plain SDK server in stdio-hop mode
// answers echo like the ideal server, its calls carried to one child process and back and told
// apart by id when many are in flight; in fetch-hop mode, fetch_one's request is made by the server
// for the child's function. No timing is asserted: the bench measures, this checks the answers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, it } from 'vitest';

const PLAIN_SERVER = join(import.meta.dirname, 'plainServer.ts');
const REPO = join(import.meta.dirname, '../..');
const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0)) await close();
});

async function connect(mode: string): Promise<{ client: Client; pid: number }> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [PLAIN_SERVER, mode], stderr: 'pipe', cwd: REPO });
  const client = new Client({ name: 'hop-test', version: '1.0.0' });
  await client.connect(transport);
  opened.push(() => client.close());
  return { client, pid: transport.pid! };
}

const text = (result: unknown): string => (result as { content: Array<{ text: string }> }).content[0]!.text;

describe('the bench hop floor', () => {
  it('answers 32 echo calls in flight, each with its own answer, through one child process', async () => {
    const { client } = await connect('stdio-hop');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
    const answers = await Promise.all(Array.from({ length: 32 }, (_, n) => client.callTool({ name: 'echo', arguments: { text: `t${n}`, n } })));
    expect(answers.map((a) => JSON.parse(text(a)) as unknown)).toEqual(Array.from({ length: 32 }, (_, n) => ({ echo: `t${n}`, n: n * 2 })));
    const invalid = await client.callTool({ name: 'echo', arguments: { text: 'x' } });
    expect(invalid.isError).toBe(true);
  });

  it("makes fetch_one's request in the server for the child's function, which answers status and length", async () => {
    const vendor = createServer((req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(`hello from ${req.url}`));
    await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
    opened.push(() => new Promise((resolve) => vendor.close(() => resolve())));
    const url = `http://127.0.0.1:${(vendor.address() as AddressInfo).port}/a`;
    const { client } = await connect('fetch-hop');
    const answers = await Promise.all([url, `${url}bc`].map((u) => client.callTool({ name: 'fetch_one', arguments: { url: u } })));
    expect(answers.map((a) => JSON.parse(text(a)) as unknown)).toEqual([
      { status: 200, length: 'hello from /a'.length },
      { status: 200, length: 'hello from /abc'.length },
    ]);
  });
});
