import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, request } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { createEngine, type Engine } from '../../src-main/engine/index.ts';
import { CALLABLE_COMMAND } from '../support/callable.ts';
import { connect, type TestClient } from '../support/mcpClients.ts';

/** A port free right now on 127.0.0.1 (workerd takes a fixed port, not 0). */
export async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface DeployServe {
  child: ChildProcess;
  url: string;
  token: string;
  outDir: string;
  stdout: () => string;
  stderr: () => string;
  stop: () => Promise<number | null>;
}

/** Starts `callable deploy --target workerd --serve …` and waits for the URL and token it prints. */
export async function startDeployServe(dataDir: string, extra: string[], env: NodeJS.ProcessEnv = process.env): Promise<DeployServe> {
  const child = spawn(CALLABLE_COMMAND.command, [...CALLABLE_COMMAND.args, 'deploy', '--target', 'workerd', '--serve', '--data-dir', dataDir, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`callable deploy --serve did not start:\n${out}\n${err}`)), 20_000);
    const check = (): void => {
      if (/^token \S+$/m.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => reject(new Error(`callable deploy exited (${code}):\n${out}\n${err}`)));
  });
  return {
    child,
    url: /^MCP on (\S+)$/m.exec(out)![1]!,
    token: /^token (\S+)$/m.exec(out)![1]!,
    outDir: / to (\S+) for workerd$/m.exec(out)![1]!,
    stdout: () => out,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** Serves `dataDir` on workerd on a free port and connects a 2026-07-28 client; `close` ends both and removes the output folder. */
export async function serveConnected(dataDir: string): Promise<{ served: DeployServe; client: TestClient; close: () => Promise<void> }> {
  const served = await startDeployServe(dataDir, ['--port', String(await freePort())]);
  const client = await connect('2026-07-28', { transport: 'http', url: served.url, token: served.token });
  return {
    served,
    client,
    close: async () => {
      await client.close().catch(() => {});
      await served.stop();
      rmSync(served.outDir, { recursive: true, force: true });
    },
  };
}

/**
 * A data folder whose functions `define` saves, deployed with `deploy --serve` and a client
 * connected; the engine stays open so a test can run the same function locally. `close` undoes it all.
 */
export async function deployedFolder(prefix: string, define: (engine: Engine) => Promise<void>): Promise<{ engine: Engine; client: TestClient; close: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const engine = createEngine({ dataDir });
  let deployed: Awaited<ReturnType<typeof serveConnected>> | undefined;
  const close = async (): Promise<void> => {
    await deployed?.close();
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await define(engine);
    deployed = await serveConnected(dataDir);
  } catch (error) {
    await close();
    throw error;
  }
  return { engine, client: deployed.client, close };
}

/**
 * A round-robin balancer: each request (not each connection) goes to the next backend in turn, as
 * a balancer with no affinity does. Counts what each backend got.
 */
export async function roundRobin(ports: number[]): Promise<{ url: string; hits: number[]; close: () => Promise<void> }> {
  const hits = ports.map(() => 0);
  let next = 0;
  const server = createServer((req, res) => {
    const i = next++ % ports.length;
    hits[i]!++;
    const upstream = request({ host: '127.0.0.1', port: ports[i], path: req.url, method: req.method, headers: { ...req.headers, host: `127.0.0.1:${ports[i]}` }, agent: false }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Whether process `pid` is still running. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits up to five seconds for process `pid` to be gone; whether it is. */
export async function processGone(pid: number): Promise<boolean> {
  for (let i = 0; i < 50 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  return !processAlive(pid);
}
