import type { ApprovalDecision, ElicitAnswer, ElicitRequest, FunctionRecord, LogLevel, ProfileSpec, RunResult, SampleAnswer, SampleRequest } from '../engine/model/index.ts';
import type { ApprovalOutcome, ApprovalRequest, LoadedFunction } from '../engine/index.ts';

/**
 * What the MCP server needs from the engine, declared on the server's side: the engine satisfies it
 * and never imports this folder, so MCP is a client of the engine like the CLI and the studio.
 */
export interface McpEnginePort {
  readonly functions: {
    list(): FunctionRecord[];
    /** A number that moves whenever any process changes the functions or profiles. */
    catalogVersion(): number;
    /** The function as a run needs it, read live (`version`: catalogVersion() as just read, in this turn). */
    load(name: string, version?: number): LoadedFunction;
  };
  readonly profiles: {
    find(name: string): ProfileSpec | undefined;
    get(name: string): ProfileSpec;
  };
  run(name: string, args: unknown, options: McpRunOptions): Promise<RunResult>;
  /** Before a call: whether it may run (a destructive function needs a person's approval); a refused call is recorded by the engine. */
  approveCall(request: ApprovalRequest): Promise<ApprovalOutcome>;
  /** Readies the sandbox for these functions in the background (and their argument validators, unless `validators` is false). */
  prewarm(names: string[], options?: { validators?: boolean }): void;
  /** Calls the listener when any process changes functions or profiles; returns the unsubscribe function. */
  onCatalogChange(listener: () => void): () => void;
  /** The HTTP bearer token (kept by the engine's secret store); cheap to call per request: it re-reads the store only after a regeneration. */
  mcpToken(): Promise<string>;
  /**
   * Puts a ctx.elicit question to the person at the studio, for a client without elicitation.
   * Optional: where it is absent, ctx.elicit rejects with `ask_unavailable`; where present, it
   * answers `via: 'studio'`, or rejects with `ask_unavailable` when no studio is open.
   */
  askInStudio?: ((request: ElicitRequest, signal: AbortSignal) => Promise<ElicitAnswer>) | undefined;
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
  /** How a person allowed the call, when it needed approval (recorded with the run). */
  approval?: ApprovalDecision | undefined;
  /** Answers ctx.elicit: the client's form (2025-era, elicitation declared), else the studio hook, else absent. */
  elicit?: ((request: ElicitRequest, signal: AbortSignal) => Promise<ElicitAnswer>) | undefined;
  /** Answers ctx.sample: the client's model (2025-era, sampling declared), else absent. */
  sample?: ((request: SampleRequest, signal: AbortSignal) => Promise<SampleAnswer>) | undefined;
  /** The function as this call's lookup just loaded it (same turn, nobody asked since): the run does not read the catalog again. */
  loaded?: LoadedFunction | undefined;
}
