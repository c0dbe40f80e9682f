// `callable deploy --target workerd --serve` against `callable serve`, in the same run (issue #13):
// the same echo function, the same client kind (v2 SDK over Streamable HTTP), calls interleaved
// target by target with a 5 ms gap, so machine noise hits both alike. Also times tools/list
// through the gateway: a call minus a list is about what loading the function's fresh isolate
// costs. Called by test/bench/run.ts; alone: `node --no-node-snapshot test/bench/workerd.ts [--quick]`.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createEngine, MemorySecretStore } from '../../src-main/engine/index.ts';
import { freePort, startDeployServe } from '../deploy/support.ts';
import { echoArgs, echoProblem, ECHO_INPUT_SCHEMA, ECHO_SOURCE } from './fixture.ts';
import { median, quantile } from './stats.ts';
import { CLIENT_INFO, startHttp, trackDir } from './targets.ts';

export interface WorkerdFigures {
  workerd_call_p50_ms: number;
  workerd_call_p99_ms: number;
  workerd_list_p50_ms: number;
  serve_call_p50_ms: number;
  serve_call_p99_ms: number;
  /** workerd gateway call p50 over callable serve call p50. */
  workerd_over_serve_p50_ratio: number;
  failures: number;
}

async function timed(fn: () => Promise<unknown>, check: (r: unknown) => string | undefined): Promise<{ ms: number; problem?: string | undefined }> {
  const started = performance.now();
  try {
    const r = await fn();
    return { ms: performance.now() - started, problem: check(r) };
  } catch (error) {
    return { ms: performance.now() - started, problem: error instanceof Error ? error.message : String(error) };
  }
}

function echoChecked(i: number) {
  return (result: unknown): string | undefined => {
    const r = result as { isError?: boolean; content?: Array<{ text?: string }> };
    if (r.isError) return `isError: ${r.content?.[0]?.text}`;
    try {
      return echoProblem(JSON.parse(r.content?.[0]?.text ?? ''), i);
    } catch {
      return 'not JSON';
    }
  };
}

export async function workerdComparison(options: { quick: boolean; progress?: (line: string) => void }): Promise<{ figures: WorkerdFigures; lines: string[] }> {
  const rounds = options.quick ? 60 : 300;
  const dataDir = trackDir(mkdtempSync(join(tmpdir(), 'callable-bench-workerd-')));
  const engine = createEngine({ dataDir, secrets: new MemorySecretStore() });
  try {
    await engine.saveFunction({ spec: { name: 'echo', description: 'Echoes text and doubles n.', inputSchema: ECHO_INPUT_SCHEMA }, source: ECHO_SOURCE });
  } finally {
    engine.close();
  }
  const env = { ...process.env, CALLABLE_SECRETS: 'env', CALLABLE_MCP_TOKEN: 'bench-token' };
  const serve = await startHttp('product', dataDir);
  const gateway = await startDeployServe(dataDir, ['--port', String(await freePort())], env);
  const client = new Client(CLIENT_INFO);
  await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: { headers: { Authorization: `Bearer ${gateway.token}` } } }));
  const calls = { workerd: [] as number[], list: [] as number[], serve: [] as number[] };
  let failures = 0;
  try {
    options.progress?.(`workerd: ${rounds} rounds of one call through the workerd gateway, one tools/list there, one call through callable serve`);
    for (let i = 0; i < rounds; i++) {
      await sleep(5);
      const w = await timed(() => client.callTool({ name: 'echo', arguments: echoArgs(i) }), echoChecked(i));
      await sleep(5);
      const l = await timed(() => client.listTools(), () => undefined);
      await sleep(5);
      const s = await serve.call(i);
      if (w.problem || !s.ok) failures++;
      // The first rounds warm both up.
      if (i < 10) continue;
      calls.workerd.push(w.ms);
      calls.list.push(l.ms);
      calls.serve.push(s.ms);
    }
  } finally {
    await client.close().catch(() => {});
    await gateway.stop();
    await serve.close();
  }
  const figures: WorkerdFigures = {
    workerd_call_p50_ms: median(calls.workerd),
    workerd_call_p99_ms: quantile(calls.workerd, 0.99),
    workerd_list_p50_ms: median(calls.list),
    serve_call_p50_ms: median(calls.serve),
    serve_call_p99_ms: quantile(calls.serve, 0.99),
    workerd_over_serve_p50_ratio: median(calls.workerd) / median(calls.serve),
    failures,
  };
  const f = (n: number): string => n.toFixed(2);
  const lines = [
    `workerd gateway call p50 ${f(figures.workerd_call_p50_ms)} ms, p99 ${f(figures.workerd_call_p99_ms)} ms (tools/list there p50 ${f(figures.workerd_list_p50_ms)} ms)`,
    `callable serve call  p50 ${f(figures.serve_call_p50_ms)} ms, p99 ${f(figures.serve_call_p99_ms)} ms`,
    `workerd_over_serve_p50_ratio ${f(figures.workerd_over_serve_p50_ratio)}; failed calls ${failures}`,
  ];
  return { figures, lines };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { lines } = await workerdComparison({ quick: process.argv.includes('--quick'), progress: (l) => process.stderr.write(`bench: ${l}\n`) });
  process.stdout.write(`${lines.join('\n')}\n`);
}
