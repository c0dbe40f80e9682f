import { Client as ClientV2, LOG_LEVEL_META_KEY, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { CALLABLE_COMMAND } from './callable.ts';

export type Era = '2026-07-28' | '2025-11-25';
export type TransportKind = 'stdio' | 'http';

export interface ToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

export interface CallResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string; data?: string; mimeType?: string }>;
  structuredContent?: unknown;
}

export interface CallOptions {
  onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
  signal?: AbortSignal;
  logLevel?: 'debug' | 'info' | 'warning' | 'error';
}

/** One MCP client of either era over either transport, behind one small interface for the contract suite. */
export interface TestClient {
  label: string;
  era: Era;
  clientName: string;
  logs: Array<{ level: string; data: unknown }>;
  listTools(): Promise<ToolInfo[]>;
  callTool(name: string, args: unknown, options?: CallOptions): Promise<CallResult>;
  /** Resolves with the tool names at the next list-changed notice. */
  nextListChanged(): Promise<string[]>;
  close(): Promise<void>;
}

export interface Target {
  transport: TransportKind;
  /** For stdio: arguments after `callable mcp`; for http: the URL and token. */
  stdioArgs?: string[];
  /** For stdio: start this instead, as a client given this config would (the SDK adds its default environment to `env`). */
  launch?: { command: string; args: string[]; env?: Record<string, string> };
  url?: string;
  token?: string;
}

function listChangedQueue() {
  const waiters: Array<(names: string[]) => void> = [];
  const pending: string[][] = [];
  return {
    push(names: string[]) {
      const w = waiters.shift();
      if (w) w(names);
      else pending.push(names);
    },
    next(): Promise<string[]> {
      const ready = pending.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

export async function connect(era: Era, target: Target): Promise<TestClient> {
  return era === '2026-07-28' ? connectV2(target) : connectV1(target);
}

async function connectV2(target: Target): Promise<TestClient> {
  const queue = listChangedQueue();
  const logs: TestClient['logs'] = [];
  const clientName = 'contract-client-v2';
  const client = new ClientV2(
    { name: clientName, version: '2.4.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      listChanged: { tools: { onChanged: (error: unknown, tools: ToolInfo[] | null) => (error ? undefined : queue.push((tools ?? []).map((t) => t.name))) } },
    },
  );
  client.setNotificationHandler('notifications/message', (n: { params: { level: string; data: unknown } }) => void logs.push({ level: n.params.level, data: n.params.data }));
  const transport =
    target.transport === 'stdio'
      ? new StdioV2(target.launch ? { ...target.launch, stderr: 'pipe' } : { command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', ...(target.stdioArgs ?? [])], stderr: 'pipe', env: process.env as Record<string, string> })
      : new HttpV2(new URL(target.url!), target.token ? { requestInit: { headers: { Authorization: `Bearer ${target.token}` } } } : {});
  await client.connect(transport);
  return {
    label: `v2 client (2026-07-28) over ${target.transport}`,
    era: '2026-07-28',
    clientName,
    logs,
    listTools: async () => (await client.listTools()).tools as ToolInfo[],
    callTool: async (name, args, options = {}) =>
      (await client.callTool(
        { name, arguments: args as Record<string, unknown>, ...(options.logLevel ? { _meta: { [LOG_LEVEL_META_KEY]: options.logLevel } } : {}) },
        { ...(options.onprogress ? { onprogress: options.onprogress } : {}), ...(options.signal ? { signal: options.signal } : {}), timeout: 60_000 },
      )) as CallResult,
    nextListChanged: () => queue.next(),
    close: () => client.close(),
  };
}

async function connectV1(target: Target): Promise<TestClient> {
  const queue = listChangedQueue();
  const logs: TestClient['logs'] = [];
  const clientName = 'contract-client-v1';
  const client = new ClientV1(
    { name: clientName, version: '1.32.2' },
    { listChanged: { tools: { onChanged: (error, tools) => (error ? undefined : queue.push((tools ?? []).map((t) => t.name))) } } },
  );
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push({ level: n.params.level, data: n.params.data }));
  const transport =
    target.transport === 'stdio'
      ? new StdioV1(target.launch ? { ...target.launch, stderr: 'pipe' } : { command: CALLABLE_COMMAND.command, args: [...CALLABLE_COMMAND.args, 'mcp', ...(target.stdioArgs ?? [])], stderr: 'pipe', env: process.env as Record<string, string> })
      : new HttpV1(new URL(target.url!), target.token ? { requestInit: { headers: { Authorization: `Bearer ${target.token}` } } } : {});
  await client.connect(transport);
  let level: string | undefined;
  return {
    label: `v1 client (2025-11-25) over ${target.transport}`,
    era: '2025-11-25',
    clientName,
    logs,
    listTools: async () => (await client.listTools()).tools as ToolInfo[],
    callTool: async (name, args, options = {}) => {
      if (options.logLevel && options.logLevel !== level) {
        await client.setLoggingLevel(options.logLevel);
        level = options.logLevel;
      }
      return (await client.callTool({ name, arguments: args as Record<string, unknown> }, undefined, {
        ...(options.onprogress ? { onprogress: options.onprogress } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        timeout: 60_000,
      })) as CallResult;
    },
    nextListChanged: () => queue.next(),
    close: async () => {
      if (transport instanceof HttpV1 && transport.sessionId) await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}
