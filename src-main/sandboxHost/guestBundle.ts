// The guest runtime (src-main/sandboxHost/guest/) as the one script each fresh isolated-vm context
// evaluates: an esbuild bundle whose completion value is `callablePrelude`, with nothing left on the
// context's global object (its two large npm packages are kept after it, evaluated on first use
// from the host's one copy: sharedPackages). Built once per guest version and user, then read from a
// private cache folder; the sandbox host builds or reads it at start, so no call waits for it.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions, BuildResult, TransformOptions } from 'esbuild';
import { privateDir, userCacheFolder } from '../engine/userCache.ts';

const GUEST_DIR = fileURLToPath(new URL('./guest/', import.meta.url));
const ROOT = path.resolve(GUEST_DIR, '../../..');
/** The bundle's own name, local to the wrapper function (never a global of the context). */
const BUNDLE_NAME = '__callableGuest';
export const GUEST_BUILD_OPTIONS = {
  entryPoints: [path.join(GUEST_DIR, 'index.js')],
  absWorkingDir: ROOT,
  bundle: true,
  write: false,
  metafile: true,
  format: 'iife',
  globalName: BUNDLE_NAME,
  platform: 'neutral',
  // Packages are taken in their browser/ESM builds: the isolate has no Node.
  mainFields: ['browser', 'module', 'main'],
  conditions: ['browser'],
  // V8 of isolated-vm 7 (Node 24) runs ES2024 as written. Written unminified (guestScript rewrites
  // esbuild's layout), then minified by MINIFY_OPTIONS.
  // ASCII (other characters escaped): a source with one character past Latin-1 is held as two bytes
  // a character, in every isolate (some 400 KiB more per warm function).
  target: 'es2024',
  charset: 'ascii',
  legalComments: 'none',
  logLevel: 'silent',
} satisfies BuildOptions;
/**
 * How the rewritten bundle is minified: every isolate holds the script's whole source (a copy per
 * isolate), so its whitespace and comments are dropped (some 150 KiB a warm function). Whitespace
 * only: identifiers are kept, so guest stack frames keep their function names and what the runtime
 * installs keeps its `name` (esbuild's keepNames would set them again in every fresh context), and
 * esbuild's syntax minification drops the names of function expressions (`reportError.name`).
 */
export const MINIFY_OPTIONS = {
  minifyWhitespace: true,
  target: 'es2024',
  charset: 'ascii',
  legalComments: 'none',
  logLevel: 'silent',
} satisfies TransformOptions;
/** The first line of a cached bundle: what else it was built from, each file with its SHA-256. */
const INPUTS_PREFIX = '// callable guest inputs: ';

const require = createRequire(import.meta.url);

export interface GuestBuild {
  /** The script: its completion value is callablePrelude(hostSync, hostStart) -> the context's entry point (guest/index.js). */
  source: string;
  /** 'cache': read from the cache folder; 'build': built now (and cached when the folder allows it). */
  from: 'cache' | 'build';
}

let memo: string | undefined;

/** The guest script, memoized for this process (built or read from the user's cache on first use). */
export function guestSource(): string {
  memo ??= loadGuest(defaultCacheDir()).source;
  return memo;
}

/** The user's guest cache folder (callable-studio/guest in the user's cache folder, userCache.ts). */
export function defaultCacheDir(): string | undefined {
  return userCacheFolder('guest'); // undefined: no home folder, so built in memory
}

/**
 * The guest script from `cacheDir` when a valid entry is there, else built now and written there
 * atomically. An entry is named <key>.<sha256 of its content>.js (the key hashes the guest sources,
 * esbuild's version and the build options, which include this copy's folder) and is used only when its content still has that hash
 * and every package file it bundled still has the hash its first line records. A folder that is
 * missing and cannot be made, or is not private to this user, is not used: the build stays in memory.
 */
export function loadGuest(cacheDir: string | undefined): GuestBuild {
  const key = sourceKey();
  const dir = cacheDir !== undefined && privateDir(cacheDir) ? cacheDir : undefined;
  if (dir !== undefined) {
    const cached = readEntry(dir, key);
    if (cached !== undefined) return { source: cached, from: 'cache' };
  }
  const source = buildGuest();
  if (dir !== undefined) writeEntry(dir, key, source);
  return { source, from: 'build' };
}

/**
 * The package.json of an npm package as Node resolves it from here: the first node_modules/<name>
 * up the folders (a require() would first start Node's CommonJS loader: 10 to 60 ms at host start).
 */
function packageJson(name: string): string {
  for (let dir = GUEST_DIR; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'node_modules', name, 'package.json');
    if (fs.existsSync(file)) return file;
    if (path.dirname(dir) === dir) return require.resolve(`${name}/package.json`);
  }
}

function sha256(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Hash of everything under guest/ (names and contents), esbuild's version, the build and minify options and how the output is rewritten. */
function sourceKey(): string {
  const hash = createHash('sha256');
  const esbuildVersion = (JSON.parse(fs.readFileSync(packageJson('esbuild'), 'utf8')) as { version: string }).version;
  // The options name this copy's folder: each installed copy has its own entry (its npm files are the ones checked).
  hash.update(
    `esbuild ${esbuildVersion}\0${JSON.stringify(GUEST_BUILD_OPTIONS)}\0${JSON.stringify(MINIFY_OPTIONS)}\0${JSON.stringify(MODULE_HELPERS.map(([, replacement]) => replacement))}\0${exportsInInitializers.toString()}\0${plainInitializers.toString()}\0${ownModuleObjects.toString()}\0${guestScript.toString()}\0${sharedPackages.toString()}\0${dataParts.toString()}\0${isDataLiteral.toString()}\0${DATA_MODULE.source}\0${PART_LOADER}${PART_RETURN}\0`,
  );
  const files = (fs.readdirSync(GUEST_DIR, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath, d.name))
    .sort();
  for (const file of files) hash.update(`${path.relative(GUEST_DIR, file)}\0`).update(fs.readFileSync(file)).update('\0');
  return hash.digest('hex').slice(0, 32);
}

/** Bundles the guest runtime into the script the isolate evaluates (esbuild's service; about 100 ms). */
export function buildGuest(): string {
  const esbuild = require('esbuild') as typeof import('esbuild');
  return guestScript(esbuild.buildSync(GUEST_BUILD_OPTIONS));
}

/**
 * The script of an esbuild result built with GUEST_BUILD_OPTIONS: its first line records the npm
 * files it bundled with their hashes (checked when a cache entry is read); a function wrapper keeps
 * the bundle's `var` local, so the completion value is callablePrelude and no global is left. The
 * large npm packages it loads on first use follow the script as comment lines (see sharedPackages):
 * the script still runs as it is, and a host compiles only the part before them (splitGuest).
 */
export function guestScript(result: BuildResult<{ metafile: true; write: false }>): string {
  const inputs: Record<string, string> = {};
  for (const input of Object.keys(result.metafile.inputs)) {
    const file = path.resolve(ROOT, input);
    if (input !== '<stdin>' && !file.startsWith(GUEST_DIR)) inputs[file] = sha256(fs.readFileSync(file));
  }
  const { bundle, parts } = sharedPackages(ownModuleObjects(result.outputFiles[0]!.text));
  const head = `${INPUTS_PREFIX}${JSON.stringify(inputs)}\n(function () {\n`;
  if (parts.length === 0) return `${head}${minified(bundle)}return ${BUNDLE_NAME}.callablePrelude;\n})()\n`;
  // After the bundle's "use strict" directive, which makes the whole wrapper strict.
  const code = minified(bundle).replace(/^(?:"use strict";)?/, (directive) => `${directive}\n${PART_LOADER}`);
  return `${head}${code}${PART_RETURN}\n})()\n${parts.map((part) => `${PART_PREFIX}${JSON.stringify(part)}\n`).join('')}`;
}

/** A package the guest evaluates from the host's one copy of its source (GuestCode.part): `source` evaluates to its module function. */
export interface GuestPart {
  /** Its name in stack traces: callable:<package path>. */
  name: string;
  source: string;
}

/** The host operation the guest script asks for a part with: hostSync(GUEST_PART_OP, index) -> its source. */
export const GUEST_PART_OP = 'guestPart';
const PART_PREFIX = '//# callable guest part ';
/** A CommonJS package body smaller than this stays in the script (not worth an evaluation of its own). */
const PART_MIN_BYTES = 8192;
/**
 * Put before the bundle when it has parts: `__guestPart(index, exports, module)` runs part `index`
 * as the package's CommonJS body. `eval` and `Reflect.apply` are taken when the script runs in a
 * fresh context, before any function code (which may replace them later); the source comes from
 * the host, the guest only names the part. An indirect eval: the part sees globals only, as the
 * package did inside the bundle, and V8 compiles it once per isolate (a later context reuses it).
 * The part's function is strict, as the whole wrapper is (the bundle begins with "use strict").
 */
const PART_LOADER = [
  'var __partEval = eval, __partApply = Reflect.apply, __partHost;',
  `var __guestPart = (index, exports, module) => __partApply(__partEval(__partApply(__partHost, undefined, ["${GUEST_PART_OP}", index])), undefined, [exports, module]);`,
  '',
].join('\n');
/** The completion value when there are parts: callablePrelude, keeping hostSync for __guestPart. */
const PART_RETURN = `return (hostSync, hostStart) => (__partHost = hostSync, ${BUNDLE_NAME}.callablePrelude(hostSync, hostStart));`;

/** A CommonJS module as esbuild writes it: `var require_x = __commonJS({ "node_modules/…"(exports, module) { body } });`. */
const CJS_MODULE = /^ {2}var (require_\w+) = __commonJS\(\{\n {4}"(node_modules\/[^"\n]+)"\((exports(?:, module)?)\) \{\n((?:.*\n)*?) {4}\}\n {2}\}\);$/gm;

/**
 * Every isolate holds its own copy of the script's source (isolated-vm copies it per compile), and
 * most of it is two npm packages only web streams and compression use (web-streams-polyfill and
 * fflate, some 110 KiB minified). Each CommonJS package body of PART_MIN_BYTES or more that refers
 * to nothing of the bundle's own (esbuild's helpers, other modules: checked by name) is taken out of
 * the script: its wrapper calls __guestPart instead, which evaluates the body from the host's single
 * copy (an external string V8 does not copy), only in the isolates that use it. Left in the script
 * if anything does not fit (another esbuild layout, a name of ours already taken).
 */
function sharedPackages(bundle: string): { bundle: string; parts: GuestPart[] } {
  if (/\b__(?:guestPart|partEval|partApply|partHost)\b/.test(bundle)) return { bundle, parts: [] };
  const helpers = [...bundle.matchAll(/^ {2}var (__\w+) = /gm)].map(([, name]) => name!);
  const glue = new RegExp(`\\b(?:require_\\w+|init_\\w+|\\w+_exports${helpers.map((h) => `|${h}`).join('')})\\b`);
  const parts: GuestPart[] = [];
  const out = bundle.replace(CJS_MODULE, (whole, name: string, file: string, params: string, body: string) => {
    if (body.length < PART_MIN_BYTES || glue.test(body)) return whole;
    let source: string;
    try {
      // Strict, as it was inside the bundle. The function, not the script: V8 never finds a strict
      // eval script in its eval cache (each context would compile the part again).
      source = minified(`(function ${name}(${params}) {\n"use strict";\n${body}})`);
    } catch {
      return whole;
    }
    parts.push({ name: `callable:${file.slice('node_modules/'.length)}`, source });
    const args = params === 'exports' ? 'exports' : 'exports, module';
    return `  var ${name} = __commonJS({\n    ${JSON.stringify(file)}(${params}) {\n      __guestPart(${parts.length - 1}, ${args});\n    }\n  });`;
  });
  return { bundle: dataParts(out, parts), parts };
}

/** A guest module whose initializer only sets one export to a function returning a literal: `name = () => (literal);`. */
const DATA_MODULE = /^( {2}var init_(\w+) = \(\) => \{\n {4}init_\2 = __esmDone;\n {4}try \{\n {6}\w+ = \(\) => )\(\n((?:.*\n)*?) {6}\);\n( {4}\} catch \(error\) \{)$/gm;

/**
 * The same for a guest module of data only (legacyEncodings.js: the single-byte encodings' tables,
 * 23 KiB, read by a decoder of one of them): its literal becomes a part, which each call of the
 * function evaluates (a fresh object each time, as before).
 */
function dataParts(bundle: string, parts: GuestPart[]): string {
  return bundle.replace(DATA_MODULE, (whole, head: string, module: string, literal: string, tail: string) => {
    if (literal.length < PART_MIN_BYTES || !isDataLiteral(literal)) return whole;
    let source: string;
    try {
      source = minified(`(function ${module}() {\n"use strict";\nreturn (\n${literal});\n})`);
    } catch {
      return whole;
    }
    parts.push({ name: `callable:${module}.js`, source });
    return `${head}__guestPart(${parts.length - 1});\n${tail}`;
  });
}

/** Whether `text` is a literal of objects, arrays, strings, numbers, true, false and null (comments aside), which refers to nothing. */
function isDataLiteral(text: string): boolean {
  const bare = text.replace(/\/\*[^]*?\*\/|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'/g, ' ');
  return /^(?:\s|[{}[\],:]|-?\d[\d.eE+-]*|true|false|null|[A-Za-z_$][\w$]*(?=\s*:))*$/.test(bare);
}

/** A guest text (guestScript) as the script an isolate compiles and the parts that follow it. */
export function splitGuest(text: string): { script: string; parts: GuestPart[] } {
  const at = text.indexOf(`\n${PART_PREFIX}`);
  if (at < 0) return { script: text, parts: [] };
  const parts = text
    .slice(at + 1)
    .split('\n')
    .filter((line) => line.startsWith(PART_PREFIX))
    .map((line) => JSON.parse(line.slice(PART_PREFIX.length)) as GuestPart);
  return { script: text.slice(0, at + 1), parts };
}

/** The bundle (rewritten) minified by MINIFY_OPTIONS; its top-level `var` keeps its name. */
function minified(bundle: string): string {
  const esbuild = require('esbuild') as typeof import('esbuild');
  return esbuild.transformSync(bundle, MINIFY_OPTIONS).code;
}

/**
 * esbuild's helpers for an ES module loaded with require(): `__export` fills its exports object with
 * one getter per export when the bundle is evaluated (every module, used or not: about 0.15 ms of each
 * fresh context), and `__toCommonJS` copies that object on each require(). Replaced so that the getters
 * are made on the module's first require() and the object itself is given (never a copy): the copy
 * would be made after function code has run, with `Function.prototype.call` and the array iterator,
 * which the function may have replaced to get hold of the runtime's internals.
 */
const MODULE_HELPERS: Array<[RegExp, string]> = [
  [
    /^ {2}var __export = \(target, all\) => \{\n {4}for \(var name in all\)\n {6}__defProp\(target, name, \{ get: all\[name\], enumerable: true \}\);\n {2}\};$/m,
    // Own properties only, never through an assignment or a read: a function may have put an
    // `__exports` accessor on Object.prototype before a module first loads.
    '  var __export = (target, all) => {\n    __defProp(target, "__exports", { __proto__: null, value: all, configurable: true });\n  };',
  ],
  [
    /^ {2}var __toCommonJS = \(mod\) => __copyProps\(__defProp\(\{\}, "__esModule", \{ value: true \}\), mod\);$/m,
    [
      '  var __toCommonJS = (mod) => {',
      '    var own = __getOwnPropDesc(mod, "__exports");',
      '    if (own !== undefined) {',
      '      var all = own.value;',
      '      delete mod.__exports;',
      '      var names = __getOwnPropNames(all);',
      '      for (var i = 0; i < names.length; i++) __defProp(mod, names[i], { __proto__: null, get: all[names[i]], enumerable: true });',
      '    }',
      '    return mod;',
      '  };',
    ].join('\n'),
  ],
];

function ownModuleObjects(bundle: string): string {
  if (!bundle.includes('__toCommonJS')) return bundle;
  let out = bundle;
  for (const [helper, replacement] of MODULE_HELPERS) {
    if (!helper.test(out)) throw new Error(`guest bundle: esbuild's helper ${/var (\w+)/.exec(replacement)![1]} is not the one guestBundle.ts replaces (another esbuild version?)`);
    out = out.replace(helper, replacement);
  }
  // The entry's exports are read once, for callablePrelude: taken from the object __export gave
  // them, not through __toCommonJS (a delete and a property per export in every fresh context).
  out = out.replace(/^ {2}return __toCommonJS\(index_exports\);$/m, '  return { callablePrelude: index_exports.__exports.callablePrelude() };');
  return plainInitializers(exportsInInitializers(out));
}

/** An ES module's initializer as esbuild writes it: `var init_x = __esm({ "path"() { body } });`. */
const ESM_INITIALIZER = /^ {2}var init_(\w+) = __esm\(\{\n {4}"[^"\n]+"\(\) \{\n(?: {6}"use strict";\n)?((?:.*\n)*?) {4}\}\n {2}\}\);$/gm;

/**
 * esbuild's `__esm` wraps each module's initializer in an object, a closure over its state and a
 * lookup of the object's one key, made in every fresh context for every module (most of the runtime's
 * definitions). Written instead as a function that replaces itself before running the module's body
 * (a module reached again while it initializes, or later, runs nothing) and, when the body throws,
 * with one that throws that error again, as `__esm` does. Left as esbuild wrote it if any initializer
 * has another layout.
 */
function plainInitializers(bundle: string): string {
  const out = bundle.replace(
    ESM_INITIALIZER,
    (_, name: string, body: string) =>
      `  var init_${name} = () => {\n    init_${name} = __esmDone;\n    try {\n${body}    } catch (error) {\n      init_${name} = () => {\n        throw error;\n      };\n      throw error;\n    }\n  };`,
  );
  if (out.includes('__esm({')) return bundle;
  return out.replace(/^ {2}var __esm = \(fn, res, err\) => function __init\(\) \{\n(?:.*\n)*? {2}\};$/m, '  var __esmDone = () => {};');
}

/**
 * esbuild writes a lazily loaded module's `__export(x_exports, { name: () => name, … })` at the
 * bundle's top level, so every fresh context makes one getter per export of every such module (a
 * tenth of what installing the runtime costs). Only a require() reads that object, right after
 * running the module's initializer (`(init_x(), __toCommonJS(x_exports))`): the call is moved into
 * the initializer, so the getters are made on the module's first load. A call not followed by its
 * module's initializer (the entry's own exports) stays where it is.
 */
function exportsInInitializers(bundle: string): string {
  const lines = bundle.split('\n');
  const out: string[] = [];
  const waiting = new Map<string, string[]>();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const call = /^ {2}__export\((\w+)_exports, \{$/.exec(line);
    const end = call ? lines.indexOf('  });', i) : -1;
    if (call && end > i && lines.includes(`  var init_${call[1]} = __esm({`, end)) {
      waiting.set(call[1]!, lines.slice(i, end + 1).map((l) => `    ${l}`));
      i = end;
      continue;
    }
    out.push(line);
    const init = /^ {2}var init_(\w+) = __esm\(\{$/.exec(line);
    const moved = init ? waiting.get(init[1]!) : undefined;
    // The initializer's method line, then its "use strict" (a directive must stay first).
    if (moved && /^ {4}"[^"]+"\(\) \{$/.test(lines[i + 1] ?? '')) {
      out.push(lines[++i]!);
      if (lines[i + 1] === '      "use strict";') out.push(lines[++i]!);
      out.push(...moved);
      waiting.delete(init![1]!);
    }
  }
  // Anything not placed (another esbuild layout) goes back as it was written.
  return waiting.size === 0 ? out.join('\n') : bundle;
}

function readEntry(dir: string, key: string): string | undefined {
  for (const { name, hash } of entries(dir).filter((e) => e.key === key)) {
    const file = path.join(dir, name);
    try {
      const content = fs.readFileSync(file, 'utf8');
      if (sha256(content) === hash && inputsUnchanged(content)) {
        // Its modification time says when it was last used (see prune).
        fs.utimesSync(file, new Date(), new Date());
        return content;
      }
      // Altered or stale: never run it, and replace it with a fresh build.
      fs.rmSync(file, { force: true });
    } catch {
      /* unreadable or not removable: rebuilt, and the new entry replaces it */
    }
  }
  return undefined;
}

/** The cache entries in `dir`: <key>.<sha256 of the content>.js. */
function entries(dir: string): Array<{ name: string; key: string; hash: string }> {
  try {
    return fs.readdirSync(dir).flatMap((name) => {
      const match = /^([0-9a-f]{32})\.([0-9a-f]{64})\.js$/.exec(name);
      return match ? [{ name, key: match[1]!, hash: match[2]! }] : [];
    });
  } catch {
    return [];
  }
}

function inputsUnchanged(content: string): boolean {
  const firstLine = content.slice(0, content.indexOf('\n'));
  if (!firstLine.startsWith(INPUTS_PREFIX)) return false;
  const inputs = JSON.parse(firstLine.slice(INPUTS_PREFIX.length)) as Record<string, string>;
  return Object.entries(inputs).every(([file, hash]) => {
    try {
      return sha256(fs.readFileSync(file)) === hash;
    } catch {
      return false;
    }
  });
}

/** Writes the entry under a temporary name, then renames it: a reader sees a whole file or none. */
function writeEntry(dir: string, key: string, source: string): void {
  const final = path.join(dir, `${key}.${sha256(source)}.js`);
  const temporary = path.join(dir, `.${key}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    fs.writeFileSync(temporary, source, { mode: 0o600, flag: 'wx' });
    fs.renameSync(temporary, final);
    prune(dir, key);
  } catch {
    fs.rmSync(temporary, { force: true });
  }
}

/** Other versions kept beside the current one (another installed copy of the app may use them). */
const OTHER_VERSIONS_KEPT = 3;

/** Removes all but the most recently used entries of other guest versions. */
function prune(dir: string, key: string): void {
  const others = entries(dir)
    .filter((e) => e.key !== key)
    .map((e) => ({ file: path.join(dir, e.name), used: fs.statSync(path.join(dir, e.name), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
    .sort((x, y) => y.used - x.used);
  for (const { file } of others.slice(OTHER_VERSIONS_KEPT)) fs.rmSync(file, { force: true });
}
