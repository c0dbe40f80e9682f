import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { Readable, Writable } from 'node:stream';
import type { McpEnginePort as Engine } from './port.ts';
import { ToolServer } from './server.ts';

export interface StdioOptions {
  profile?: string | undefined;
  stdin: Readable;
  stdout: Writable;
  diagnostic: (message: string) => void;
}

/**
 * The SDK's stdio transport, with stdout corked until the code running now returns (a
 * process.nextTick): the answers of several calls that ended together (one read of the sandbox
 * channel) and a call's notifications go out in one write, one wake-up of the client, not one each.
 * Nothing waits longer: the write happens before the event loop turns.
 */
class TickBatchedTransport extends StdioServerTransport {
  readonly #stdout: Writable;
  #corked = false;

  constructor(stdin: Readable, stdout: Writable) {
    super(stdin, stdout);
    this.#stdout = stdout;
  }

  override send(message: Parameters<StdioServerTransport['send']>[0]): Promise<void> {
    if (!this.#corked && !this.#stdout.writableCorked) {
      this.#corked = true;
      this.#stdout.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.#stdout.uncork();
      });
    }
    return super.send(message);
  }
}

/**
 * Serves MCP over stdio (both protocol eras) until stdin closes. Stdout carries protocol only;
 * everything else goes to `diagnostic` (stderr).
 */
export async function serveMcpStdio(engine: Engine, options: StdioOptions): Promise<void> {
  const tools = new ToolServer(engine, { profile: options.profile, transport: 'stdio', diagnostic: options.diagnostic });
  const stopWatching = engine.onCatalogChange(() => tools.notifyToolsChanged());
  const handle = serveStdio(tools.trackedFactory, {
    transport: new TickBatchedTransport(options.stdin, options.stdout),
    onerror: (error: Error) => options.diagnostic(`mcp: ${error.message}`),
  });
  // The sandbox processes start beside the server and ready the isolates of the first functions it
  // serves, so the first call does not wait for them. Their validators are left for after tools/list
  // (the server's prewarm): compiled now, they would delay the client's first answers.
  let served: string[] = [];
  try {
    served = tools.servedFunctions().map((f) => f.name);
  } catch {
    // The catalog cannot be read (a damaged database): nothing to ready; tools/list answers why.
  }
  engine.prewarm(served, { validators: false });
  await new Promise<void>((resolve) => {
    if ((options.stdin as { readableEnded?: boolean }).readableEnded) resolve();
    options.stdin.once('end', resolve);
    options.stdin.once('close', resolve);
  });
  stopWatching();
  await handle.close().catch(() => {});
}
