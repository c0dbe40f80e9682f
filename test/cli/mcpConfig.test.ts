import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src-main/engine/index.ts';
import { McpHttpHost } from '../../src-main/mcp/httpHost.ts';
import { createStudioApi } from '../../src-main/engineProcess/studioApi.ts';
import { CALLABLE_BIN, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { connect, type Era } from '../support/mcpClients.ts';
import { scratch } from '../support/scratch.ts';
import { vendorServer } from '../support/vendor.ts';

// The stdio configs the CLI (`callable mcp-config`) and the studio print, launched by real MCP clients
// the way an IDE does: the SDK's default environment (no D-Bus address) and a PATH whose first node
// is old (/usr/bin/node when it is older than 24) or absent. Real keychain, vendor stand-in on 127.0.0.1.

const SECRET = `cfg-${Math.random().toString(36).slice(2)}-secret`;
const s = scratch();
let vendor: Awaited<ReturnType<typeof vendorServer>>;
const originalPath = process.env.PATH;

beforeAll(async () => {
  vendor = await vendorServer((req, res) => res.end(JSON.stringify({ saw: req.headers['x-api-key'] ?? null })));
});
afterEach(() => {
  process.env.PATH = originalPath;
});

function oldNodeDir(): string | undefined {
  const r = spawnSync('/usr/bin/node', ['-p', 'process.versions.node'], { encoding: 'utf8' });
  return r.status === 0 && Number(r.stdout.split('.')[0]) < 24 ? '/usr/bin' : undefined;
}

/** A data folder with the credential vault (secret in the keychain) granted to `whoami`, which sends it to the stand-in. */
async function folder(): Promise<string> {
  const data = s.dir('callable-cfg-');
  const src = s.dir('callable-cfg-src-');
  mkdirSync(join(src, 'whoami'));
  writeFileSync(join(src, 'whoami/function.json'), JSON.stringify({ name: 'whoami', description: 'x', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: ['vault'] }));
  writeFileSync(join(src, 'whoami/index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/', { credential: 'vault' })).json();`);
  expect((await cli(['import', src, '--data-dir', data])).code).toBe(0);
  const set = await cli(['credentials', 'set', 'vault', '--host', `127.0.0.1:${vendor.port}`, '--header', 'X-Api-Key', '--template', '{secret}', '--grant', 'whoami', '--data-dir', data], { stdin: SECRET });
  expect(set.code, set.stderr).toBe(0);
  return data;
}

/** Launches `config` as a client would, with `path` as the PATH the IDE gives it; tools/list and a call that reads the credential. */
async function launchAndCall(era: Era, config: { command: string; args: string[]; env?: Record<string, string> }, path: string): Promise<void> {
  // The SDK builds the child's environment from this process's PATH (and HOME, USER…), plus the config's env.
  process.env.PATH = path;
  const client = await connect(era, { transport: 'stdio', launch: config });
  process.env.PATH = originalPath;
  try {
    expect((await client.listTools()).map((t) => t.name)).toEqual(['whoami']);
    const before = vendor.seen.length;
    const result = await client.callTool('whoami', {});
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expect(vendor.seen.length).toBe(before + 1);
    expect(vendor.seen.at(-1)!.headers['x-api-key']).toBe(SECRET);
  } finally {
    await client.close();
  }
}

describe('printed MCP client configs', () => {
  const old = oldNodeDir();
  const paths: Array<[string, string | undefined]> = [
    [`an old node first on PATH (${old ?? 'skipped: no Node older than 24 at /usr/bin/node'})`, old === undefined ? undefined : `${old}:${originalPath}`],
    ['no node on PATH', '/nonexistent-bin'],
  ];

  for (const [label, path] of paths) {
    it.skipIf(path === undefined)(`callable mcp-config: the printed config works from a client with ${label}`, async () => {
      const data = await folder();
      const printed = await cli(['mcp-config', '--json', '--data-dir', data]);
      expect(printed.code, printed.stderr).toBe(0);
      const config = JSON.parse(printed.stdout) as { command: string; args: string[]; env: Record<string, string>; claudeDesktop: string; vscode: string; claudeCode: string };
      expect(config.command).toBe(process.execPath);
      expect(config.args).toEqual([CALLABLE_BIN, 'mcp', '--data-dir', data]);
      expect(config.env.DBUS_SESSION_BUS_ADDRESS).toBe(process.env.DBUS_SESSION_BUS_ADDRESS);
      expect(printed.stdout).not.toContain(SECRET);
      // What the user pastes into Claude Desktop is the same launch.
      const desktop = (JSON.parse(config.claudeDesktop) as { mcpServers: { callable: { command: string; args: string[]; env: Record<string, string> } } }).mcpServers.callable;
      expect(desktop).toEqual({ command: config.command, args: config.args, env: config.env });
      expect(config.claudeCode).toContain(`-e DBUS_SESSION_BUS_ADDRESS=`);
      await launchAndCall('2025-11-25', desktop, path!);
      const vscode = (JSON.parse(config.vscode) as { servers: { callable: { command: string; args: string[]; env: Record<string, string> } } }).servers.callable;
      await launchAndCall('2026-07-28', vscode, path!);
    }, 60_000);
  }

  it('the studio\'s MCP page: the printed Cursor config works from a client with no node on PATH', async () => {
    const data = await folder();
    const engine = s.engine(createEngine({ dataDir: data }));
    const api = createStudioApi({ engine, mcp: new McpHttpHost(engine, { port: 0 }), resourcesDir: join(REPO, 'resources'), callableCommand: CALLABLE_BIN, diagnostic: () => {} });
    try {
      const configs = (await api.dispatch('mcp:configs', {})) as { ok: true; value: { stdio: { cursor: string; claudeCode: string } } };
      const cursor = (JSON.parse(configs.value.stdio.cursor) as { mcpServers: { callable: { command: string; args: string[]; env: Record<string, string> } } }).mcpServers.callable;
      expect(cursor.command).toBe(process.execPath);
      expect(cursor.env.DBUS_SESSION_BUS_ADDRESS).toBe(process.env.DBUS_SESSION_BUS_ADDRESS);
      expect(configs.value.stdio.claudeCode).toMatch(/^claude mcp add callable -e DBUS_SESSION_BUS_ADDRESS=\S+ .*-- \S+ \S+callable\.js mcp --data-dir /);
      await launchAndCall('2025-11-25', cursor, '/nonexistent-bin');
    } finally {
      api.close();
    }
  }, 60_000);
});
