import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, type Engine, type FunctionSpecInput } from '../../src-main/engine/index.ts';
import { storedValidatorKey } from '../../src-main/engine/functions/schemas.ts';
import { REPO } from '../support/callable.ts';
import { tempDir } from '../support/tmp.ts';
import { until } from '../support/wait.ts';

// A saved function's argument and result validators are kept as code when it is saved (in the
// user's private cache folder, $XDG_CACHE_HOME/callable-studio/validators), so serving it needs no
// schema compiler. What a caller sees must not depend on whether that code was there: a function
// saved before validators were kept, or whose kept one is gone, damaged or not this user's, gets
// the same messages, and a damaged one is made again, never run.

const SAVED = process.env.XDG_CACHE_HOME;
afterEach(() => {
  if (SAVED === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = SAVED;
});

/** Points this process's cache folder at a fresh one; returns its validator folder. */
function freshCache(): string {
  const cache = tempDir('callable-cache-');
  process.env.XDG_CACHE_HOME = cache;
  return join(cache, 'callable-studio', 'validators');
}

const entries = (folder: string): string[] => (existsSync(folder) ? readdirSync(folder).filter((name) => /^[0-9a-f]{64}\.js$/.test(name)).sort() : []);

const ECHO = 'export default (args) => args';

interface Case {
  spec: FunctionSpecInput;
  source?: string;
  calls: string[];
}

/** Schemas that reach each part of ajv's generated code: refs, dialects, runtime helpers, the __proto__ alias, results. */
const CASES: Case[] = [
  {
    spec: { name: 'plain', inputSchema: { type: 'object', properties: { text: { type: 'string' }, n: { type: 'number' } }, required: ['text', 'n'], additionalProperties: false } },
    calls: ['{"text":"a","n":1}', '{}', '{"text":1,"n":"x","extra":true}'],
  },
  {
    spec: {
      name: 'refs',
      inputSchema: {
        $defs: { item: { type: 'object', properties: { id: { type: 'integer', minimum: 1 }, tags: { type: 'array', items: { type: 'string' }, maxItems: 2, uniqueItems: true } }, required: ['id'] } },
        type: 'object',
        properties: { items: { type: 'array', items: { $ref: '#/$defs/item' }, minItems: 1 } },
        required: ['items'],
      },
    },
    calls: ['{"items":[{"id":1,"tags":["a"]}]}', '{"items":[]}', '{"items":[{"id":0,"tags":["a","a","b"]},{"tags":[1]}]}'],
  },
  {
    spec: { name: 'tree', inputSchema: { type: 'object', properties: { value: { type: 'number' }, children: { type: 'array', items: { $ref: '#' } } }, required: ['value'] } },
    calls: ['{"value":1,"children":[{"value":2,"children":[]}]}', '{"value":1,"children":[{"children":[{"value":"x"}]}]}'],
  },
  {
    spec: {
      name: 'unevaluated',
      inputSchema: { type: 'object', allOf: [{ properties: { a: { type: 'string' } } }], anyOf: [{ properties: { b: { const: 1 } }, required: ['b'] }, { properties: { c: { enum: ['x', { y: [1] }] } }, required: ['c'] }], unevaluatedProperties: false },
    },
    calls: ['{"a":"s","b":1}', '{"c":{"y":[1]}}', '{"a":"s","b":2,"d":0}', '{"c":{"y":[2]}}'],
  },
  {
    spec: { name: 'draft07', inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false } } } },
    calls: ['{"pair":["a",1]}', '{"pair":[1,"a",true]}'],
  },
  {
    spec: { name: 'strings', inputSchema: { type: 'object', properties: { word: { type: 'string', minLength: 2, maxLength: 3, pattern: '^\\p{L}+$' }, kind: { oneOf: [{ type: 'string' }, { type: 'integer' }, { type: 'number', multipleOf: 0.5 }] } } } },
    calls: ['{"word":"😀😀","kind":"x"}', '{"word":"😀","kind":1}', '{"word":"ab1","kind":2.5}', '{"kind":true}'],
  },
  {
    spec: {
      name: 'proto_fields',
      inputSchema: JSON.parse(
        '{"type":"object","properties":{"__proto__":{"type":"object","properties":{"polluted":{"type":"boolean"}},"additionalProperties":false},"constructor":{"type":"string"}},"required":["__proto__"],"dependentRequired":{"constructor":["__proto__"]},"additionalProperties":false}',
      ) as { type: 'object' },
    },
    calls: ['{"__proto__":{"polluted":true},"constructor":"c"}', '{"constructor":"c"}', '{"__proto__":{"polluted":1,"x":0},"prototype":1}'],
  },
  {
    spec: { name: 'results', outputSchema: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'], additionalProperties: false } },
    source: 'export default (args) => args.result',
    calls: ['{"result":{"count":2}}', '{"result":{"count":"two","more":1}}'],
  },
];

/** What each call of each case answers: the value, or the error's message. */
async function outcomes(engine: Engine): Promise<string[]> {
  const seen: string[] = [];
  for (const c of CASES) {
    for (const args of c.calls) {
      const result = await engine.run(c.spec.name, JSON.parse(args), { caller: 'test' });
      seen.push(`${c.spec.name} ${args} → ${result.ok ? `ok ${JSON.stringify(result.value)}` : result.error.message}`);
    }
  }
  return seen;
}

/** A data folder holding `cases`, saved with this process's cache folder as it is now. */
async function saved(cases: Case[]): Promise<string> {
  const dataDir = tempDir('callable-data-');
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    for (const c of cases) await engine.saveFunction({ spec: c.spec, source: c.source ?? ECHO });
  } finally {
    engine.close();
  }
  return dataDir;
}

/** Runs `use` with an engine on `dataDir` (a fresh one: nothing compiled or read yet), then closes it. */
async function withEngine<T>(dataDir: string, use: (engine: Engine) => Promise<T>): Promise<T> {
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    return await use(engine);
  } finally {
    engine.close();
  }
}

describe('kept argument and result validators', () => {
  it('give the same messages as compiling the schema, for a function saved with them and for one saved without (which gets them once served)', async () => {
    // Saved now: each distinct schema's validator is kept at once.
    const folder = freshCache();
    const dataDir = await saved(CASES);
    const kept = entries(folder);
    expect(kept.length).toBeGreaterThanOrEqual(CASES.length);
    const fromKept = await withEngine(dataDir, outcomes);

    // Saved where nothing could be kept (a cache folder others may write is never used), as before validators were kept.
    const blocked = join(tempDir('callable-cache-'), 'callable-studio', 'validators');
    mkdirSync(blocked, { recursive: true });
    chmodSync(blocked, 0o777);
    process.env.XDG_CACHE_HOME = join(blocked, '../..');
    const oldDataDir = await saved(CASES);
    expect(entries(blocked)).toEqual([]);
    // Served with a cache folder of its own: compiled, the same messages, and kept for next time.
    const later = freshCache();
    expect(await withEngine(oldDataDir, outcomes)).toEqual(fromKept);
    await until(() => entries(later).length === kept.length, `${kept.length} validators kept once served`);
    expect(entries(later)).toEqual(kept);
    expect(await withEngine(oldDataDir, outcomes)).toEqual(fromKept);

    // The messages are the ones callers have always seen.
    expect(fromKept).toContain('plain {} → invalid arguments: args.text is required; args.n is required');
    expect(fromKept).toContain('plain {"text":1,"n":"x","extra":true} → invalid arguments: args has an unexpected property "extra"; args.text must be string; args.n must be number');
    expect(fromKept).toContain('refs {"items":[]} → invalid arguments: args.items must NOT have fewer than 1 items');
    expect(fromKept).toContain('tree {"value":1,"children":[{"children":[{"value":"x"}]}]} → invalid arguments: args.children.0.value is required; args.children.0.children.0.value must be number');
    expect(fromKept).toContain('draft07 {"pair":[1,"a",true]} → invalid arguments: args.pair must NOT have more than 2 items; args.pair.0 must be string; args.pair.1 must be number');
    expect(fromKept).toContain('strings {"word":"😀","kind":1} → invalid arguments: args.word must NOT have fewer than 2 characters; args.word must match pattern "^\\p{L}+$"; args.kind must be string; args.kind must match exactly one schema in oneOf');
    expect(fromKept).toContain('proto_fields {"__proto__":{"polluted":1,"x":0},"prototype":1} → invalid arguments: args has an unexpected property "prototype"; args.__proto__ has an unexpected property "x"; args.__proto__.polluted must be boolean');
    // A message naming a "__proto__" field names it as such (ajv saw it under an alias).
    expect(fromKept).toContain('proto_fields {"constructor":"c"} → invalid arguments: args.__proto__ is required; args must have property __proto__ when property constructor is present');
    expect(fromKept).toContain('results {"result":{"count":"two","more":1}} → the result does not match the outputSchema: result has an unexpected property "more"; result.count must be integer');
    expect(fromKept.filter((line) => / → ok /.test(line))).toHaveLength(CASES.length);
  });

  it("a kept validator that was changed, cut short or put under another schema's name is deleted and made again, never run", async () => {
    const folder = freshCache();
    const dataDir = await saved([CASES[0]!]);
    const [entry] = entries(folder);
    expect(entries(folder)).toHaveLength(1);
    await saved([{ spec: { name: 'open', inputSchema: { type: 'object', properties: { any: {} } } }, calls: [] }]);
    const other = entries(folder).find((name) => name !== entry)!;

    const refused = 'invalid arguments: args.n is required; args.text must be string';
    const call = () =>
      withEngine(dataDir, async (engine) => {
        const result = await engine.run('plain', { text: 1 }, { caller: 'test' });
        return result.ok ? 'accepted' : result.error.message;
      });
    expect(await call()).toBe(refused);
    const file = join(folder, entry!);
    const original = readFileSync(file, 'utf8');
    const acceptAll = 'module.exports = () => true; module.exports.default = module.exports;';
    const damages: Array<[string, string]> = [
      ['changed', `${original.slice(0, original.indexOf('\n'))}\n${acceptAll}`],
      ['cut short', original.slice(0, Math.floor(original.length / 2))],
      ["another schema's", readFileSync(join(folder, other), 'utf8')],
      ['with a first line made for other code', `// callable validator ${'0'.repeat(64)}\n${acceptAll}`],
    ];
    for (const [what, content] of damages) {
      writeFileSync(file, content);
      expect(await call(), what).toBe(refused);
      await until(() => existsSync(file) && readFileSync(file, 'utf8') !== content, `the ${what} entry made again`);
      expect(readFileSync(file, 'utf8'), what).toMatch(/^\/\/ callable validator [0-9a-f]{64}\n"use strict";/);
      expect(readFileSync(file, 'utf8'), what).not.toContain(acceptAll);
      expect(await call(), what).toBe(refused);
    }

    // Code with a first line that is right for it: its hash catches accidents, not someone who can
    // write the folder, so an entry is read only if it is a file this user owns that no one else may
    // change, with no other name. Each of these is removed and made again, never run.
    const key = storedValidatorKey(JSON.stringify(CASES[0]!.spec.inputSchema));
    const forged = `// callable validator ${createHash('sha256').update(`${key}\0${acceptAll}`).digest('hex')}\n${acceptAll}`;
    const elsewhere = join(tempDir('callable-forged-'), 'entry.js');
    const placements: Array<[string, () => void]> = [
      ['a link to a file elsewhere', () => (writeFileSync(elsewhere, forged), unlinkSync(file), symlinkSync(elsewhere, file))],
      ['a file others may write', () => (writeFileSync(file, forged), chmodSync(file, 0o666))],
    ];
    for (const [what, place] of placements) {
      place();
      expect(await call(), what).toBe(refused);
      await until(() => existsSync(file) && !lstatSync(file).isSymbolicLink() && readFileSync(file, 'utf8') !== forged, `${what} replaced`);
      expect((lstatSync(file).mode & 0o777).toString(8), what).toBe('600');
      expect(await call(), what).toBe(refused);
    }
    expect(readFileSync(elsewhere, 'utf8')).toBe(forged);
  });

  it('two functions whose schemas share an $id (copied from one vendor spec) are each checked by their own, kept or compiled', async () => {
    const schema = (type: string) => ({ $id: 'https://vendor.example/schemas/item', type: 'object' as const, properties: { n: { type } }, required: ['n'] });
    const both: Case[] = [
      { spec: { name: 'by_number', inputSchema: schema('number') }, calls: ['{"n":1}', '{"n":"one"}'] },
      { spec: { name: 'by_string', inputSchema: schema('string') }, calls: ['{"n":"one"}', '{"n":1}'] },
    ];
    const answers = async (engine: Engine) => {
      const seen: string[] = [];
      for (const c of both) for (const args of c.calls) {
        const result = await engine.run(c.spec.name, JSON.parse(args), { caller: 'test' });
        seen.push(`${c.spec.name} ${args} → ${result.ok ? 'ok' : result.error.message}`);
      }
      return seen;
    };
    const expected = ['by_number {"n":1} → ok', 'by_number {"n":"one"} → invalid arguments: args.n must be number', 'by_string {"n":"one"} → ok', 'by_string {"n":1} → invalid arguments: args.n must be string'];
    freshCache();
    expect(await withEngine(await saved(both), answers)).toEqual(expected);
    // With nowhere to keep them (a folder others may write), each is compiled in the process.
    const blocked = join(tempDir('callable-cache-'), 'callable-studio', 'validators');
    mkdirSync(blocked, { recursive: true });
    chmodSync(blocked, 0o777);
    process.env.XDG_CACHE_HOME = join(blocked, '../..');
    expect(await withEngine(await saved(both), answers)).toEqual(expected);
  });

  it('once kept, the first check of a saved schema in a new process loads neither ajv nor its compiler', () => {
    const folder = freshCache();
    const script = `
      import { createRequire } from 'node:module';
      import { SchemaValidator } from ${JSON.stringify(join(REPO, 'src-main/engine/functions/schemas.ts'))};
      import { keepValidators, useStoredValidators } from ${JSON.stringify(join(REPO, 'src-main/engine/functions/validatorCache.ts'))};
      const record = { name: 'plain', inputSchema: ${JSON.stringify(CASES[0]!.spec.inputSchema)} };
      if (process.argv[1] === 'save') keepValidators(record);
      else {
        useStoredValidators(record);
        const problem = new SchemaValidator().checkStored(record.inputSchema, { text: 1 }, "plain's inputSchema", 'args');
        const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => /ajv[\\\\/]dist[\\\\/](?:core|2020|ajv|compile)/.test(file));
        process.stdout.write(JSON.stringify({ problem, loaded }));
      }
    `;
    const run = (arg: string) => spawnSync(process.execPath, ['--input-type=module', '-e', script, arg], { env: process.env, encoding: 'utf8' });
    const save = run('save');
    expect(save.status, save.stderr).toBe(0);
    expect(entries(folder)).toHaveLength(1);
    const check = run('check');
    expect(check.status, check.stderr).toBe(0);
    expect(JSON.parse(check.stdout)).toEqual({ problem: 'args.n is required; args.text must be string', loaded: [] });
  });
});
