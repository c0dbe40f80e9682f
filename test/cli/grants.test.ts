import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { McpHttpHost } from '../../src-main/mcp/httpHost.ts';
import { createStudioApi } from '../../src-main/engineProcess/studioApi.ts';
import { CALLABLE_BIN, REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { connect } from '../support/mcpClients.ts';
import { scratch } from '../support/scratch.ts';
import { vendorServer } from '../support/vendor.ts';

// Granting a credential is the user's decision: a function that lists one gets nothing until
// "callable credentials grant NAME FUNCTION". Real keychain (test/setup/keychain.ts), real vendor socket.
const SECRET = `grant-${Math.random().toString(36).slice(2)}-secret`;
const s = scratch();
let vendor: Awaited<ReturnType<typeof vendorServer>>;

beforeAll(async () => {
  vendor = await vendorServer((req, res) => res.end(JSON.stringify({ saw: req.headers['x-api-key'] ?? null })));
});

/** A bundle folder with one function `name` that sends credential `credential` to the vendor. */
function bundle(name: string, credential: string): string {
  const dir = s.dir('callable-bundle-');
  mkdirSync(join(dir, name));
  writeFileSync(join(dir, name, 'function.json'), JSON.stringify({ name, description: 'x', allowedHosts: [`127.0.0.1:${vendor.port}`], credentials: [credential] }));
  writeFileSync(join(dir, name, 'index.js'), `export default async (a, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/', { credential: '${credential}' })).json();`);
  return dir;
}

/** A data folder holding the credential `vault` (its secret in the keychain). */
async function folderWithCredential(): Promise<string> {
  const data = s.dir('callable-grants-');
  const set = await cli(['credentials', 'set', 'vault', '--host', `127.0.0.1:${vendor.port}`, '--header', 'X-Api-Key', '--template', '{secret}', '--data-dir', data], { stdin: SECRET });
  expect(set.code, set.stderr).toBe(0);
  return data;
}

describe('credential grants', () => {
  it('import lists the credential a function asks for and has not been granted; its run sends nothing and names the grant command', async () => {
    const data = await folderWithCredential();
    const imported = await cli(['import', bundle('exfil', 'vault'), '--data-dir', data]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('imported exfil (revision 1)');
    expect(imported.stdout).toContain('exfil asks for credential vault, not granted (nothing is sent until you grant it): callable credentials grant vault exfil');

    const before = vendor.seen.length;
    const run = await cli(['run', 'exfil', '--data-dir', data]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('function "exfil" has not been granted credential "vault", so nothing was sent');
    expect(run.stderr).toContain('callable credentials grant vault exfil');
    expect(vendor.seen.length).toBe(before);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });

  it('an MCP call of an imported function that was not granted the credential sends nothing upstream', async () => {
    const data = await folderWithCredential();
    expect((await cli(['import', bundle('mcp_exfil', 'vault'), '--data-dir', data])).code).toBe(0);
    const before = vendor.seen.length;
    const client = await connect('2025-11-25', { transport: 'stdio', stdioArgs: ['--data-dir', data] });
    try {
      const result = await client.callTool('mcp_exfil', {});
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toContain('callable credentials grant vault mcp_exfil');
    } finally {
      await client.close();
    }
    expect(vendor.seen.length).toBe(before);
  });

  it('"credentials grant" lets the function use it, "credentials list" shows the grant, and "credentials revoke" takes it back', async () => {
    const data = await folderWithCredential();
    expect((await cli(['import', bundle('granted_fn', 'vault'), '--data-dir', data])).code).toBe(0);

    const grant = await cli(['credentials', 'grant', 'vault', 'granted_fn', '--data-dir', data]);
    expect(grant).toMatchObject({ code: 0, stdout: 'granted credential vault to granted_fn\n' });
    expect((await cli(['credentials', 'grant', 'vault', 'granted_fn', '--data-dir', data])).stdout).toBe('already granted credential vault to granted_fn\n');
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toContain('(secret set)  granted to granted_fn');

    const run = await cli(['run', 'granted_fn', '--data-dir', data]);
    expect(run.code, run.stderr).toBe(0);
    expect(vendor.seen.at(-1)!.headers['x-api-key']).toBe(SECRET);
    expect(JSON.parse(run.stdout)).toEqual({ saw: '[redacted:vault]' });
    // Importing it again (a new revision) does not ask again: the grant belongs to the function.
    expect((await cli(['import', bundle('granted_fn', 'vault'), '--data-dir', data])).stdout).not.toContain('not granted');

    const revoke = await cli(['credentials', 'revoke', 'vault', 'granted_fn', '--data-dir', data]);
    expect(revoke).toMatchObject({ code: 0, stdout: 'revoked credential vault from granted_fn: its runs are refused it from now on\n' });
    const before = vendor.seen.length;
    const refused = await cli(['run', 'granted_fn', '--data-dir', data]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('callable credentials grant vault granted_fn');
    expect(vendor.seen.length).toBe(before);
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toContain('(secret set)  granted to no function');
  });

  it('refuses a grant or revoke that cannot be done, in one line, with exit 2', async () => {
    const data = await folderWithCredential();
    expect((await cli(['import', bundle('lister', 'vault'), '--data-dir', data])).code).toBe(0);
    const cases: Array<[string[], string]> = [
      [['grant', 'vault', 'nope'], 'no function named "nope"'],
      [['grant', 'other', 'lister'], 'function "lister" does not list credential "other" in its "credentials" (it lists vault); add it there first, then grant it'],
      [['revoke', 'vault', 'lister'], 'function "lister" has not been granted credential "vault"; nothing to revoke'],
      [['grant', 'vault'], 'expected 2 argument(s), got 1'],
    ];
    for (const [args, message] of cases) {
      const out = await cli(['credentials', ...args, '--data-dir', data]);
      expect(out.code, args.join(' ')).toBe(2);
      expect(out.stderr).toContain(message);
      expect(out.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('"credentials set" names the functions that list the credential and are not granted it; --grant grants them, and a --grant that cannot be done saves nothing', async () => {
    const data = s.dir('callable-grants-');
    expect((await cli(['import', bundle('first_user', 'vault'), '--data-dir', data])).code).toBe(0);
    expect((await cli(['import', bundle('second_user', 'vault'), '--data-dir', data])).code).toBe(0);
    expect((await cli(['import', bundle('bystander', 'other'), '--data-dir', data])).code).toBe(0);
    const setArgs = ['credentials', 'set', 'vault', '--host', `127.0.0.1:${vendor.port}`, '--header', 'X-Api-Key', '--template', '{secret}', '--data-dir', data];

    const refused = await cli([...setArgs, '--grant', 'bystander'], { stdin: SECRET });
    expect(refused.code).toBe(2);
    expect(refused.stderr.split('\n')[0]).toBe('callable credentials: --grant bystander: function "bystander" does not list credential "vault" in its "credentials" (it lists other); nothing was saved');
    expect((await cli(['credentials', 'list', '--data-dir', data])).stdout).toMatch(/^No credentials yet/);

    const set = await cli([...setArgs, '--grant', 'first_user'], { stdin: SECRET });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe(
      'saved credential vault (secret in the OS keychain)\n' +
        'granted credential vault to first_user\n' +
        'second_user lists credential vault and has not been granted it (nothing is sent until you grant it): callable credentials grant vault second_user  (or add --grant second_user to credentials set)\n',
    );
    const run = await cli(['run', 'first_user', '--data-dir', data]);
    expect(run.code, run.stderr).toBe(0);
    expect(vendor.seen.at(-1)!.headers['x-api-key']).toBe(SECRET);
    expect((await cli(['run', 'second_user', '--data-dir', data])).stderr).toContain('has not been granted credential "vault"');
  });

  it('a grant may come before the credential exists, and says how to create it', async () => {
    const data = s.dir('callable-grants-');
    expect((await cli(['import', bundle('early', 'later_key'), '--data-dir', data])).code).toBe(0);
    const grant = await cli(['credentials', 'grant', 'later_key', 'early', '--data-dir', data]);
    expect(grant.code).toBe(0);
    expect(grant.stdout).toContain('credential later_key does not exist yet; create it: callable credentials set later_key --host HOST');
  });

  it('"credentials rm" also removes the grants, and a function deleted and imported again must be granted again', async () => {
    const data = await folderWithCredential();
    expect((await cli(['import', bundle('doomed', 'vault'), '--data-dir', data])).code).toBe(0);
    expect((await cli(['credentials', 'grant', 'vault', 'doomed', '--data-dir', data])).code).toBe(0);
    expect((await cli(['rm', 'doomed', '--data-dir', data])).code).toBe(0);
    expect((await cli(['import', bundle('doomed', 'vault'), '--data-dir', data])).stdout).toContain('callable credentials grant vault doomed');
    expect((await cli(['credentials', 'grant', 'vault', 'doomed', '--data-dir', data])).code).toBe(0);
    expect((await cli(['credentials', 'rm', 'vault', '--data-dir', data])).stdout).toBe('deleted credential vault (and its grants to doomed)\n');
  });

  it('"callable new" from a template that uses a credential prints the grant command', async () => {
    const data = s.dir('callable-grants-');
    const created = await cli(['new', 'my_translate', '--template', 'deepl_translate', '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('my_translate asks for credential deepl, not granted (nothing is sent until you grant it): callable credentials grant deepl my_translate');
  });
});

describe('a data folder from before grants existed', () => {
  it('keeps working: each function is granted the existing credentials it listed; later imports are not', async () => {
    const data = s.dir('callable-upgrade-');
    const old = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    await old.credentials.set({ name: 'vault', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, SECRET);
    await old.saveFunction({ spec: { name: 'old_user', allowedHosts: ['api.example.com'], credentials: ['vault', 'never_created'] }, source: 'export default () => 1' });
    await old.saveFunction({ spec: { name: 'no_creds' }, source: 'export default () => 1' });
    // As the release before grants left it: no grants table, schema 2.
    old.database.exec('DROP TABLE credential_grants');
    old.database.pragma('user_version = 2');
    old.close();

    const upgraded = s.engine(createEngine({ dataDir: data, secrets: new MemorySecretStore() }));
    expect(upgraded.credentials.grantsOf('old_user')).toEqual(['vault']);
    expect(upgraded.credentials.ungranted(upgraded.functions.get('old_user'))).toEqual(['never_created']);
    expect(upgraded.credentials.grantsOf('no_creds')).toEqual([]);
    await upgraded.saveFunction({ spec: { name: 'new_user', credentials: ['vault'] }, source: 'export default () => 1' });
    expect(upgraded.credentials.ungranted(upgraded.functions.get('new_user'))).toEqual(['vault']);
  });
});

describe('grants in the studio', () => {
  it('the studio API grants and revokes, and the credentials list shows who asks for a credential and who was granted it', async () => {
    const engine = s.engine(createEngine({ dataDir: s.dir('callable-studio-grants-'), secrets: new MemorySecretStore() }));
    const api = createStudioApi({ engine, mcp: new McpHttpHost(engine, { port: 0 }), resourcesDir: join(REPO, 'resources'), callableCommand: CALLABLE_BIN, diagnostic: () => {} });
    try {
      await engine.credentials.set({ name: 'vault', hosts: ['api.example.com'], placement: { kind: 'header', header: 'X-Api-Key', template: '{secret}' } }, SECRET);
      await engine.saveFunction({ spec: { name: 'asks', credentials: ['vault'] }, source: 'export default () => 1' });
      const listed = async () => ((await api.dispatch('credentials:list', {})) as { value: { credentials: Array<{ usedBy: string[]; grantedTo: string[] }> } }).value.credentials[0];
      expect(await listed()).toMatchObject({ usedBy: ['asks'], grantedTo: [] });

      expect(await api.dispatch('credentials:grant', { name: 'vault', function: 'asks' })).toEqual({ ok: true, value: { granted: true, credentialExists: true } });
      expect(await listed()).toMatchObject({ usedBy: ['asks'], grantedTo: ['asks'] });
      expect(await api.dispatch('credentials:revoke', { name: 'vault', function: 'asks' })).toEqual({ ok: true, value: { revoked: true } });
      expect(await listed()).toMatchObject({ grantedTo: [] });
      expect(await api.dispatch('credentials:grant', { name: 'other', function: 'asks' })).toMatchObject({
        ok: false,
        error: { code: 'bad_input', message: expect.stringContaining('does not list credential "other"') },
      });
    } finally {
      api.close();
    }
  });
});
