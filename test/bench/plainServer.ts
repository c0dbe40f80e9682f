// The floor for the benchmark (issue #5): a plain MCP server on the SDK v2 exposing the same
// trivial function as the product, with no sandbox, no database and no audit.
//
//   node test/bench/plainServer.ts stdio   MCP over stdio (serveStdio: both protocol eras)
//   node --no-node-snapshot test/bench/plainServer.ts stdio-context
//                                          the same, with the echo run in a fresh isolated-vm
//                                          context per call, in process (the ideal reference:
//                                          what a fresh-context server with no other cost pays)
//   node test/bench/plainServer.ts http    Streamable HTTP on 127.0.0.1, a free port; prints
//                                          "PLAIN on http://127.0.0.1:PORT/mcp" to stderr
//
// Like any SDK server it validates the arguments against the input schema (memoised, AJV-backed
// via fromJsonSchema) and answers the same result shape as the product: the value as JSON text.
// Stdout is protocol only (stdio mode); diagnostics go to stderr.
import { createMcpHandler, fromJsonSchema, ProtocolError, ProtocolErrorCode, Server, type CallToolResult, type McpServerFactory } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import ivm from 'isolated-vm';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ECHO_INPUT_SCHEMA } from './fixture.ts';

console.log = console.error; // stdout is the protocol channel in stdio mode

type EchoArgs = { text: string; n: number };
const plainEcho = (args: EchoArgs): string => JSON.stringify({ echo: args.text, n: args.n * 2 });

/** The echo in a fresh context per call: context, one call in, the JSON answer out, release (sync, like the floor). */
function contextEcho(): (args: EchoArgs) => string {
  const isolate = new ivm.Isolate({ memoryLimit: 32 });
  const script = isolate.compileScriptSync(`(function (argsJson) { const { text, n } = JSON.parse(argsJson); return JSON.stringify({ echo: text, n: n * 2 }); })`);
  return (args) => {
    const context = isolate.createContextSync();
    try {
      const fn = script.runSync(context, { reference: true }) as ivm.Reference<(json: string) => string>;
      const json = fn.applySync(undefined, [JSON.stringify(args)], { result: { copy: true } }) as string;
      fn.release();
      return json;
    } finally {
      context.release();
    }
  };
}

const mode = process.argv[2] ?? 'stdio';
const echo = mode === 'stdio-context' ? contextEcho() : plainEcho;
const validator = fromJsonSchema(ECHO_INPUT_SCHEMA as unknown as Parameters<typeof fromJsonSchema>[0]);
const TOOL = { name: 'echo', description: 'Echoes text and doubles n.', inputSchema: ECHO_INPUT_SCHEMA as unknown as { type: 'object' } };

const factory: McpServerFactory = () => {
  const server = new Server({ name: 'bench-plain', version: '0.0.0' }, { capabilities: { tools: { listChanged: true }, logging: {} } });
  server.setRequestHandler('tools/list', () => ({ tools: [TOOL] }));
  server.setRequestHandler('tools/call', async (request): Promise<CallToolResult> => {
    if (request.params.name !== TOOL.name) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const checked = await validator['~standard'].validate(request.params.arguments ?? {});
    if (checked.issues) return { isError: true, content: [{ type: 'text', text: `Invalid arguments: ${checked.issues.map((i) => i.message).join('; ')}` }] };
    try {
      return { content: [{ type: 'text', text: echo(checked.value as EchoArgs) }] };
    } catch (error) {
      return { isError: true, content: [{ type: 'text', text: String(error instanceof Error ? error.message : error) }] };
    }
  });
  return server;
};

const onerror = (error: Error): void => void process.stderr.write(`plain: ${error.message}\n`);
process.on('unhandledRejection', (error) => process.stderr.write(`plain: unhandled rejection: ${String(error)}\n`));

if (mode === 'stdio' || mode === 'stdio-context') {
  const handle = serveStdio(factory, { onerror });
  const stop = (): void => void handle.close().finally(() => process.exit(0));
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
  process.once('SIGTERM', stop);
} else if (mode === 'http') {
  const handler = createMcpHandler(factory, { legacy: 'stateless', onerror });
  const node = toNodeHandler(handler, { onerror });
  const validateHost = localhostHostValidation();
  const validateOrigin = localhostOriginValidation();
  const server = createServer((req, res) => {
    if (!validateHost(req, res) || !validateOrigin(req, res)) return;
    node(req, res).catch((error: unknown) => {
      onerror(error instanceof Error ? error : new Error(String(error)));
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.listen(0, '127.0.0.1', () => {
    process.stderr.write(`PLAIN on http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp\n`);
  });
  const stop = (): void => {
    server.closeAllConnections();
    server.close();
    void handler.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The bench keeps our stdin open; when it goes away, so do we.
  process.stdin.resume();
  process.stdin.once('end', stop);
  process.stdin.once('close', stop);
} else {
  process.stderr.write(`usage: node test/bench/plainServer.ts stdio|stdio-context|http\n`);
  process.exit(2);
}
