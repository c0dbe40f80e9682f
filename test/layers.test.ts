import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The layering of docs/ARCHITECTURE.md, "Layers and the import rule", is the `local/layers` rule of
 * eslint.config.js (eslint-rules/layers.js).
 * These run the repo's real config on snippets placed at paths of each layer. The snippets do not
 * exist on disk, so the type-aware rule (which needs tsconfig's files) is switched off here.
 */
const ROOT = join(import.meta.dirname, '..');
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: {
    plugins: { '@typescript-eslint': tseslint.plugin },
    languageOptions: { parserOptions: { projectService: false } },
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
});

/** Layer violations (and parse failures) ESLint reports for `code` saved as repo path `file`. */
async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, file), warnIgnored: true });
  return result!.messages.filter((m) => m.ruleId === 'local/layers' || m.ruleId === null).map((m) => m.message);
}

const forbidden: [string, string, string][] = [
  // [importing file, import statement, why it matters]
  ['src-main/engine/store/x.ts', "import { app } from 'electron';", 'the engine runs under plain Node'],
  ['src-main/engine/index.ts', "import { ToolServer } from '../mcp/server.ts';", 'MCP is a client of the engine'],
  ['src-main/engine/index.ts', "export { McpHttpHost } from '../mcp/httpHost.ts';", 'not even re-exported'],
  ['src-main/engine/index.ts', "const http = await import('../mcp/http.ts');", 'not even lazily'],
  ['src-main/engine/functions/x.ts', "import { ToolServer } from '../../mcp/server.ts';", 'no engine file imports src-main/mcp'],
  ['src-main/engine/functions/x.ts', "import { main } from '../../app/main.ts';", 'the engine never imports the app'],
  ['src-main/engine/functions/x.ts', "import { runCli } from '../../cli/index.ts';", 'nor the CLI'],
  ['src-main/engine/functions/x.ts', "import type { StudioApi } from '../../../src-preload/contract.ts';", 'nor the preload'],
  ['src-main/engine/functions/x.ts', "import { x } from '../../engineProcess/main.ts';", 'nor the engine process'],
  ['src-main/engine/model/x.ts', "import { readFileSync } from 'node:fs';", 'the model is pure'],
  ['src-main/engine/model/x.ts', "import { join } from 'path';", 'bare builtins too'],
  ['src-main/engine/model/x.ts', "import { nowIso } from '../store/database.ts';", 'the model imports no other layer'],
  ['src-main/sandboxHost/x.ts', "import Database from 'better-sqlite3';", 'the sandbox host holds no DB'],
  ['src-main/sandboxHost/x.ts', "const { Entry } = require('@napi-rs/keyring');", 'nor the keychain'],
  ['src-main/sandboxHost/x.ts', "import { openDatabase } from '../engine/store/database.ts';", 'nor engine internals'],
  ['src-main/sandboxHost/x.ts', "import { HostProcess } from '../engine/sandbox/hostProcess.ts';", 'of engine/sandbox only the shared protocol'],
  ['src-main/sandboxHost/x.ts', "import { Engine } from '../engine/index.ts';", 'nor the facade'],
  ['src-main/engine/sandbox/x.ts', "import { SandboxExecutor } from '../../sandboxHost/executor.ts';", 'the engine spawns the sandbox host, it imports none of it'],
  ['src-main/mcp/x.ts', "import { nowIso } from '../engine/store/database.ts';", 'MCP reaches the engine through its facade'],
  ['src-main/mcp/x.ts', "import { writeDeployment } from '../deploy/generate.ts';", 'clients sit side by side: MCP does not import deploy'],
  ['src-main/engine/functions/x.ts', "import { writeDeployment } from '../../deploy/generate.ts';", 'the engine never imports deploy'],
  ['src-main/deploy/x.ts', "import { nowIso } from '../engine/store/database.ts';", 'deploy reaches the engine through its facade'],
  ['src-main/deploy/workers/x.js', "import { KEYCHAIN_SERVICE } from '../../engine/credentials/secretStore.ts';", 'a Worker bundles the pure redaction, not the keychain'],
  ['src-main/engineProcess/x.ts', "import { ipcMain } from 'electron';", 'the engine process loads no Electron'],
  ['src-main/engineProcess/x.ts', "import { openDatabase } from '../engine/store/database.ts';", 'only the facade'],
  ['src-main/engineProcess/x.ts', "import { main } from '../app/main.ts';", 'the app relays to the engine process, not back'],
  ['src-main/cli/x.ts', "import { openDatabase } from '../engine/store/database.ts';", 'the CLI uses the facade'],
  ['src-main/cli/x.ts', "import { app } from 'electron';", 'the CLI runs under plain Node'],
  ['src-main/app/x.ts', "import { createEngine } from '../engine/index.ts';", 'Electron main loads no engine code'],
  ['src-main/app/x.ts', "import { type Engine } from '../engine/index.ts';", 'an inline type import still loads it'],
  ['src-main/app/x.ts', "const engine = await import('../engine/index.ts');", 'nor lazily'],
  ['src-main/app/x.ts', "import { openDatabase } from '../engine/store/database.ts';", 'nor engine internals'],
  ['src-main/app/x.ts', "import { runCli } from '../cli/index.ts';", 'nor the CLI'],
  ['src-main/app/x.ts', "import Database from 'better-sqlite3';", 'no native module in Electron main'],
  ['src-main/app/x.ts', "import ivm from 'isolated-vm';", 'no native module in Electron main'],
  ['src-main/app/x.ts', "import { build } from 'esbuild';", 'no native module in Electron main'],
  ['src-preload/bridge.ts', "import { ipcRenderer } from 'electron';", 'only the preload entry touches Electron'],
  ['src-preload/x.ts', "import { readFileSync } from 'node:fs';", 'a sandboxed preload has no Node'],
  ['src-preload/x.ts', "import { createEngine } from '../src-main/engine/index.ts';", 'the preload sees only the model'],
  ['src-renderer/src/x.ts', "import { createEngine } from '../../src-main/engine/index.ts';", 'the renderer knows only window.studio'],
  ['src-renderer/src/x.ts', "import type { RunResult } from '../../src-main/engine/model/index.ts';", 'the model through src-preload/model.ts'],
  ['src-renderer/src/x.ts', "import { contract } from '../../src-preload/contract.ts';", 'the contract as types only'],
  ['src-renderer/src/x.ts', "import { buildStudio } from '../../src-preload/bridge.ts';", 'not the bridge'],
  ['src-renderer/src/x.tsx', "import { ipcRenderer } from 'electron';", 'no Electron in the renderer'],
  ['src-renderer/src/x.ts', "import { readFileSync } from 'node:fs';", 'no Node in the renderer'],
];

const allowed: [string, string][] = [
  ['src-main/engine/index.ts', "import { openDatabase } from './store/database.ts';"],
  ['src-main/engine/functions/x.ts', "import { StudioError } from '../model/index.ts';"],
  ['src-main/engine/sandbox/x.ts', "import { fork } from 'node:child_process';"],
  ['src-main/engine/model/x.ts', "import { z } from 'zod';\nimport type { ErrorInfo } from './errors.ts';"],
  ['src-main/sandboxHost/x.ts', "import ivm from 'isolated-vm';\nimport { randomBytes } from 'node:crypto';"],
  ['src-main/sandboxHost/x.ts', "import { encodeFrame } from '../engine/sandbox/protocol.ts';\nimport { StudioError } from '../engine/model/index.ts';\nimport { pureHostOp } from './bridge.ts';"],
  ['src-main/sandboxHost/x.ts', "import { privateDir } from '../engine/userCache.ts';"],
  ['src-main/mcp/x.ts', "import { createEngine } from '../engine/index.ts';\nimport { StudioError } from '../engine/model/index.ts';\nimport { ToolServer } from './server.ts';"],
  ['src-main/engineProcess/x.ts', "import { createEngine } from '../engine/index.ts';\nimport { serveMcpStdio } from '../mcp/stdio.ts';\nimport { contract } from '../../src-preload/contract.ts';"],
  ['src-main/cli/x.ts', "import { createEngine } from '../engine/index.ts';\nimport { serveMcpStdio } from '../mcp/stdio.ts';\nimport { parse } from './common.ts';"],
  ['src-main/cli/x.ts', "import { writeDeployment } from '../deploy/generate.ts';"],
  ['src-main/deploy/x.ts', "import { createEngine } from '../engine/index.ts';\nimport { hostMatches } from '../engine/model/hosts.ts';\nimport { originAllowed } from '../mcp/httpOrigin.ts';"],
  ['src-main/deploy/workers/x.js', "import { Redactor } from '../../engine/credentials/redact.ts';"],
  ['src-main/app/x.ts', "import { app } from 'electron';\nimport { join } from 'node:path';\nimport { contract } from '../../src-preload/contract.ts';\nimport { isTrustedSender } from './senders.ts';"],
  ['src-main/app/x.ts', "import type { Engine } from '../engine/index.ts';\nimport type { RunResult } from '../engine/model/index.ts';\nimport type { StudioPort } from '../engineProcess/port.ts';"],
  ['src-preload/index.ts', "import { contextBridge } from 'electron';\nimport { buildStudio } from './bridge.ts';"],
  ['src-preload/contract.ts', "import { z } from 'zod';\nimport { FunctionSpecSchema } from '../src-main/engine/model/index.ts';"],
  ['src-renderer/src/x.tsx', "import { useState } from 'react';\nimport type { StudioApi } from '../../src-preload/contract.ts';\nimport { specOf } from '../../src-preload/model.ts';\nimport { app } from './store/app.ts';"],
  ['test/engine/x.test.ts', "import Database from 'better-sqlite3';\nimport { openDatabase } from '../../src-main/engine/store/database.ts';\nimport { app } from 'electron';"],
];

describe('layering (eslint-rules/layers.js)', () => {
  it.each(forbidden)('%s: `%s` is reported (%s)', async (file, code) => {
    const found = await problems(file, code);
    expect(found).toHaveLength(1);
  });

  it.each(allowed)('%s: `%s` is allowed', async (file, code) => {
    expect(await problems(file, code)).toEqual([]);
  });

  it('names the layer, the import and what is allowed', async () => {
    const [message] = await problems('src-main/sandboxHost/x.ts', "import Database from 'better-sqlite3';");
    expect(message).toContain("Layer 'sandboxHost' (src-main/sandboxHost/**)");
    expect(message).toContain("'better-sqlite3'");
    expect(message).toContain('Allowed: paths src-main/sandboxHost/**, src-main/engine/sandbox/protocol.ts, src-main/engine/userCache.ts, src-main/engine/model/**');
    expect(message).toContain('npm only isolated-vm, zod');
  });

  it('a new folder under src-main must be given a layer', async () => {
    expect(await problems('src-main/misc/x.ts', 'export const x = 1;')).toEqual([
      "'src-main/misc/x.ts' belongs to no layer: add its folder to LAYERS in eslint-rules/layers.js.",
    ]);
  });
});

describe('import cycles (import-x/no-cycle)', () => {
  // The cycle rule follows imports on disk, so both modules are real files (in a temporary folder under test/, removed afterwards).
  const dir = mkdtempSync(join(ROOT, 'test', '.cycle-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reports two modules that import each other', async () => {
    writeFileSync(join(dir, 'a.ts'), "import { b } from './b.ts';\nexport const a = () => b;\n");
    writeFileSync(join(dir, 'b.ts'), "import { a } from './a.ts';\nexport const b = () => a;\n");
    writeFileSync(join(dir, 'c.ts'), "import { b } from './b.ts';\nexport const c = () => b;\n");
    const [a, c] = await eslint.lintFiles([join(dir, 'a.ts'), join(dir, 'c.ts')]);
    expect(a!.messages.map((m) => m.ruleId)).toEqual(['import-x/no-cycle']);
    expect(c!.messages, basename(c!.filePath)).toEqual([]);
  });
});
