import type { FunctionRecord, LogLevel, ProfileSpec, RunResult } from '../model/index.ts';

/**
 * What the MCP server needs from the engine, declared on the server's side: the engine satisfies it
 * and never imports this folder, so MCP is a client of the engine like the CLI and the studio.
 */
export interface McpEnginePort {
  readonly functions: {
    list(): FunctionRecord[];
    load(name: string): { record: FunctionRecord };
  };
  readonly profiles: {
    find(name: string): ProfileSpec | undefined;
    get(name: string): ProfileSpec;
  };
  run(name: string, args: unknown, options: McpRunOptions): Promise<RunResult>;
  /** Readies the sandbox for these functions in the background. */
  prewarm(names: string[]): void;
  /** Calls the listener when any process changes functions or profiles; returns the unsubscribe function. */
  onCatalogChange(listener: () => void): () => void;
  /** The HTTP bearer token (kept by the engine's secret store); cheap to call per request: it re-reads the store only after a regeneration. */
  mcpToken(): Promise<string>;
}

export interface McpRunOptions {
  caller: 'mcp';
  client?: { name?: string | undefined; version?: string | undefined } | undefined;
  transport: 'stdio' | 'http';
  profile?: string | undefined;
  signal?: AbortSignal | undefined;
  onLog?: ((entry: { level: LogLevel; message: string }) => void) | undefined;
  onProgress?: ((update: { progress: number; total?: number; message?: string }) => void) | undefined;
  requireEnabled: true;
}
