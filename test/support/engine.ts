import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { createEngine, MemorySecretStore, type Engine, type EngineOptions, type FunctionSpecInput } from '../../src-main/engine/index.ts';
import { heldVendor } from './rawHttp.ts';

/** An engine on a fresh data folder, closed and removed after the file's tests. */
export function testEngine(options: Partial<EngineOptions> = {}): Engine {
  const dataDir = mkdtempSync(join(tmpdir(), 'callable-engine-'));
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore(), ...options });
  afterAll(() => {
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return engine;
}

/**
 * Saves a function from its source with sensible defaults for the spec, and grants it the
 * credentials it lists (as the user would; test/cli/grants.test.ts covers functions without grants).
 */
export async function defineFunction(engine: Engine, spec: FunctionSpecInput, source: string) {
  const record = await engine.saveFunction({ spec, source });
  for (const credential of record.credentials) engine.credentials.grant(credential, record.name);
  return record;
}

/** Makes `dir` a data folder holding one function, `echo` ({ text } → { echo: text }); returns `dir`. */
export async function folderWithEcho(dir: string): Promise<string> {
  const engine = createEngine({ dataDir: dir, secrets: new MemorySecretStore() });
  try {
    await engine.saveFunction({ spec: { name: 'echo' }, source: 'export default ({ text }) => ({ echo: text })' });
  } finally {
    engine.close();
  }
  return dir;
}

/**
 * A held vendor (rawHttp heldVendor) and the function `wait_vendor` ({ tag } → the vendor's answer
 * to GET /tag) on `engine`: a tool call that lasts until the test calls `release()`.
 */
export async function waitVendorFunction(engine: Engine): Promise<Awaited<ReturnType<typeof heldVendor>>> {
  const vendor = await heldVendor();
  await defineFunction(
    engine,
    { name: 'wait_vendor', description: 'Waits for the held vendor', allowedHosts: [`127.0.0.1:${vendor.port}`], timeoutMs: 60_000, inputSchema: { type: 'object', properties: { tag: { type: 'string' } } } },
    `export default async ({ tag = 'x' }, ctx) => (await ctx.fetch('http://127.0.0.1:${vendor.port}/' + tag)).text()`,
  );
  return vendor;
}
