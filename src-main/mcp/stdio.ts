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
 * Serves MCP over stdio (both protocol eras) until stdin closes. Stdout carries protocol only;
 * everything else goes to `diagnostic` (stderr).
 */
export async function serveMcpStdio(engine: Engine, options: StdioOptions): Promise<void> {
  const tools = new ToolServer(engine, { profile: options.profile, transport: 'stdio', diagnostic: options.diagnostic });
  const stopWatching = engine.onCatalogChange(() => tools.notifyToolsChanged());
  const handle = serveStdio(tools.trackedFactory, {
    transport: new StdioServerTransport(options.stdin, options.stdout),
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
