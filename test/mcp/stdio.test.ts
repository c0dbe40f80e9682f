import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';

let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-stdio-'));
  const engine = createEngine({ dataDir });
  await seedMcpFunctions(engine);
  await engine.saveFunction({ spec: { name: 'spin', timeoutMs: 300 }, source: 'export default () => { for (;;) {} }' });
  await engine.saveFunction({ spec: { name: 'loaded_at' }, source: 'const loadedAt = Date.now(); export default () => ({ loadedAt })' });
  // Served alone: what a server readies first does not depend on where the name sorts among the others.
  engine.profiles.set({ name: 'first_call', functions: ['loaded_at'], metaTools: false });
  await engine.credentials.set({ name: 'vault', hosts: ['api.example.com'], placement: { kind: 'header', header: 'Authorization', template: 'Bearer {secret}' } }, 'kept-in-the-keychain');
  await engine.saveFunction(
    { spec: { name: 'needs_secret', allowedHosts: ['api.example.com'], credentials: ['vault'] }, source: "export default async (a, ctx) => (await ctx.fetch('https://api.example.com/', { credential: 'vault' })).status" },
  );
  engine.credentials.grant('vault', 'needs_secret');
  engine.close();
});

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Until `server` has a child process (its sandbox host) whose CPU time has not moved for 300 ms (elsewhere than Linux, which has /proc: 3 s). */
async function hostSettled(server: number): Promise<void> {
  if (process.platform !== 'linux') return new Promise((r) => setTimeout(r, 3000));
  const cpu = (pid: string): number => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  let last = '';
  for (let i = 0; i < 200; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const hosts = readFileSync(`/proc/${server}/task/${server}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    const now = hosts.map((pid) => `${pid}:${cpu(pid)}`).join(' ');
    if (hosts.length > 0 && now === last) return;
    last = now;
  }
  throw new Error('the sandbox host of callable mcp never went idle');
}

/** Talks raw JSON-RPC lines to `callable mcp`, to send what real clients never would. */
function startRaw(env: NodeJS.ProcessEnv = process.env, args: string[] = []) {
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'mcp', '--data-dir', dataDir, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const send = (line: string): void => void child.stdin.write(`${line}\n`);
  const reply = async (id: number): Promise<Record<string, unknown>> => {
    for (let i = 0; i < 200; i++) {
      const found = stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((m) => m.id === id);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no reply ${id}; stdout:\n${stdout}\nstderr:\n${stderr}`);
  };
  return { child, send, reply, out: () => stdout, err: () => stderr };
}

describe('callable mcp over stdio', () => {
  it('survives malformed messages and a runaway function, keeps stdout pure protocol, and exits when stdin closes', async () => {
    const s = startRaw();
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    expect(await s.reply(1)).toMatchObject({ result: { serverInfo: { name: 'callable-studio' } } });
    s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    s.send('this is not json');
    s.send('{"jsonrpc":"2.0","id":2,"method":');
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'spin', arguments: {} } }));
    expect(await s.reply(3)).toMatchObject({ result: { isError: true, content: [{ text: expect.stringContaining('timeoutMs') }] } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { text: 'alive' } } }));
    expect(await s.reply(4)).toMatchObject({ result: { structuredContent: { echo: 'alive', n: 2 } } });
    for (const line of s.out().split('\n').filter(Boolean)) expect(JSON.parse(line)).toHaveProperty('jsonrpc', '2.0');
    s.child.stdin.end();
    const code = await new Promise<number | null>((resolve) => s.child.on('exit', resolve));
    expect(code).toBe(0);
    expect(s.err()).toContain('serving all enabled functions');
  });

  it("answers a malformed tools/call or an unknown tool with invalid params, and a function's own content, its failure and a JSON result as results", async () => {
    const s = startRaw();
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    await s.reply(1);
    s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} }));
    expect(await s.reply(2)).toMatchObject({ error: { code: -32602, message: expect.stringContaining('Invalid tools/call request') } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: 'text' } }));
    expect(await s.reply(3)).toMatchObject({ error: { code: -32602, message: expect.stringContaining('arguments') } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }));
    expect(await s.reply(4)).toMatchObject({ error: { code: -32602, message: 'Unknown tool: no_such_tool' } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'picture', arguments: {} } }));
    expect(await s.reply(5)).toMatchObject({ result: { content: [{ type: 'image', mimeType: 'image/png', data: 'iVBORw==' }] } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'broken', arguments: {} } }));
    expect(await s.reply(6)).toMatchObject({ result: { isError: true, content: [{ type: 'text', text: expect.stringContaining('vendor said no') }] } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'fine' } } }));
    expect(await s.reply(7)).toEqual({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: '{"echo":"fine","n":2}' }], structuredContent: { echo: 'fine', n: 2 } } });
    s.child.stdin.end();
    await new Promise((resolve) => s.child.on('exit', resolve));
  });

  it('answers with an error result, and keeps serving, when the keychain is gone', async () => {
    const s = startRaw({ ...process.env, DBUS_SESSION_BUS_ADDRESS: 'unix:path=/nonexistent/bus' });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    await s.reply(1);
    s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'needs_secret', arguments: {} } }));
    expect(await s.reply(2)).toMatchObject({ result: { isError: true, content: [{ text: expect.stringMatching(/vault/) }] } });
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } }));
    expect(await s.reply(3)).toMatchObject({ result: { structuredContent: { echo: 'still here', n: 2 } } });
    s.child.stdin.end();
    expect(await new Promise<number | null>((resolve) => s.child.on('exit', resolve))).toBe(0);
  });

  it('readies the functions it serves while the client connects: a first call finds its module already evaluated, without a tools/list', async () => {
    const s = startRaw(process.env, ['--profile', 'first_call']);
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
    await s.reply(1);
    s.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    // Nothing asks the server for anything meanwhile: wait until its sandbox host has started and gone idle.
    await hostSettled(s.child.pid!);
    const calledAt = Date.now();
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'loaded_at', arguments: {} } }));
    const reply = (await s.reply(2)) as { result: { content: Array<{ text: string }> } };
    expect((JSON.parse(reply.result.content[0]!.text) as { loadedAt: number }).loadedAt).toBeLessThan(calledAt);
    s.child.stdin.end();
    expect(await new Promise<number | null>((resolve) => s.child.on('exit', resolve))).toBe(0);
  });
});
