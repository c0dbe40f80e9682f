// A large catalog: `callable mcp` serving 1,000 functions beside the plain SDK server listing 1,000
// tools (plainServer.ts catalog N), both with the echo's schema. Each start (rotating) is timed
// from spawn to the first tools/list answer, then tools/list is asked again and timed.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { stop as stopEsbuild } from 'esbuild';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { ECHO_INPUT_SCHEMA } from './fixture.ts';
import { plainStdioMode, productStdio, startStdio, type CallOutcome } from './targets.ts';

export const CATALOG_SIZE = 1000;

export interface CatalogResult {
  /** Spawn → first tools/list (ms), per start: [product, plain]. */
  startup: [number[], number[]];
  /** tools/list after start-up: [product, plain]. */
  list: [CallOutcome[], CallOutcome[]];
  /** How long saving the functions took (ms). */
  seedMs: number;
}

/** Saves CATALOG_SIZE echo functions, each with its own source (its own compiled script). */
export async function seedCatalog(dataDir: string): Promise<number> {
  const started = performance.now();
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    for (let k = 0; k < CATALOG_SIZE; k++) {
      await engine.saveFunction({
        spec: { name: `fn_${String(k).padStart(4, '0')}`, description: 'Echoes text and doubles n.', inputSchema: ECHO_INPUT_SCHEMA },
        source: `export default ({ text, n }) => ({ echo: text, n: n * 2, k: ${k} })`,
      });
    }
  } finally {
    engine.close();
  }
  await stopEsbuild();
  return performance.now() - started;
}

export async function catalogComparison(dataDir: string, cfg: { starts: number; listsPerStart: number; gapMs: number; maxMs: number }): Promise<CatalogResult> {
  const seedMs = await seedCatalog(dataDir);
  const specs = [{ ...productStdio(dataDir), key: 'product-catalog', label: `callable mcp (${CATALOG_SIZE} functions)` }, plainStdioMode('catalog', [String(CATALOG_SIZE)])];
  const startup: [number[], number[]] = [[], []];
  const list: [CallOutcome[], CallOutcome[]] = [[], []];
  const until = performance.now() + cfg.maxMs;
  for (let rep = 0; rep < cfg.starts && performance.now() < until; rep++) {
    for (let k = 0; k < specs.length; k++) {
      const which = (rep + k) % specs.length;
      const t = await startStdio(specs[which]!, 60_000);
      try {
        if (t.toolNames.length !== CATALOG_SIZE) throw new Error(`${t.label} lists ${t.toolNames.length} tools, not ${CATALOG_SIZE}`);
        startup[which]!.push(t.startupMs);
        for (let j = 0; j < cfg.listsPerStart; j++) {
          await sleep(cfg.gapMs);
          list[which]!.push(await t.list(CATALOG_SIZE));
        }
      } finally {
        await t.close();
      }
      await sleep(50);
    }
  }
  return { startup, list, seedMs };
}
