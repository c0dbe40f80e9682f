// npm packages beside a function, against a real npm and a registry stand-in on 127.0.0.1.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash, createHmac } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, StudioError, type Engine } from '../../src-main/engine/index.ts';
import { testEngine } from '../support/engine.ts';
import { fixtureRegistry, type FixtureRegistry } from '../support/registry.ts';
import { tempDir } from '../support/tmp.ts';

let registry: FixtureRegistry;
let engine: Engine;
const marker = join(tempDir('callable-scripts-'), 'postinstall-ran');

beforeAll(async () => {
  registry = await fixtureRegistry([
    { name: 'greet', version: '1.0.0', files: { 'index.js': 'module.exports = (who) => `hello, ${who}`;' } },
    { name: 'greet', version: '1.2.0', files: { 'index.js': 'module.exports = (who) => `hello there, ${who}`;' } },
    {
      name: 'shout',
      version: '2.0.1',
      dependencies: { greet: '^1.0.0' },
      manifest: { type: 'module', exports: { '.': { worker: './worker.js', node: './node.js', default: './node.js' } } },
      files: { 'worker.js': "import greet from 'greet'; export default (who) => greet(who).toUpperCase();", 'node.js': "import fs from 'node:fs'; export default () => fs;" },
    },
    {
      name: 'has-scripts',
      version: '1.0.0',
      scripts: Object.fromEntries(['preinstall', 'install', 'postinstall', 'prepare'].map((s) => [s, `node -e "require('fs').writeFileSync(${JSON.stringify(marker)}, '${s}')"`])),
      files: { 'index.js': 'module.exports = 42;' },
    },
    { name: 'reads-files', version: '0.3.0', files: { 'index.js': "module.exports = require('./lib/read.js');", 'lib/read.js': "const { readFileSync } = require('fs'); module.exports = (p) => readFileSync(p, 'utf8');" } },
    { name: 'config-loader', version: '1.0.0', dependencies: { 'reads-files': '0.3.0' }, files: { 'index.js': "module.exports = require('reads-files');" } },
    {
      name: 'both-worlds',
      version: '1.0.0',
      manifest: { main: 'index.js', browser: { fs: false, './where.js': './where-web.js' } },
      files: { 'index.js': "const fs = require('fs');\nmodule.exports = () => require('./where.js') + ' ' + typeof fs;", 'where.js': "module.exports = 'node';", 'where-web.js': "module.exports = 'web';" },
    },
    { name: 'leans-on-stray', version: '1.0.0', files: { 'index.js': "module.exports = require('stray');" } },
    {
      // A Node built-in only as a fallback, required inside a try (as @notionhq/client's webhooks.js did crypto).
      name: 'gzip-fallback',
      version: '1.0.0',
      files: {
        'index.js':
          "module.exports = (node) => {\n  if (!node) return typeof globalThis.CompressionStream;\n  try {\n    return require('zlib').gzipSync('x');\n  } catch (error) {\n    return { fallback: 'failed', code: error.code, message: error.message };\n  }\n};",
      },
    },
    { name: 'gzip-after-try', version: '1.0.0', files: { 'index.js': "try { globalThis.CompressionStream; } catch {}\n// try { require('zlib') }\nmodule.exports = require('zlib');" } },
    {
      // As webhook helpers in vendor SDKs sign and check: Node's crypto and Buffer, by require() and by import.
      name: 'signs-webhooks',
      version: '1.0.0',
      files: {
        'index.js': `const crypto = require('crypto');
const { Buffer } = require('buffer');
const failure = (f) => { try { f(); } catch (error) { return { code: error.code, message: error.message }; } };
module.exports = (secret, body, signature) => {
  const mac = crypto.createHmac('sha256', secret).update(body).digest('hex');
  return {
    mac,
    valid: crypto.timingSafeEqual(Buffer.from(mac, 'hex'), Buffer.from(signature, 'hex')),
    hashes: ['md5', 'sha1', 'SHA256', 'sha512'].map((a) => crypto.createHash(a).update(body, 'utf8').digest('base64')),
    hmacOfBytes: crypto.createHmac('sha1', Buffer.from(secret)).update(new TextEncoder().encode(body)).digest().toString('hex'),
    random: [crypto.randomBytes(70000).length, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID())],
    unequalLengths: failure(() => crypto.timingSafeEqual(Buffer.alloc(1), Buffer.alloc(2))),
    twice: failure(() => { const h = crypto.createHash('sha256'); h.digest(); h.digest(); }),
    unknown: failure(() => crypto.createHash('whirlpool')),
    notProvided: failure(() => crypto.createSign('RSA-SHA256')),
  };
};`,
        'esm.mjs': "import crypto, { createHash } from 'node:crypto';\nimport { Buffer } from 'node:buffer';\nexport default (s) => [createHash('sha256').update(s).digest('hex'), crypto.createHmac('sha512', 'k').update(Buffer.from(s)).digest('base64url')];",
      },
    },
    ...['lazy-extra', 'eager-extra'].map((name) => ({
      name,
      version: '1.0.0',
      manifest: { type: 'module', main: 'index.js', peerDependencies: { 'fancy-extra': '*' }, peerDependenciesMeta: { 'fancy-extra': { optional: true } } },
      files: {
        'index.js':
          name === 'lazy-extra'
            ? "export default async () => { try { await import('fancy-extra'); return 'with the extra'; } catch { return 'without the extra'; } };"
            : "import { shine } from 'fancy-extra';\nexport default () => shine();",
      },
    })),
  ]);
  // No retries: the refusals below would otherwise wait out npm's back-off.
  engine = testEngine({ env: { ...process.env, npm_config_registry: registry.url, npm_config_fetch_retries: '0' } });
});
afterAll(() => registry.close());

const packagesDir = (): string => join(engine.dataDir, 'packages');

/** Where npm's cache (cacache) keeps the tarball of this integrity. */
function cachedTarball(integrity: string): string {
  const hex = Buffer.from(integrity.slice('sha512-'.length), 'base64').toString('hex');
  return join(packagesDir(), 'cache', '_cacache', 'content-v2', 'sha512', hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
}

function lockOf(name: string): { packages: Record<string, { version: string; integrity: string }> } {
  return JSON.parse(engine.functions.load(name).compiled.packages!.lock) as never;
}

async function saveWith(name: string, source: string, dependencies: Record<string, string>, lock?: string) {
  return engine.saveFunction({ spec: { name }, source, packages: { dependencies, ...(lock ? { lock } : {}) } });
}

describe('packages beside a function', () => {
  it('installs the packages a function imports, bundles the worker build, and pins exact versions with their integrity', async () => {
    await saveWith('shouter', "import shout from 'shout';\nexport default ({ who }) => shout(who);", { shout: '^2.0.0' });
    expect(await engine.run('shouter', { who: 'ada' }, { caller: 'test' })).toMatchObject({ ok: true, value: 'HELLO THERE, ADA' });
    const lock = lockOf('shouter');
    expect(lock.packages['node_modules/shout']).toMatchObject({ version: '2.0.1', integrity: registry.integrity('shout', '2.0.1') });
    expect(lock.packages['node_modules/greet']).toMatchObject({ version: '1.2.0', integrity: registry.integrity('greet', '1.2.0') });
    expect(engine.functions.load('shouter').compiled.packages).toMatchObject({ dependencies: { shout: '^2.0.0' }, versions: { shout: '2.0.1' }, count: 2 });
  });

  it('gives a second function asking for the same packages the install the first one made, without downloading or unpacking them again', async () => {
    // Without the tarballs in the cache, npm would have to fetch them again to unpack them.
    for (const pkg of ['shout', 'greet']) rmSync(cachedTarball(lockOf('shouter').packages[`node_modules/${pkg}`]!.integrity));
    const before = registry.requests.length;
    await saveWith('shouter_too', "import shout from 'shout';\nexport default ({ who }) => shout(who) + '!';", { shout: '^2.0.0' });
    expect(registry.requests.slice(before).filter((r) => r.endsWith('.tgz'))).toEqual([]);
    expect(engine.functions.load('shouter_too').compiled.packages!.lock).toBe(engine.functions.load('shouter').compiled.packages!.lock);
    expect(await engine.run('shouter_too', { who: 'ada' }, { caller: 'test' })).toMatchObject({ ok: true, value: 'HELLO THERE, ADA!' });
  });

  it('bundles the packages of a data folder reached through a symbolic link', async () => {
    const outer = tempDir();
    mkdirSync(join(outer, 'real'));
    symlinkSync(join(outer, 'real'), join(outer, 'linked'), 'dir');
    const linked = createEngine({ dataDir: join(outer, 'linked'), secrets: new MemorySecretStore(), env: { ...process.env, npm_config_registry: registry.url, npm_config_fetch_retries: '0' } });
    try {
      await linked.saveFunction({ spec: { name: 'linked_greeter' }, source: "import greet from 'greet';\nexport default () => greet('link');", packages: { dependencies: { greet: '1.0.0' } } });
      expect(await linked.run('linked_greeter', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'hello, link' });
    } finally {
      await linked.close();
    }
  });

  it('keeps the locked versions when the source changes, even after a newer version is published', async () => {
    await saveWith('greeter', "import greet from 'greet';\nexport default () => greet('v1');", { greet: '^1.0.0' });
    registry.publish({ name: 'greet', version: '1.9.0', files: { 'index.js': 'module.exports = () => "newer";' } });
    const before = registry.requests.length;
    await engine.saveFunction({ spec: { name: 'greeter' }, source: "import greet from 'greet';\nexport default () => greet('v2');" });
    expect(registry.requests.length).toBe(before);
    expect(await engine.run('greeter', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'hello there, v2' });
    expect(lockOf('greeter').packages['node_modules/greet']!.version).toBe('1.2.0');
  });

  it('saves a function asking for exact versions that another function installed, without npm asking the registry', async () => {
    await saveWith('pinned_one', "import greet from 'greet';\nexport default () => greet('one');", { greet: '1.0.0' });
    // The same packages folder, and a registry that refuses every connection (prefer-online: npm would ask it).
    const dataDir = tempDir();
    symlinkSync(packagesDir(), join(dataDir, 'packages'), 'dir');
    const offline = createEngine({ dataDir, secrets: new MemorySecretStore(), env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_fetch_retries: '0', npm_config_prefer_online: 'true' } });
    try {
      await offline.saveFunction({ spec: { name: 'pinned_two' }, source: "import greet from 'greet';\nexport default () => greet('two');", packages: { dependencies: { greet: '1.0.0' } } });
      expect(await offline.run('pinned_two', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'hello, two' });
      expect(offline.functions.load('pinned_two').compiled.packages!.lock).toBe(engine.functions.load('pinned_one').compiled.packages!.lock);
      // A range is resolved anew: with the registry unreachable, that is one line naming the package.
      await expect(offline.saveFunction({ spec: { name: 'ranged' }, source: "import greet from 'greet';\nexport default () => greet('r');", packages: { dependencies: { greet: '^1.0.0' } } })).rejects.toThrow(/"greet" .*cannot be reached/);
    } finally {
      await offline.close();
    }
  });

  it('resolves a folder imported without a lock once: checking it and saving it take the same lock', async () => {
    // prefer-online (a user's npm setting) has npm ask the registry on every resolution.
    const online = createEngine({ dataDir: tempDir(), secrets: new MemorySecretStore(), env: { ...process.env, npm_config_registry: registry.url, npm_config_fetch_retries: '0', npm_config_prefer_online: 'true' } });
    try {
      const folder = join(tempDir(), 'online_greeter');
      mkdirSync(folder);
      writeFileSync(join(folder, 'function.json'), JSON.stringify({ name: 'online_greeter', description: 'greets', inputSchema: { type: 'object' } }));
      writeFileSync(join(folder, 'index.js'), "import greet from 'greet';\nexport default () => greet('once');");
      writeFileSync(join(folder, 'package.json'), JSON.stringify({ dependencies: { greet: '~1.2.0' } }));
      const before = registry.requests.length;
      await online.importFunctions(folder);
      expect(registry.requests.slice(before).filter((r) => r === '/greet')).toEqual(['/greet']);
      expect(await online.run('online_greeter', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'hello there, once' });
    } finally {
      await online.close();
    }
  });

  it('never runs a package\'s lifecycle scripts', async () => {
    await saveWith('scripted', "import n from 'has-scripts';\nexport default () => n;", { 'has-scripts': '1.0.0' });
    expect(await engine.run('scripted', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 42 });
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses at save a package that imports a Node built-in, naming it and the chain of imports', async () => {
    const error = await saveWith('configured', "import load from 'config-loader';\nexport default () => load('/etc/hostname');", { 'config-loader': '1.0.0' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StudioError);
    expect((error as StudioError).message).toBe(
      'configured: the package "reads-files" imports the Node built-in "fs" (configured.ts → config-loader/index.js → reads-files/index.js → reads-files/lib/read.js → fs), which the sandbox does not provide; use a package made for browsers or workers, or remove it',
    );
    expect(engine.functions.find('configured')).toBeUndefined();
  });

  it("accepts a package's require() of a Node built-in inside a try block, which fails clearly only when it runs", async () => {
    await saveWith('gzips', "import gzip from 'gzip-fallback';\nexport default ({ node }) => gzip(node);", { 'gzip-fallback': '1.0.0' });
    expect(await engine.run('gzips', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'function' });
    expect(await engine.run('gzips', { node: true }, { caller: 'test' })).toMatchObject({
      ok: true,
      value: { fallback: 'failed', code: 'MODULE_NOT_FOUND', message: 'require("zlib"): the sandbox does not provide the Node built-in "zlib"' },
    });
    // A require outside the try (a try in a comment does not count) is still refused at save with its chain.
    await expect(saveWith('gzips_eager', "import gzip from 'gzip-after-try';\nexport default () => gzip;", { 'gzip-after-try': '1.0.0' })).rejects.toThrow(
      'gzips_eager: the package "gzip-after-try" imports the Node built-in "zlib" (gzips_eager.ts → gzip-after-try/index.js → zlib), which the sandbox does not provide; use a package made for browsers or workers, or remove it',
    );
  });

  it("gives packages Node's crypto (hashes, HMACs, randomness, timingSafeEqual) and Buffer, computing as Node does, and names what its crypto lacks", async () => {
    await saveWith('webhook_check', "import check from 'signs-webhooks';\nimport esm from 'signs-webhooks/esm.mjs';\nexport default ({ body, signature }) => ({ ...check('whsec_test', body, signature), esm: esm(body) });", { 'signs-webhooks': '1.0.0' });
    const body = '{"type":"Issue","action":"create","title":"héllo ✓"}';
    const mac = createHmac('sha256', 'whsec_test').update(body).digest('hex');
    const signed = await engine.run('webhook_check', { body, signature: mac }, { caller: 'test' });
    expect(signed).toMatchObject({ ok: true });
    expect((signed as { value: unknown }).value).toEqual({
      mac,
      valid: true,
      hashes: ['md5', 'sha1', 'sha256', 'sha512'].map((a) => createHash(a).update(body, 'utf8').digest('base64')),
      hmacOfBytes: createHmac('sha1', 'whsec_test').update(body).digest('hex'),
      random: [70000, true],
      unequalLengths: { code: 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH', message: 'Input buffers must have the same byte length' },
      twice: { code: 'ERR_CRYPTO_HASH_FINALIZED', message: 'Digest already called' },
      unknown: { code: 'ERR_OSSL_EVP_UNSUPPORTED', message: 'Digest method not supported: "whirlpool" (the sandbox\'s crypto has md5, sha1, sha224, sha256, sha384, sha512)' },
      notProvided: {
        code: 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM',
        message: "crypto.createSign: the sandbox's Node crypto provides only createHash, createHmac, randomBytes, randomUUID, getRandomValues and timingSafeEqual; use crypto.subtle (WebCrypto) for the rest",
      },
      esm: [createHash('sha256').update(body).digest('hex'), createHmac('sha512', 'k').update(body).digest('base64url')],
    });
    const forged = await engine.run('webhook_check', { body, signature: createHmac('sha256', 'another').update(body).digest('hex') }, { caller: 'test' });
    expect(forged).toMatchObject({ ok: true, value: { valid: false } });
  });

  it("follows a package's browser field: a Node file swapped for its web twin, a built-in mapped to false", async () => {
    await saveWith('two_worlds', "import where from 'both-worlds';\nexport default () => where();", { 'both-worlds': '1.0.0' });
    expect(await engine.run('two_worlds', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'web object' });
  });

  it('refuses a dependency a package did not declare, even when a node_modules above the data folder has it', async () => {
    const outer = tempDir();
    mkdirSync(join(outer, 'node_modules', 'stray'), { recursive: true });
    writeFileSync(join(outer, 'node_modules', 'stray', 'package.json'), '{"name":"stray","version":"1.0.0","main":"index.js"}');
    writeFileSync(join(outer, 'node_modules', 'stray', 'index.js'), 'module.exports = "picked up from outside";');
    const inside = createEngine({ dataDir: join(outer, 'data'), secrets: new MemorySecretStore(), env: { ...process.env, npm_config_registry: registry.url, npm_config_fetch_retries: '0' } });
    try {
      await expect(inside.saveFunction({ spec: { name: 'strays' }, source: "import s from 'leans-on-stray';\nexport default () => s;", packages: { dependencies: { 'leans-on-stray': '1.0.0' } } })).rejects.toThrow(
        /"stray" is imported by leans-on-stray\/index\.js but not installed with this function's packages/,
      );
    } finally {
      inside.close();
    }
  });

  it('clears the work folder an install killed an hour ago left, and keeps a recent one', async () => {
    const [old, recent] = [join(packagesDir(), 'tmp-killedlongago'), join(packagesDir(), 'tmp-stillgoing')];
    for (const dir of [old, recent]) mkdirSync(join(dir, 'node_modules'), { recursive: true });
    utimesSync(old, new Date(Date.now() - 2 * 3_600_000), new Date(Date.now() - 2 * 3_600_000));
    await saveWith('sweeper', "import greet from 'greet';\nexport default () => greet('x');", { greet: '1.0.0' });
    expect([existsSync(old), existsSync(recent)]).toEqual([false, true]);
    rmSync(recent, { recursive: true });
  });

  it("leaves a package's guarded import() of an optional dependency that is not installed to fail when it runs, and refuses a static one", async () => {
    await saveWith('lazy', "import extra from 'lazy-extra';\nexport default () => extra();", { 'lazy-extra': '1.0.0' });
    expect(await engine.run('lazy', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'without the extra' });
    await expect(saveWith('eager', "import extra from 'eager-extra';\nexport default () => extra();", { 'eager-extra': '1.0.0' })).rejects.toThrow(
      /^eager-extra\/index\.js:1:23: "fancy-extra" is an optional dependency of eager-extra that it imports as it loads: add it with "callable add eager fancy-extra"$/,
    );
  });

  it('refuses a bare import the function does not list, saying how to add it', async () => {
    await expect(engine.saveFunction({ spec: { name: 'unlisted' }, source: "import greet from 'greet';\nexport default () => greet('x');" })).rejects.toThrow(
      /"greet" is not one of this function's packages: add it with "callable add unlisted greet"/,
    );
  });

  it('names an unknown package and the registry in one line', async () => {
    const error = (await saveWith('ghost', "import g from 'no-such-package';\nexport default () => g;", { 'no-such-package': '^1.0.0' }).catch((e: unknown) => e)) as StudioError;
    expect(error.code).toBe('bad_input');
    expect(error.message).toBe(`ghost: the package "no-such-package" is not in the registry ${registry.url}; check its name (callable remove ghost no-such-package drops it)`);
  });

  it('refuses a tarball whose bytes do not match the integrity the registry published', async () => {
    registry.publish({ name: 'swapped', version: '1.0.0', files: { 'index.js': 'module.exports = "genuine";' } });
    registry.tamper('swapped', '1.0.0');
    const error = (await saveWith('swapper', "import s from 'swapped';\nexport default () => s;", { swapped: '1.0.0' }).catch((e: unknown) => e)) as StudioError;
    expect(error.message).toMatch(/^swapper: the tarball of "swapped" from http:\/\/127\.0\.0\.1:\d+\/ does not match the integrity pinned in package-lock\.json, so nothing was installed/);
    expect(engine.functions.find('swapper')).toBeUndefined();
  });
});

describe('export and import with the lock', () => {
  it('writes package.json and package-lock.json, and imports exactly the locked versions offline from the cache', async () => {
    await saveWith('exported', "import greet from 'greet';\nexport default () => greet('again');", { greet: '~1.2.0' });
    const dir = tempDir();
    const [folder] = engine.exportFunctions(dir, ['exported']);
    expect(JSON.parse(readFileSync(join(folder!, 'package.json'), 'utf8'))).toMatchObject({ dependencies: { greet: '~1.2.0' } });
    const lock = readFileSync(join(folder!, 'package-lock.json'), 'utf8');
    expect(JSON.parse(lock).packages['node_modules/greet']).toMatchObject({ version: '1.2.0', integrity: registry.integrity('greet', '1.2.0') });

    // Without the per-lock install, only the cache can supply the tarball; the registry is asked nothing.
    rmSync(join(packagesDir(), 'installs'), { recursive: true, force: true });
    engine.functions.delete('exported');
    const before = registry.requests.length;
    await engine.importFunctions(folder!);
    expect(registry.requests.slice(before)).toEqual([]);
    expect(await engine.run('exported', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'hello there, again' });
    expect(engine.functions.load('exported').compiled.packages!.lock).toBe(lock);
  });

  it('refuses a cached tarball that was changed on disk, and installs nothing from it', async () => {
    await saveWith('cached', "import s from 'shout';\nexport default () => s('x');", { shout: '2.0.1' });
    const dir = tempDir();
    const [folder] = engine.exportFunctions(dir, ['cached']);
    const content = cachedTarball(lockOf('cached').packages['node_modules/shout']!.integrity);
    const bytes = readFileSync(content);
    bytes[bytes.length - 20]! ^= 0xff;
    writeFileSync(content, bytes);
    rmSync(join(packagesDir(), 'installs'), { recursive: true, force: true });
    engine.functions.delete('cached');
    registry.tamper('shout', '2.0.1');
    // The cache's copy fails its integrity check, so npm fetches it again, and the registry's is tampered too.
    await expect(engine.importFunctions(folder!)).rejects.toThrow(/cached: the tarball of "shout" .* does not match the integrity pinned in package-lock\.json/);
    expect(engine.functions.find('cached')).toBeUndefined();
    expect(readdirSync(packagesDir()).filter((f) => f.startsWith('tmp-'))).toEqual([]);
  });

  it('without the network and without the package in the cache, says so in one line naming the package', async () => {
    const gone = await fixtureRegistry([{ name: 'far-away', version: '3.1.4', files: { 'index.js': 'module.exports = 3;' } }]);
    const env = { ...process.env, npm_config_registry: gone.url, npm_config_fetch_retries: '0' };
    const first = testEngine({ env });
    await first.saveFunction({ spec: { name: 'far' }, source: "import n from 'far-away';\nexport default () => n;", packages: { dependencies: { 'far-away': '^3.0.0' } } });
    const [folder] = first.exportFunctions(tempDir(), ['far']);
    await gone.close();
    const elsewhere = testEngine({ env });
    const error = (await elsewhere.importFunctions(folder!).catch((e: unknown) => e)) as StudioError;
    expect(error.code).toBe('bad_input');
    expect(error.message).toMatch(new RegExp(`^${folder!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: far: the package "far-away" is not in the package cache and the registry ${gone.url.replace(/[.]/g, '\\.')} cannot be reached \\(ECONNREFUSED\\); connect to the network \\(or set npm's registry or proxy\\), then try again$`));
    expect(elsewhere.functions.find('far')).toBeUndefined();
  });
});
