import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { cli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

// The README's newcomer path, run as written: real `npx callable` in a shell from the checkout, the
// real keychain (test/setup/keychain.ts), a real MCP client for `npx callable mcp`. Each npx start
// takes seconds on a busy machine, hence the longer time limits.
const NPX_TIME = 120_000;
const QUICK_START = 'Headless, the same engine is the `callable` command:';

const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const KEY = `deepl-key-${Math.random().toString(36).slice(2)}`;

/** The commands of the `nth` sh block after `marker`: continuation lines joined, comments dropped. */
function readmeCommands(marker: string, nth = 0): string[] {
  const at = README.indexOf(marker);
  expect(at, `README has "${marker}"`).toBeGreaterThanOrEqual(0);
  const blocks = [...README.slice(at).matchAll(/```sh\n([\s\S]*?)```/g)];
  return blocks[nth]![1]!
    .replace(/\\\n\s*/g, '')
    .trim()
    .split('\n')
    .map((line) => line.replace(/\s+# .*$/, ''));
}

type Shell = { code: number; stdout: string; stderr: string };

/** Runs one README line in bash, from the checkout, as a user would paste it. */
async function shell(line: string, env: NodeJS.ProcessEnv, cwd = REPO): Promise<Shell> {
  try {
    const { stdout, stderr } = await promisify(execFile)('bash', ['-c', line], { env, cwd, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

function userEnv(data: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  // npm's weekly update check is no part of what the README says; the commands run as typed.
  return { ...process.env, CALLABLE_DATA_DIR: data, DEEPL_KEY: KEY, npm_config_update_notifier: 'false', ...extra };
}

/**
 * The quick start's import line, in-process: the tests after the first only need the examples in
 * place (the first runs the line through npx as written), and each npx start costs about a CPU-second.
 */
async function importExamples(env: NodeJS.ProcessEnv, examples = 'resources/examples'): Promise<void> {
  const line = readmeCommands(QUICK_START)[0]!;
  expect(line).toMatch(/^npx callable import resources\/examples$/);
  const imported = await cli(['import', examples], { env, cwd: REPO });
  expect(imported.code, imported.stderr).toBe(0);
}

describe('README quick start, as written', () => {
  it('imports the examples, runs word_stats, and `npx callable mcp` serves them to a real MCP client', async () => {
    const [importLine, runLine, mcpLine, ...more] = readmeCommands(QUICK_START);
    expect(more).toEqual([]);
    const data = tempDir();
    const env = userEnv(data);

    const imported = await shell(importLine!, env);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('imported word_stats (revision 1)');
    // The hints start the way the user started the command.
    expect(imported.stdout).toContain('deepl_translate asks for credential deepl, not granted (nothing is sent until you grant it): npx callable credentials grant deepl deepl_translate');

    const run = await shell(runLine!, env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ words: 6, sentences: 2 });

    expect(mcpLine).toBe('npx callable mcp');
    const client = new Client({ name: 'readme-quick-start', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: 'bash', args: ['-c', `exec ${mcpLine}`], cwd: REPO, env: env as Record<string, string>, stderr: 'pipe' }));
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(['deepl_translate', 'word_stats']));
      const result = (await client.callTool({ name: 'word_stats', arguments: { text: 'one two two' } })) as { structuredContent?: unknown; content: Array<{ text?: string }> };
      expect(JSON.parse(result.content[0]!.text!)).toMatchObject({ words: 3 });
    } finally {
      await client.close();
    }
  }, NPX_TIME);

  it('the credential example stores the key, grants it, and the run gets past the grant to the network', async () => {
    const [setLine, runLine, ...more] = readmeCommands('To call a vendor API, store its key once');
    expect(more).toEqual([]);
    const data = tempDir();
    const env = userEnv(data);
    await importExamples(env);

    const set = await shell(setLine!, env);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe('saved credential deepl (secret in the OS keychain)\ngranted credential deepl to deepl_translate\n');

    // The real DeepL is not reachable from here: the run reaches the request (refused by DNS here,
    // answered by DeepL elsewhere), which it does only once the credential was granted and read.
    const run = await shell(runLine!, env);
    expect(run.stderr).toContain('→ POST https://api-free.deepl.com/v2/translate');
    expect(run.stderr).not.toContain('has not been granted');
    expect(run.stdout + run.stderr).not.toContain(KEY);
  }, NPX_TIME);

  it('the credential example, with the host pointed at a vendor stand-in, sends the key as DeepL wants it and prints the translation', async () => {
    const vendor = await vendorServer((_req, res) => res.end(JSON.stringify({ translations: [{ detected_source_language: 'EN', text: 'Hallo' }] })));
    const host = `127.0.0.1:${vendor.port}`;
    // A copy of the examples whose deepl_translate calls the stand-in instead of api-free.deepl.com.
    const examples = tempDir();
    cpSync(join(REPO, 'resources/examples'), examples, { recursive: true });
    for (const file of ['deepl_translate/index.ts', 'deepl_translate/function.json']) {
      const path = join(examples, file);
      writeFileSync(path, readFileSync(path, 'utf8').replaceAll('https://api-free.deepl.com', `http://${host}`).replaceAll('api-free.deepl.com', host));
    }
    const [setLine, runLine] = readmeCommands('To call a vendor API, store its key once').map((l) => l.replace('api-free.deepl.com', host));
    const data = tempDir();
    const env = userEnv(data);
    await importExamples(env, examples);
    expect((await shell(setLine!, env)).code).toBe(0);
    const run = await shell(runLine!, env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ text: 'Hallo', detectedSource: 'EN' });
    expect(vendor.seen).toHaveLength(1);
    expect(vendor.seen[0]!.headers.authorization).toBe(`DeepL-Auth-Key ${KEY}`);
    expect(JSON.parse(vendor.seen[0]!.body)).toEqual({ text: ['Hello'], target_lang: 'DE' });
    expect(run.stderr).toContain(`[credential deepl]`);
  }, NPX_TIME);
});

describe('README "Saved tests", as written', () => {
  it('saves a run as a case and replays it: all, one case, --update, --json', async () => {
    const lines = readmeCommands('## Saved tests');
    expect(lines).toHaveLength(5);
    const data = tempDir();
    const env = userEnv(data);
    await importExamples(env);
    const results: Shell[] = [];
    for (const line of lines) {
      const r = await shell(line, env);
      expect(r.code, `${line}\n${r.stderr}`).toBe(0);
      results.push(r);
    }
    const [save, all, one, update, json] = results as [Shell, Shell, Shell, Shell, Shell];
    const [, fn, name] = /^npx callable run (\w+) .*--save-test (\w+)/.exec(lines[0]!)!;
    expect(save.stderr).toContain(`saved test case ${name} of ${fn} (0 requests, expects the result); replay it: npx callable test ${fn} --case ${name}`);
    expect(all.stdout).toMatch(new RegExp(`^PASS +${fn} › ${name} `, 'm'));
    expect(one.stdout).toContain('1 passed, 0 failed (1 case)');
    expect(update.stdout).toContain('1 passed, 0 failed (1 case)');
    expect(JSON.parse(json.stdout)).toMatchObject({ passed: 1, failed: 0, results: [{ function: fn, case: name, status: 'pass' }] });
  }, NPX_TIME);
});

describe('README "Functions": export', () => {
  it('gives the sources back byte for byte and function.json normalised; importing the export gives the same function', async () => {
    const src = tempDir();
    mkdirSync(join(src, 'hand_written'));
    const handWritten = '{ "description": "hand written",\n\t"name": "hand_written", "enabled": true,\n\t"allowedHosts": [] }\n';
    const source = 'export default (args) =>   ({ echoed: args });  // spacing kept\n';
    writeFileSync(join(src, 'hand_written/function.json'), handWritten);
    writeFileSync(join(src, 'hand_written/index.js'), source);
    const data = tempDir();
    expect((await cli(['import', src, '--data-dir', data])).code).toBe(0);
    const out = tempDir();
    expect((await cli(['export', out, '--data-dir', data])).code).toBe(0);
    expect(readFileSync(join(out, 'hand_written/index.js'), 'utf8')).toBe(source);
    const exported = readFileSync(join(out, 'hand_written/function.json'), 'utf8');
    expect(exported).not.toBe(handWritten);
    // Fields in a fixed order, two-space indented, settings at their default left out.
    expect(exported).toBe(`${JSON.stringify({ name: 'hand_written', description: 'hand written', language: 'js', inputSchema: { type: 'object', properties: {} } }, null, 2)}\n`);

    const again = tempDir();
    expect((await cli(['import', out, '--data-dir', again])).code).toBe(0);
    const show = async (dir: string) => JSON.parse((await cli(['show', 'hand_written', '--json', '--data-dir', dir])).stdout) as { spec: unknown; source: string };
    const [first, second] = [await show(data), await show(again)];
    expect(second.spec).toEqual(first.spec);
    expect(second.source).toBe(first.source);
  });
});
