import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND, startServe, type ServeProcess } from '../support/callable.ts';
import { seedMcpFunctions } from '../support/fixtures.ts';
import { connect } from '../support/mcpClients.ts';

let dataDir: string;
let engine: Engine;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'callable-profiles-'));
  engine = createEngine({ dataDir });
  await seedMcpFunctions(engine);
  engine.profiles.set({ name: 'writing', functions: ['echo', 'hidden', 'not_yet'], metaTools: false });
  engine.profiles.set({ name: 'agent', functions: ['echo', 'slow'], metaTools: true });
});

afterAll(() => {
  engine.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('profiles', () => {
  it('serve only their (enabled) functions over stdio', async () => {
    const client = await connect('2025-11-25', { transport: 'stdio', stdioArgs: ['--data-dir', dataDir, '--profile', 'writing'] });
    try {
      expect((await client.listTools()).map((t) => t.name)).toEqual(['echo']);
      await expect(client.callTool('chatty', {})).rejects.toThrow(/Unknown tool/);
      const changed = client.nextListChanged();
      await engine.saveFunction({ spec: { name: 'not_yet' }, source: 'export default () => "joined"' });
      expect((await changed).sort()).toEqual(['echo', 'not_yet']);
      await client.callTool('echo', { text: 'x' });
      await expect.poll(() => engine.runs.list({ functionName: 'echo', limit: 1 })[0]).toMatchObject({ profile: 'writing', transport: 'stdio' });
    } finally {
      await client.close();
    }
  });

  it('are served per HTTP path /mcp/<profile>', async () => {
    const token = await engine.mcpToken();
    const serve: ServeProcess = await startServe(dataDir);
    try {
      const client = await connect('2026-07-28', { transport: 'http', url: `${serve.url}/agent`, token });
      try {
        expect((await client.listTools()).map((t) => t.name).sort()).toEqual(['call_function', 'echo', 'find_functions', 'slow']);
      } finally {
        await client.close();
      }
    } finally {
      await serve.stop();
    }
  });

  it('with meta-tools, let a client find and call functions added after it listed the tools', async () => {
    const client = await connect('2026-07-28', { transport: 'stdio', stdioArgs: ['--data-dir', dataDir, '--profile', 'agent'] });
    try {
      await client.listTools();
      await engine.saveFunction({ spec: { name: 'late_arrival', description: 'Greets late' }, source: 'export default ({ who }) => "hello " + who' });
      engine.profiles.set({ name: 'agent', functions: ['echo', 'slow', 'late_arrival'], metaTools: true });
      const found = await client.callTool('find_functions', { query: 'greets' });
      expect(JSON.parse(found.content[0]!.text!)).toEqual([expect.objectContaining({ name: 'late_arrival', description: 'Greets late' })]);
      const called = await client.callTool('call_function', { name: 'late_arrival', arguments: { who: 'agent' } });
      expect(called.content[0]!.text).toBe('hello agent');
      const missing = await client.callTool('call_function', { name: 'nope' });
      expect(missing).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('find_functions') }] });
    } finally {
      await client.close();
    }
  });

  it('refuse to start on an unknown profile, saying so', async () => {
    const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'mcp', '--profile', 'nope', '--data-dir', dataDir], { stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(err).toContain('no profile named "nope"');
  });
});
