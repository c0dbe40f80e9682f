import { execFile } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { everything } from '../support/files.ts';
import { petShelter } from '../support/petShelter.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

/** The words of a printed command line as the shell splits them when the user pastes it. */
async function pasted(line: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)('bash', ['-c', `printf '%s\\0' ${line}`]);
  return stdout.split('\0').slice(0, -1);
}

/** Runs a printed `callable …` line: the shell reads its quoting, this checkout's CLI runs it. */
async function runPrinted(line: string, stdin?: string) {
  const [command, ...args] = await pasted(line);
  expect(command, line).toBe('callable');
  return cli(args, stdin === undefined ? {} : { stdin });
}

describe('callable new --from-curl: a key sent as a query parameter', () => {
  const cases: Array<[string, string, string, string]> = [
    ['a name vendors give keys (OpenWeatherMap appid)', '/data/2.5/weather?q=London&appid=KEY', '3f7a9c1e5b2d4f6a8c0e1b3d5f7a9c2e', 'appid: it is a name vendors give API keys'],
    ['a value that looks like a key (Europeana wskey)', '/record/v2/search.json?query=Vermeer&wskey=KEY', 'Jq8vX2mN4pL7rT9wY3zB6cF1hK5sD0gA', 'wskey: its value looks like a key (32 random characters)'],
  ];
  for (const [what, path, key, said] of cases) {
    it(`${what}: becomes the credential, the output says which and why, the key is written nowhere, and the printed steps work`, async () => {
      const vendor = await vendorServer((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.end('{"ok":true}');
      });
      const data = tempDir();
      const command = `curl "http://127.0.0.1:${vendor.port}${path.replace('KEY', key)}"`;
      const created = await cli(['new', 'keyed', '--from-curl', command, '--data-dir', data]);
      expect(created.code, created.stderr).toBe(0);
      const lines = created.stdout.trimEnd().split('\n');
      const [param, why] = said.split(': ');
      expect(lines).toContain(`note: the query parameter ${param} became the credential: ${why}`);
      const store = lines.findIndex((l) => l.startsWith(`the secret (the query parameter ${param}) was not saved anywhere.`));
      expect(lines[store + 1]).toBe(`  callable credentials set local --host 127.0.0.1:${vendor.port} --query ${param} --data-dir ${data}`);

      const shown = await cli(['show', 'keyed', '--json', '--data-dir', data]);
      expect(JSON.parse(shown.stdout).spec.inputSchema.properties[param!]).toBeUndefined();
      const exported = tempDir();
      expect((await cli(['export', exported, '--data-dir', data])).code).toBe(0);
      expect(everything(exported)).toContain('keyed');
      for (const [where, text] of Object.entries({ output: created.stdout + created.stderr + shown.stdout, 'data folder': everything(data), export: everything(exported) })) {
        expect(text.includes(key), `the key in the ${where}`).toBe(false);
      }

      // The printed steps, the key fed to the first on standard input as the user would.
      expect((await runPrinted(lines[store + 1]!.trim(), key)).code).toBe(0);
      const grant = lines.find((l) => l.includes('callable credentials grant'))!.split(': ').pop()!;
      expect((await runPrinted(`${grant} --data-dir ${data}`)).code).toBe(0);
      const run = await runPrinted(lines.at(-1)!.slice('next: '.length));
      expect(run.code, run.stderr).toBe(0);
      expect(new URL(vendor.seen[0]!.url, 'http://x').searchParams.get(param!)).toBe(key);
      // The run's record names the request, not the key the credential added to it.
      expect(everything(data).includes(key), 'the key in the data folder after the run').toBe(false);
    });
  }
});

describe('callable new --from-openapi: what the API assigns is not sent', () => {
  it('a strict stand-in of the spec (readOnly fields refused with 400) accepts the printed next: command as printed', async () => {
    const shelter = await petShelter();
    const data = tempDir();
    const cwd = tempDir();
    copyFileSync(join(REPO, 'test/fixtures/openapi/pet_shelter.yaml'), join(cwd, 'shelter.yaml'));
    const created = await cli(['new', 'add_pet', '--from-openapi', join(cwd, 'shelter.yaml'), '--operation', 'addPet', '--server', shelter.base, '--data-dir', data]);
    expect(created.code, created.stderr).toBe(0);
    const next = created.stdout.trimEnd().split('\n').at(-1)!;
    expect(next).toBe(`next: callable run add_pet --args '{"name":"Rex","species":"dog","tags":["friendly","vaccinated"],"intakeCode":"IN-2041"}' --data-dir ${data}`);
    const run = await runPrinted(next.slice('next: '.length));
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ id: 11, name: 'Rex', status: 'available' });
    expect(shelter.pets.get(11)).toMatchObject({ name: 'Rex', species: 'dog' });

    // What the API assigns cannot be passed either: one line, exit 2, nothing sent.
    const sent = shelter.seen.length;
    const refused = await cli(['run', 'add_pet', '--args', '{"name":"Rex","species":"dog","id":10}', '--data-dir', data]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/unexpected property "id"/);
    expect(shelter.seen.length).toBe(sent);

    // The tool description carries the operation's description, not only its summary.
    const { spec } = JSON.parse((await cli(['show', 'add_pet', '--json', '--data-dir', data])).stdout);
    expect(spec.description).toContain('The shelter assigns its id and status; sending either is an error.');
  });
});

describe('callable new --from-curl: a file upload', () => {
  it('-F file=@photo.png is one line saying what to do instead, exit 2, and nothing is created', async () => {
    const data = tempDir();
    const run = await cli(['new', 'upload', '--from-curl', 'curl -F caption=Sunset -F file=@photo.png https://api.example.com/v1/photos', '--data-dir', data]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'callable new: the curl command uploads the file photo.png (-F file=@photo.png), which a function cannot read; leave that field out of the command, then add an argument holding the file\'s content as base64 and send it from the source as multipart: { "file": { data: bytes, filename: "photo.png" } }\n',
    );
    expect((await cli(['list', '--data-dir', data])).stdout).toContain('No functions yet');
  });
});

describe('callable new --from-curl: a key sent in a body field', () => {
  // A credential is only ever put in a header or a query parameter: a key in the body cannot become
  // one, so the field is an argument without default and the key is kept nowhere.
  const cases: Array<[string, (base: string, key: string) => string, string, string]> = [
    ['-d token=KEY (a name vendors give keys)', (base, key) => `curl ${base}/v1/send -d token=${key} -d text=hi`, 'token', 'it is a name vendors give API keys'],
    ['--data-urlencode api_key=KEY', (base, key) => `curl ${base}/v1/send --data-urlencode api_key=${key} --data-urlencode 'text=hi there'`, 'api_key', 'it is a name vendors give API keys'],
    ['-F key=KEY (multipart)', (base, key) => `curl ${base}/v1/send -F key=${key} -F text=hi`, 'key', 'it is a name vendors give API keys'],
    ['-d with a value that looks like a key (client_code)', (base, key) => `curl ${base}/v1/send -d client_code=${key} -d text=hi`, 'client_code', 'its value looks like a key (32 random characters)'],
  ];
  for (const [what, command, field, why] of cases) {
    it(`${what}: a required argument without default, the output says why and what to do, the key is written nowhere, and a call passing it works`, async () => {
      const key = 'Jq8vX2mN4pL7rT9wY3zB6cF1hK5sD0gA';
      const vendor = await vendorServer((req, res) => {
        res.setHeader('content-type', 'application/json');
        res.statusCode = req.bytes.includes(key) ? 200 : 401;
        res.end(res.statusCode === 200 ? '{"sent":true}' : '{"error":"invalid key"}');
      });
      const data = tempDir();
      const created = await cli(['new', 'send', '--from-curl', command(`http://127.0.0.1:${vendor.port}`, key), '--data-dir', data]);
      expect(created.code, created.stderr).toBe(0);
      const lines = created.stdout.trimEnd().split('\n');
      expect(lines).toContain(
        `note: the body field ${field} was not saved: ${why}, and a credential can only be sent in a header or a query parameter; it is a required argument without default, so each call passes the key (recorded with the run's arguments). If the API also takes the key in a header or a query parameter, send it that way and run callable new again: it then becomes a credential kept in the keychain`,
      );
      const { spec } = JSON.parse((await cli(['show', 'send', '--json', '--data-dir', data])).stdout);
      expect(spec.inputSchema.required).toContain(field);
      expect(spec.inputSchema.properties[field]).toEqual({ type: 'string' });
      expect(spec.inputSchema.properties.text).toHaveProperty('default');
      expect(spec.credentials).toEqual([]);
      const exported = tempDir();
      expect((await cli(['export', exported, '--data-dir', data])).code).toBe(0);
      expect(everything(exported)).toContain('send');
      for (const [where, text] of Object.entries({ output: created.stdout + created.stderr, 'data folder': everything(data), export: everything(exported) })) {
        expect(text.includes(key), `the key in the ${where}`).toBe(false);
      }

      // The printed example passes a placeholder, which the vendor refuses; the same call with the key is sent.
      const next = lines.at(-1)!.slice('next: '.length);
      expect(next).toContain(`"${field}":"YOUR_KEY"`);
      const placeholder = await runPrinted(next);
      expect(placeholder.code).toBe(1);
      expect(placeholder.stderr).toMatch(/answered 401/);
      const sent = await runPrinted(next.replace('YOUR_KEY', key));
      expect(sent.code, sent.stderr).toBe(0);
      expect(JSON.parse(sent.stdout)).toEqual({ sent: true });
      expect(vendor.seen.at(-1)!.bytes.includes(key)).toBe(true);
    });
  }
});
