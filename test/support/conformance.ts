// The official MCP conformance client (`conformance server`) against a real `callable serve`.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { REPO, startServe, type ServeProcess } from './callable.ts';

/**
 * `callable serve` as the conformance client needs it: no Authorization header (its
 * dns-rebinding scenario sends the server's own origin, accepted without --allow-origin). `url` is
 * the localhost form of the server's address.
 */
export async function serveForConformance(dataDir: string): Promise<{ serve: ServeProcess; url: string }> {
  const serve = await startServe(dataDir, ['--no-auth', '--port', '0']);
  return { serve, url: serve.url.replace('127.0.0.1', 'localhost') };
}

/**
 * For the calling test file: a data folder holding `functions`, served by `callable serve` as the
 * conformance client needs it (see serveForConformance) before the tests, stopped and removed after.
 */
export function conformanceServe(functions: Array<{ spec: Record<string, unknown>; source: string }>): { serve: ServeProcess; url: string } {
  const session = {} as { serve: ServeProcess; url: string };
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'callable-conformance-'));
    const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
    try {
      for (const fn of functions) await engine.saveFunction({ spec: fn.spec as never, source: fn.source });
    } finally {
      engine.close();
    }
    Object.assign(session, await serveForConformance(dataDir));
  });
  afterAll(async () => {
    await session.serve?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return session;
}

export interface ConformanceCheck {
  id: string;
  status: string;
}

/** Runs one scenario against `url`: the client's exit code, its output, and every check it wrote. */
export async function runConformance(url: string, scenario: string): Promise<{ code: number | null; output: string; checks: ConformanceCheck[] }> {
  const out = mkdtempSync(join(tmpdir(), 'conformance-out-'));
  try {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(join(REPO, 'node_modules/.bin/conformance'), ['server', '--url', url, '--scenario', scenario, '-o', out], { cwd: REPO });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      child.on('exit', (exitCode) => resolve({ code: exitCode, output }));
    });
    const checks = filesUnder(out)
      .filter((f) => f.endsWith('checks.json'))
      .flatMap((f) => JSON.parse(readFileSync(f, 'utf8')) as ConformanceCheck[]);
    return { code, output, checks };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}
