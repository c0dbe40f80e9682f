import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { cli, withCallableOnPath, type CliRun } from '../support/cli.ts';
import { everything } from '../support/files.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

const CURL_DIR = join(REPO, 'test/fixtures/curl');
const OPENAPI_DIR = join(REPO, 'test/fixtures/openapi');
const HAR = join(REPO, 'test/fixtures/har/github_repos.har');

function curlFixture(file: string): string {
  return readFileSync(join(CURL_DIR, file), 'utf8');
}

/** Runs a printed shell line as a user would paste it, `callable` on PATH being this checkout's command. */
async function shell(line: string, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)('bash', ['-c', line], { env: withCallableOnPath(tempDir('callable-bin-'), options.env), cwd: options.cwd });
}

function expectOneLineRefusal(run: CliRun, message: RegExp, stdout = ''): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe(stdout);
  expect(run.stderr).toMatch(message);
  expect(run.stderr.trimEnd().split('\n')[0]).toMatch(/^callable new: /);
}

describe('callable new NAME --from-curl', () => {
  it('creates the function, prints how to store the secret, and the printed steps work as printed against the vendor', async () => {
    const data = tempDir();
    const vendor = await vendorServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"id":"cus_1","object":"customer"}');
    });
    const command = curlFixture('stripe_create_customer.curl').replace('https://api.stripe.com', `http://127.0.0.1:${vendor.port}`);
    const created = await cli(['new', 'add_customer', '--from-curl', command, '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    const lines = created.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`created add_customer from the curl command (revision 1): POST http://127.0.0.1:${vendor.port}/v1/customers`);
    expect(lines[1]).toBe('the secret (-u (basic auth)) was not saved anywhere. Store it once as the credential local; the command reads it from standard input:');
    expect(lines[2]).toBe(`  printf %s 'USER:PASSWORD' | base64 | tr -d '\\n' | callable credentials set local --host 127.0.0.1:${vendor.port} --header Authorization --template 'Basic {secret}' --data-dir ${data}`);
    expect(lines[4]).toBe('add_customer asks for credential local, not granted (nothing is sent until you grant it): callable credentials grant local add_customer');
    expect(lines[5]).toBe(`next: callable run add_customer --args '{"name":"Jenny Rosen","email":"jennyrosen@example.com"}' --data-dir ${data}`);

    // The user's -u value in place of USER:PASSWORD, the rest exactly as printed.
    await shell(lines[2]!.trim().replace('USER:PASSWORD', 'sk_test_FAKE4eC39HqLyjWDarjtT1zdp7dc:'));
    await shell(`${lines[4]!.split(': ').pop()!} --data-dir ${data}`);
    const run = await shell(lines[5]!.slice('next: '.length));
    expect(JSON.parse(run.stdout)).toEqual({ id: 'cus_1', object: 'customer' });
    expect(vendor.seen[0]).toMatchObject({ method: 'POST', url: '/v1/customers', body: 'name=Jenny+Rosen&email=jennyrosen%40example.com' });
    expect(vendor.seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('sk_test_FAKE4eC39HqLyjWDarjtT1zdp7dc:').toString('base64')}`);
  });

  it('never writes the secret of any fixture to the source, the data folder, an export or the output', async () => {
    const data = tempDir();
    const secrets = new Map<string, string[]>();
    for (const file of readdirSync(CURL_DIR).sort()) {
      const command = curlFixture(file);
      const basic = /-u "([^"]+)"/.exec(command)?.[1];
      const literal = [...command.matchAll(/(ghp_FAKE\w+|sk_test_FAKE\w+|0c3ad6a5-fake[\w:-]+|sk-proj-FAKE\w+|sk-ant-api03-FAKE\w+|xoxb-[\w-]+|r8_FAKE\w+|AIzaFAKE\w+|mistral-FAKE\w+|FAKEtwilio\w+|key-FAKE\w+)/g)].map((m) => m[1]!);
      secrets.set(file, [...literal, ...(basic ? [Buffer.from(basic).toString('base64')] : [])]);
    }
    let output = '';
    for (const file of secrets.keys()) {
      const name = file.replace(/\.curl$/, '');
      const created = await cli(['new', name, '--from-curl', curlFixture(file), '--data-dir', data]);
      expect(created.code, `${file}: ${created.stderr}`).toBe(0);
      output += created.stdout + created.stderr;
      const shown = await cli(['show', name, '--json', '--data-dir', data]);
      output += shown.stdout;
    }
    const exported = tempDir();
    expect((await cli(['export', exported, '--data-dir', data])).code).toBe(0);
    const stored = everything(data) + everything(exported);
    for (const [file, values] of secrets) {
      expect(values.length, file).toBeGreaterThan(0);
      for (const secret of values) {
        expect(output.includes(secret), `${file}: ${secret} in the output`).toBe(false);
        expect(stored.includes(secret), `${file}: ${secret} in the data folder or the export`).toBe(false);
      }
    }
  });

  it('--from-curl - reads the command from standard input (a pasted multi-line command)', async () => {
    const data = tempDir();
    const created = await cli(['new', 'list_charges', '--from-curl', '-', '--data-dir', data], { stdin: curlFixture('stripe_list_charges.curl') });
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^created list_charges from the curl command \(revision 1\): GET https:\/\/api\.stripe\.com\/v1\/charges$/m);
    const { spec } = JSON.parse((await cli(['show', 'list_charges', '--json', '--data-dir', data])).stdout);
    expect(spec).toMatchObject({ allowedHosts: ['api.stripe.com'], credentials: ['stripe'], annotations: { readOnlyHint: true }, inputSchema: { properties: { limit: { type: 'integer', default: 3 } } } });
  });
});

describe('callable new NAME --from-har FILE [--entry N]', () => {
  it('lists the entries when the file has several and --entry is missing (exit 2, nothing created)', async () => {
    const data = tempDir();
    const run = await cli(['new', 'repos', '--from-har', HAR, '--data-dir', data]);
    expect(run.code).toBe(2);
    expect(run.stdout.split('\n').slice(0, 3)).toEqual([
      '1  GET https://github.com/octocat  200',
      '2  GET https://api.github.com/users/octocat/repos?per_page=2&sort=updated  200',
      '3  POST https://api.github.com/markdown  200',
    ]);
    expect(run.stderr).toBe(`callable new: ${HAR} has 3 entries (listed above); choose one with --entry N\n`);
    expect((await cli(['list', '--data-dir', data])).stdout).toContain('No functions yet');
  });

  it('--entry N makes the function and its first test case; callable test passes offline; no token or cookie is kept', async () => {
    const data = tempDir();
    const created = await cli(['new', 'my_repos', '--from-har', HAR, '--entry', '2', '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain(`created my_repos from the HAR file ${HAR} (entry 2) (revision 1): GET https://api.github.com/users/octocat/repos`);
    expect(created.stdout).toContain("  callable credentials set github --host api.github.com --header Authorization --template 'token {secret}'");
    expect(created.stdout).toContain(`saved the entry's response as the test case "har": callable test my_repos --data-dir ${data}`);
    const tested = await cli(['test', 'my_repos', '--data-dir', data]);
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);
    expect(tested.stdout).toMatch(/har/);

    const exported = tempDir();
    expect((await cli(['export', exported, '--data-dir', data])).code).toBe(0);
    expect(existsSync(join(exported, 'my_repos/tests/har.json'))).toBe(true);
    const stored = everything(data) + everything(exported) + created.stdout + created.stderr;
    for (const secret of ['gho_FAKE16C7e42F292c6912E7710c838347Ae178B4a', 'FAKESESSIONc2Vzc2lvbi1jb29raWU']) expect(stored.includes(secret), secret).toBe(false);
  });
});

describe('callable new --from-openapi SPEC', () => {
  it('--all lists every operation (id, method, path, summary) and creates no data folder', async () => {
    const data = join(tempDir(), 'never');
    const run = await cli(['new', '--from-openapi', join(OPENAPI_DIR, 'uspto.json'), '--all', '--data-dir', data]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split('\n').slice(0, 3).map((l) => l.split(/\s{2,}/))).toEqual([
      ['list-data-sets', 'GET /', 'List available data sets'],
      ['list-searchable-fields', 'GET /{dataset}/{version}/fields', 'Provides the general information about the API and the list of fields that can be used to query the dataset.'],
      ['perform-search', 'POST /{dataset}/{version}/records', 'Provides search capability for the data set with the given search criteria.'],
    ]);
    expect(run.stdout).toContain(`3 operations; create one: callable new NAME --from-openapi ${join(OPENAPI_DIR, 'uspto.json')} --operation ID`);
    expect(existsSync(data)).toBe(false);
    const petstore = await cli(['new', '--from-openapi', join(OPENAPI_DIR, 'petstore3.yaml'), '--all']);
    expect(petstore.stdout).toMatch(/^deletePet\s+DELETE \/pet\/\{petId\}\s+Deletes a pet\.$/m);
    expect(petstore.stdout).toContain('19 operations');
  });

  it('--operation ID creates the function; it says which credential to store; --server replaces the base URL', async () => {
    const data = tempDir();
    const created = await cli(['new', 'get_pet', '--from-openapi', join(OPENAPI_DIR, 'petstore3.yaml'), '--operation', 'getPetById', '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('created get_pet from the operation getPetById of');
    expect(created.stdout).toContain('it needs a secret (the security scheme petstore_auth): store it once as the credential swagger; the command reads it from standard input:');
    expect(created.stdout).toContain(`next: callable run get_pet --args '{"petId":1}' --data-dir ${data}`);
    const other = await cli(['new', 'get_pet_eu', '--from-openapi', join(OPENAPI_DIR, 'petstore3.yaml'), '--operation', 'getPetById', '--server', 'https://petstore.example.eu/api/v3', '--data-dir', data]);
    expect(other.code, other.stderr).toBe(0);
    const { spec, source } = JSON.parse((await cli(['show', 'get_pet_eu', '--json', '--data-dir', data])).stdout);
    expect(spec.allowedHosts).toEqual(['petstore.example.eu']);
    expect(source).toContain('"https://petstore.example.eu/api/v3/pet/"');
  });
});

describe('callable new: bad input is one line and exit 2, nothing created', () => {
  it('refuses each mistake with what was wrong and what to do', async () => {
    const data = tempDir();
    const truncated = join(tempDir(), 'petstore.yaml');
    // Cut inside a quoted $ref, as an interrupted download leaves it.
    const yaml = readFileSync(join(OPENAPI_DIR, 'petstore3.yaml'), 'utf8');
    writeFileSync(truncated, yaml.slice(0, yaml.indexOf("'#/components/schemas/Pet'") + 10));
    const empty = join(tempDir(), 'empty.yaml');
    writeFileSync(empty, 'openapi: 3.0.3\ninfo:\n  title: Nothing yet\n  version: "0.1"\npaths: {}\n');
    const cases: Array<[string[], RegExp]> = [
      [['bad', '--from-openapi', empty, '--operation', 'x'], /^callable new: .*empty\.yaml describes no operations \(its "paths" is empty or missing\)\n$/],
      [['--from-openapi', empty, '--all'], /^callable new: .*empty\.yaml has no operations \(its "paths" is empty\)\n$/],
      [['bad', '--from-curl', 'curl "https://api.example.com/x'], /^callable new: the curl command could not be read: it is not valid shell syntax \(line 1\); check its quotes and line continuations\n$/],
      [['bad', '--from-curl', 'curl -H "Accept: application/json"'], /^callable new: the curl command could not be read: no URL specified!\n$/],
      [['bad', '--from-curl', ''], /^callable new: --from-curl is empty: give the curl command in quotes, or - to read it from standard input\nUsage: /],
      [['bad', '--from-har', HAR, '--entry', '9'], /^callable new: --entry 9: .*github_repos\.har has 3 entries \(1-3\)\n$/],
      [['bad', '--from-har', HAR, '--entry', 'two'], /^callable new: --entry must be a positive whole number\nUsage: /],
      [['bad', '--from-har', join(OPENAPI_DIR, 'nope.har')], /^callable new: cannot read the HAR file .*nope\.har: no such file\n$/],
      [['bad', '--from-openapi', join(OPENAPI_DIR, 'uspto.json'), '--operation', 'nope'], /^callable new: .*uspto\.json has no operation "nope"; it has 3: list-data-sets, list-searchable-fields, perform-search \(callable new --from-openapi .*uspto\.json --all lists them\)\n$/],
      [['bad', '--from-openapi', join(OPENAPI_DIR, 'uspto.json')], /^callable new: --from-openapi needs --operation ID \(callable new --from-openapi .* --all lists them\)\nUsage: /],
      [['bad', '--from-openapi', truncated, '--operation', 'updatePet'], /^callable new: .*petstore\.yaml could not be read as an OpenAPI spec \(JSON or YAML\): .*\n$/],
      [['bad', '--from-openapi', HAR, '--operation', 'x'], /^callable new: .*github_repos\.har is not an OpenAPI 3 spec \(it has no "openapi": "3\.x" field\)\n$|^callable new: .*github_repos\.har could not be read as an OpenAPI spec/],
      [['bad', '--from-curl', 'curl https://a.example.com', '--from-har', HAR], /^callable new: give one of --from-curl, --from-har, not several\nUsage: /],
      [['bad', '--from-curl', 'curl https://a.example.com', '--entry', '2'], /^callable new: --entry chooses an entry of a HAR file: it goes with --from-har\nUsage: /],
      [['bad', '--from-curl', 'curl https://a.example.com', '--template', 'word_stats'], /^callable new: --template and --from-curl start a function from different things; give one\nUsage: /],
      [['--from-curl', 'curl https://a.example.com'], /^callable new: give the new function a NAME\nUsage: /],
      [['Bad-Name', '--from-curl', 'curl https://a.example.com'], /^callable new: "Bad-Name" is not a valid function name: /],
    ];
    for (const [args, message] of cases) {
      const run = await cli(['new', ...args, '--data-dir', data]);
      expectOneLineRefusal(run, message);
    }
    expect((await cli(['list', '--data-dir', data])).stdout).toContain('No functions yet');
  });

  it('refuses a name that is taken, leaving the function as it was', async () => {
    const data = tempDir();
    expect((await cli(['new', 'taken', '--data-dir', data])).code).toBe(0);
    const again = await cli(['new', 'taken', '--from-curl', curlFixture('github_star_repo.curl'), '--data-dir', data]);
    expectOneLineRefusal(again, /^callable new: a function named "taken" already exists; pick another name\n$/);
    expect((await cli(['history', 'taken', '--data-dir', data])).stdout.trim().split('\n')).toHaveLength(1);
  });
});

describe('README: "Starting from curl, HAR or OpenAPI"', () => {
  it('its commands work as written (npx callable being this checkout\'s command)', async () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### Starting from curl, HAR or OpenAPI'));
    const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
    const lines = block.trim().split('\n');
    expect(lines).toHaveLength(5);
    const cwd = tempDir();
    const data = tempDir();
    copyFileSync(join(OPENAPI_DIR, 'petstore3.yaml'), join(cwd, 'petstore.yaml'));
    copyFileSync(HAR, join(cwd, 'session.har'));
    writeFileSync(join(cwd, 'command.txt'), curlFixture('stripe_create_customer.curl'));
    const outputs: string[] = [];
    for (const line of lines) {
      const command = line.replace(/\s+# .*$/, '').replace(/^npx callable /, 'callable ');
      const { stdout } = await shell(command, { cwd, env: { ...process.env, CALLABLE_DATA_DIR: data } });
      outputs.push(stdout);
    }
    expect(outputs[0]).toContain('created list_issues from the curl command (revision 1): GET https://api.github.com/repos/OWNER/REPO/issues');
    expect(outputs[0]).toContain("callable credentials set github --host api.github.com --header Authorization --template 'Bearer {secret}'");
    expect(outputs[1]).toContain('created create_customer from the curl command (revision 1): POST https://api.stripe.com/v1/customers');
    expect(outputs[2]).toContain('saved the entry\'s response as the test case "har": callable test my_repos');
    expect(outputs[3]).toMatch(/^getPetById\s+GET \/pet\/\{petId\}\s+Find pet by ID\.$/m);
    expect(outputs[4]).toContain('created get_pet from the operation getPetById of petstore.yaml (revision 1): GET https://petstore3.swagger.io/api/v3/pet/{petId}');
    const list = await cli(['list', '--data-dir', data]);
    for (const name of ['list_issues', 'create_customer', 'my_repos', 'get_pet']) expect(list.stdout).toMatch(new RegExp(`^${name}\\s`, 'm'));
    const { source } = JSON.parse((await cli(['show', 'list_issues', '--json', '--data-dir', data])).stdout);
    expect(source).toContain('url.searchParams.append("state"');
    expect(source).not.toContain('GITHUB_TOKEN');

    // "Advice from observed behaviour": its commands, on the functions made above.
    const lintSection = readme.slice(readme.indexOf('### Advice from observed behaviour'));
    const lintLines = /```sh\n([\s\S]*?)```/.exec(lintSection)![1]!.trim().split('\n');
    expect(lintLines).toHaveLength(2);
    const env = { ...process.env, CALLABLE_DATA_DIR: data };
    const all = await shell(lintLines[0]!.replace(/\s+# .*$/, '').replace(/^npx callable /, 'callable '), { cwd, env });
    expect(all.stdout).toMatch(/\(4 functions checked\)\n$/);
    const one = await shell(lintLines[1]!.replace(/\s+# .*$/, '').replace(/^npx callable /, 'callable '), { cwd, env });
    // my_repos: its HAR case made one GET to its one host, and it is marked read-only; its result is a list.
    expect(JSON.parse(one.stdout)).toEqual([]);
  });

  it('the examples of "callable new --help" that start from a request work as written', async () => {
    const help = await cli(['new', '--help']);
    const curlExample = help.stdout.split('\n').find((l) => /^ {2}callable new \w+ --from-curl /.test(l))!.trim();
    const data = tempDir();
    const cwd = tempDir();
    copyFileSync(join(OPENAPI_DIR, 'petstore3.yaml'), join(cwd, 'petstore.yaml'));
    const env = { ...process.env, CALLABLE_DATA_DIR: data };
    expect((await shell(curlExample, { cwd, env })).stdout).toContain('created list_issues from the curl command');
    const specExample = help.stdout.split('\n').find((l) => /^ {2}callable new \w+ --from-openapi /.test(l))!.trim();
    expect((await shell(specExample, { cwd, env })).stdout).toContain('created get_pet from the operation getPetById of petstore.yaml');
  });
});

describe('callable lint [NAME…] (advice from observed behaviour; kept here with the other new-function commands)', () => {
  it('says, with the evidence, what the recorded runs and client limits suggest, and an outputSchema to accept', async () => {
    const { createEngine, MemorySecretStore } = await import('../../src-main/engine/index.ts');
    const vendor = await vendorServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ items: ['a', 'b'], next: req.url.includes('page=2') ? null : 'page=2' }));
    });
    const data = tempDir();
    const long = 'list_items_from_the_inventory_service_with_paging_x';
    const engine = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    try {
      await engine.saveFunction({
        spec: {
          name: long,
          description: `Lists items. ${'Very detailed notes. '.repeat(60)}`,
          allowedHosts: [`127.0.0.1:${vendor.port}`, 'api.unused.example'],
          timeoutMs: 90_000,
          inputSchema: { type: 'object', properties: { page: { type: 'integer' } } },
        },
        source: `export default async ({ page = 1 }, ctx) => { const r = await ctx.fetch('http://127.0.0.1:${vendor.port}/items?page=' + page); const body = await r.json(); return { count: body.items.length, items: body.items, ...(page === 1 ? { next: body.next } : {}) }; }`,
      });
      await engine.saveFunction({ spec: { name: 'tidy', annotations: { readOnlyHint: true } }, source: 'export default () => ({ ok: true })' });
    } finally {
      engine.close();
    }
    for (const page of [1, 2]) expect((await cli(['run', long, '--args', JSON.stringify({ page }), '--data-dir', data])).code).toBe(0);

    const advice = await cli(['lint', '--json', '--data-dir', data]);
    expect(advice.code, advice.stderr).toBe(0);
    const byKind = Object.fromEntries((JSON.parse(advice.stdout) as Array<{ kind: string; function?: string; suggestion?: { type: 'object' } }>).map((a) => [a.kind, a]));
    expect(Object.keys(byKind).sort()).toEqual(['description_length', 'output_schema', 'read_only', 'timeout', 'tool_name_length', 'unused_host']);
    expect(byKind.unused_host).toMatchObject({ function: long, message: 'api.unused.example is on allowedHosts but no recorded run used it; remove it if the function does not need it', evidence: `2 request(s) in 2 run(s) and test case(s), to 127.0.0.1:${vendor.port}` });
    expect(byKind.read_only).toMatchObject({ evidence: '2 request(s) in 2 run(s) and test case(s), methods: GET' });
    expect(byKind.output_schema).toMatchObject({
      suggestion: { type: 'object', properties: { count: { type: 'integer' }, items: { type: 'array', items: { type: 'string' } }, next: { type: 'string' } }, required: ['count', 'items'] },
    });
    expect(byKind.tool_name_length).toMatchObject({ evidence: `mcp__callable__${long}` });
    expect(byKind.timeout).toMatchObject({ evidence: '"timeoutMs": 90000' });

    const text = await cli(['lint', long, '--data-dir', data]);
    expect(text.stdout).toContain(`${long}: it has no outputSchema: this one, inferred from its recorded results, lets clients read its results as structured content`);
    expect(text.stdout).toMatch(/^6 pieces of advice \(1 function checked\)$/m);
    // The inferred outputSchema, accepted as is, fits the results it came from.
    const again = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    try {
      const current = again.functions.get(long);
      await again.saveFunction({ spec: { name: long, description: current.description, allowedHosts: current.allowedHosts, timeoutMs: current.timeoutMs, inputSchema: current.inputSchema, outputSchema: byKind.output_schema!.suggestion! }, source: current.source });
    } finally {
      again.close();
    }
    for (const page of [1, 2]) expect((await cli(['run', long, '--args', JSON.stringify({ page }), '--data-dir', data])).code).toBe(0);
    expect(JSON.parse((await cli(['lint', long, '--json', '--data-dir', data])).stdout).map((a: { kind: string }) => a.kind)).not.toContain('output_schema');
    const tidy = await cli(['lint', 'tidy', '--data-dir', data]);
    expect(tidy).toMatchObject({ code: 0, stdout: 'no advice (1 function checked)\n' });
    const unknown = await cli(['lint', 'nope', '--data-dir', data]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^callable lint: .*nope.*\n$/);
  });

  it('says when more functions are enabled than common clients load', async () => {
    const { createEngine, MemorySecretStore } = await import('../../src-main/engine/index.ts');
    const data = tempDir();
    const engine = createEngine({ dataDir: data, secrets: new MemorySecretStore() });
    try {
      await engine.functions.saveAll(Array.from({ length: 41 }, (_, i) => ({ spec: { name: `tool_${i}` }, source: 'export default () => 1' })));
    } finally {
      engine.close();
    }
    const run = await cli(['lint', '--data-dir', data]);
    expect(run.stdout).toContain('all functions: 41 functions are enabled, more than the ~40 tools common clients load; serve subsets with profiles (callable mcp --profile P)');
    expect((await cli(['disable', 'tool_0', '--data-dir', data])).code).toBe(0);
    expect((await cli(['lint', '--data-dir', data])).stdout).toBe('no advice (41 functions checked)\n');
  });
});
