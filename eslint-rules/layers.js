/**
 * Local ESLint plugin: the layering of docs/ARCHITECTURE.md, "Layers and the import rule", as a rule,
 * in the spirit of VS Code's `code-layering`. A file's repo path picks its layer (the first row of
 * LAYERS that matches); every import it makes (static, `export … from`, dynamic `import()`,
 * `require()`, `typeof import()`) is classified as a node builtin, an npm package or a repo path,
 * and checked against that row.
 * Imports only go down; folders that do not exist yet are covered as soon as they appear.
 */
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repo root: this file lives in <root>/eslint-rules/. */
const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** npm packages with native code: never loaded by Electron main or the renderer. */
const NATIVE = ['better-sqlite3', 'isolated-vm', '@napi-rs/keyring', 'esbuild'];

const ENGINE_FACADE = 'src-main/engine/index.ts';
const MODEL = 'src-main/engine/model/**';

/**
 * A process or client of the engine: a folder of its own directly under src-main/ that reaches
 * itself, the engine's facade and model, and the paths in `more`; Node builtins, no Electron.
 */
const client = (folder, more = []) => ({
  layer: folder,
  files: `src-main/${folder}/**`,
  paths: [`src-main/${folder}/**`, ENGINE_FACADE, MODEL, ...more],
  builtins: true,
  npm: { except: ['electron'] },
});

/**
 * One row per layer, most specific first.
 * - `paths`: repo paths any import may reach (`dir/**` = anything below dir; else one file).
 * - `typePaths`: paths reachable only with `import type` / `export type`.
 * - `builtins`: whether node builtins (`node:fs`, `fs`) may be imported.
 * - `npm`: `{ only: [...] }` or `{ except: [...] }` package names.
 */
export const LAYERS = [
  {
    layer: 'engine/model',
    files: MODEL,
    paths: [MODEL],
    builtins: false,
    npm: { only: ['zod'] },
  },
  {
    // The library every process below uses; it imports none of them.
    layer: 'engine',
    files: 'src-main/engine/**',
    paths: ['src-main/engine/**'],
    builtins: true,
    npm: { except: ['electron'] },
  },
  {
    // The guest runtime, bundled into every isolate: the language and the web-platform packages it bundles.
    layer: 'sandboxHost/guest',
    files: 'src-main/sandboxHost/guest/**',
    paths: ['src-main/sandboxHost/guest/**'],
    builtins: false,
    npm: { only: ['web-streams-polyfill', 'fflate', '@ungap/structured-clone'] },
  },
  {
    // The sandbox host process executes and holds nothing else: no DB, no keychain, not the facade.
    // It bundles the guest runtime with esbuild when it starts.
    layer: 'sandboxHost',
    files: 'src-main/sandboxHost/**',
    paths: ['src-main/sandboxHost/**', 'src-main/engine/sandbox/protocol.ts', 'src-main/engine/userCache.ts', MODEL],
    builtins: true,
    npm: { only: ['isolated-vm', 'zod', 'esbuild'] },
  },
  client('mcp'),
  // Its Workers bundle pure modules (no facade in workerd): the Origin check, a call's wire arguments, engine modules.
  client('deploy', ['src-main/mcp/httpOrigin.ts', 'src-main/mcp/wireArguments.ts', 'src-main/engine/functions/schemas.ts', 'src-main/engine/net/addresses.ts', 'src-main/engine/credentials/redact.ts', 'src-main/engine/credentials/placeholders.ts']),
  client('engineProcess', ['src-main/mcp/**', 'src-preload/contract.ts']),
  client('cli', ['src-main/mcp/**', 'src-main/deploy/**']),
  {
    // Electron main relays; it loads no engine code and no native module.
    layer: 'app',
    files: 'src-main/app/**',
    // The main↔engine protocol is the boundary both sides share; it imports only zod and the contract.
    paths: ['src-main/app/**', 'src-preload/contract.ts', 'src-main/engineProcess/protocol.ts'],
    typePaths: [ENGINE_FACADE, MODEL, 'src-main/engineProcess/**'],
    builtins: true,
    npm: { except: NATIVE },
  },
  {
    // A sandboxed preload can require only `electron`, and only its entry needs it.
    layer: 'preload (index.ts)',
    files: 'src-preload/index.ts',
    paths: ['src-preload/**', MODEL],
    builtins: false,
    npm: { only: ['electron', 'zod'] },
  },
  {
    layer: 'preload',
    files: 'src-preload/**',
    paths: ['src-preload/**', MODEL],
    builtins: false,
    npm: { only: ['zod'] },
  },
  {
    // The renderer talks to main only through window.studio; it sees the contract's types and the
    // pure model (src-preload/model.ts re-exports it; it is bundled, so values are harmless).
    layer: 'renderer',
    files: 'src-renderer/**',
    paths: ['src-renderer/**', 'src-preload/model.ts'],
    typePaths: ['src-preload/contract.ts'],
    builtins: false,
    npm: { except: ['electron', ...NATIVE] },
  },
  { layer: 'test', files: 'test/**', any: true },
];

/** Folders whose every file must belong to a layer. */
const LAYERED = ['src-main/**', 'src-preload/**', 'src-renderer/**'];

const EXT = /\.(?:[cm]?[jt]sx?)$/;

/** Whether repo path `rel` is matched by `pattern` (see LAYERS); extensions are not significant. */
function matches(rel, pattern) {
  if (pattern.endsWith('/**')) return rel.startsWith(pattern.slice(0, -2));
  const want = pattern.replace(EXT, '');
  const got = rel.replace(EXT, '');
  return got === want || `${got}/index` === want;
}

const some = (patterns, rel) => (patterns ?? []).some((p) => matches(rel, p));

function packageName(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function describe(row) {
  const parts = [`paths ${row.paths.join(', ')}`];
  if (row.typePaths) parts.push(`\`import type\` only from ${row.typePaths.join(', ')}`);
  parts.push(row.builtins ? 'node builtins' : 'no node builtins');
  parts.push(row.npm.only ? `npm only ${row.npm.only.join(', ')}` : `npm except ${row.npm.except.join(', ')}`);
  return parts.join('; ');
}

/**
 * Why `spec`, imported by a file of `row`, breaks the layering (or null when it does not).
 * `typeOnly`: the import is erased at compile time.
 */
function violation(row, fromRel, spec, typeOnly) {
  spec = spec.split('?')[0]; // Vite queries (`?worker`) do not change the target.
  if (spec.startsWith('.') || spec.startsWith('/')) {
    const target = path.relative(ROOT, path.resolve(ROOT, path.dirname(fromRel), spec)).split(path.sep).join('/');
    if (some(row.paths, target)) return null;
    if (some(row.typePaths, target)) {
      return typeOnly ? null : `'${target}' may be imported only with \`import type\` (an inline \`{ type X }\` still loads the module)`;
    }
    return `'${target}' is not a path this layer may reach`;
  }
  if (isBuiltin(spec)) return row.builtins ? null : 'node builtins are not allowed here';
  const name = packageName(spec);
  const ok = row.npm.only ? row.npm.only.includes(name) : !row.npm.except.includes(name);
  return ok ? null : `npm package '${name}' is not allowed here`;
}

/** An import declaration is type-only when written `import type …`; inline `{ type X }` is not. */
const isTypeOnly = (node) => node.importKind === 'type' || node.exportKind === 'type';

const rule = {
  meta: {
    type: 'problem',
    docs: { description: 'Imports only go down the layers of docs/ARCHITECTURE.md (table in eslint-rules/layers.js).' },
    schema: [],
    messages: {
      bad: "Layer '{{layer}}' ({{files}}) may not import '{{spec}}': {{why}}. Allowed: {{allowed}}.",
      orphan: "'{{file}}' belongs to no layer: add its folder to LAYERS in eslint-rules/layers.js.",
    },
  },
  create(context) {
    const fromRel = path.relative(ROOT, context.filename).split(path.sep).join('/');
    const row = LAYERS.find((r) => matches(fromRel, r.files));
    if (!row) {
      if (!some(LAYERED, fromRel)) return {};
      return { Program: (node) => context.report({ node, messageId: 'orphan', data: { file: fromRel } }) };
    }
    if (row.any) return {};

    const check = (node, source, typeOnly) => {
      if (source?.type !== 'Literal' || typeof source.value !== 'string') return; // computed: cannot tell
      const why = violation(row, fromRel, source.value, typeOnly);
      if (why) {
        context.report({
          node: source,
          messageId: 'bad',
          data: { layer: row.layer, files: row.files, spec: source.value, why, allowed: describe(row) },
        });
      }
    };

    return {
      ImportDeclaration: (node) => check(node, node.source, isTypeOnly(node)),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source, isTypeOnly(node)),
      ExportAllDeclaration: (node) => check(node, node.source, isTypeOnly(node)),
      ImportExpression: (node) => check(node, node.source, false),
      TSImportType: (node) => check(node, node.source ?? node.argument?.literal, true),
      CallExpression(node) {
        if (node.callee.type === 'Identifier' && node.callee.name === 'require' && node.arguments.length === 1) {
          check(node, node.arguments[0], false);
        }
      },
    };
  },
};

export default { meta: { name: 'local' }, rules: { layers: rule } };
