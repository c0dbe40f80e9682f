// The floor for the benchmark (issue #5): a plain MCP server on the SDK v2 exposing the same
// trivial function as the product, with no sandbox, no database and no audit.
//
//   node test/bench/plainServer.ts stdio   MCP over stdio (serveStdio: both protocol eras)
//   node --no-node-snapshot test/bench/plainServer.ts stdio-context
//                                          the same, with the echo run in a fresh isolated-vm
//                                          context per call, in process (the ideal reference:
//                                          what a fresh-context server with no other cost pays)
//   node test/bench/plainServer.ts stdio-hop
//                                          the hop floor: the same, with each call forwarded to one
//                                          long-lived child process (hop.ts, hopChild.ts) that runs
//                                          the ideal's fresh-context echo and answers back
//   node test/bench/plainServer.ts fetch-hop
//                                          stdio; fetch_one through the same child: its function
//                                          asks this process to make the request (Node's fetch)
//   node test/bench/plainServer.ts http    Streamable HTTP on 127.0.0.1, a free port; prints
//                                          "PLAIN on http://127.0.0.1:PORT/mcp" to stderr
//   node test/bench/plainServer.ts fetch   stdio; fetch_one and fetch_json ({ url }): one request
//                                          with Node's fetch, the body read as text / with .json()
//   node test/bench/plainServer.ts catalog N
//                                          stdio; N echo tools, fn_0000 … (a large catalog)
//
// Like any SDK server it validates the arguments against the input schema (memoised, AJV-backed
// via fromJsonSchema) and answers the same result shape as the product: the value as JSON text.
// Stdout is protocol only (stdio mode); diagnostics go to stderr.
import { createMcpHandler, fromJsonSchema, ProtocolError, ProtocolErrorCode, Server, type CallToolResult, type McpServerFactory } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { contextEcho, type EchoArgs } from './contextEcho.ts';
import { ECHO_INPUT_SCHEMA, URL_INPUT_SCHEMA } from './fixture.ts';
import { Hop } from './hop.ts';

console.log = console.error; // stdout is the protocol channel in stdio mode

const plainEcho = (args: EchoArgs): string => JSON.stringify({ echo: args.text, n: args.n * 2 });

const mode = process.argv[2] ?? 'stdio';
type Schema = Parameters<typeof fromJsonSchema>[0];
interface Tool {
  name: string;
  description: string;
  inputSchema: { type: 'object' };
  run(args: unknown): string | Promise<string>;
}
const echoTool = (name: string, run: (args: EchoArgs) => string | Promise<string>): Tool => ({
  name,
  description: 'Echoes text and doubles n.',
  inputSchema: ECHO_INPUT_SCHEMA as unknown as { type: 'object' },
  run: (args) => run(args as EchoArgs),
});
/** The URL tools of fetch mode: the same schema and answers as the product's fetch functions (test/bench/vendorBench.ts). */
const urlTool = (name: string, run: (url: string) => Promise<unknown>): Tool => ({
  name,
  description: `Fetches a URL (${name}).`,
  inputSchema: URL_INPUT_SCHEMA as unknown as { type: 'object' },
  run: async (args) => JSON.stringify(await run((args as { url: string }).url)),
});

/** The hop modes' child process, spawned at start. */
let hopChild: Hop | undefined;

function toolsOf(m: string): Tool[] {
  if (m === 'stdio' || m === 'http') return [echoTool('echo', plainEcho)];
  if (m === 'stdio-context') return [echoTool('echo', contextEcho())];
  if (m === 'stdio-hop') {
    const hop = (hopChild ??= new Hop());
    return [echoTool('echo', (args) => hop.call('echo', args))];
  }
  if (m === 'fetch-hop') {
    const hop = (hopChild ??= new Hop());
    // The same schema and answer as the fetch mode's fetch_one, made in the child's fresh context.
    return [{ name: 'fetch_one', description: 'Fetches a URL (fetch_one).', inputSchema: URL_INPUT_SCHEMA as unknown as { type: 'object' }, run: (args) => hop.call('fetch_one', { url: (args as { url: string }).url }) }];
  }
  if (m === 'fetch') {
    return [
      urlTool('fetch_one', async (url) => {
        const r = await fetch(url);
        return { status: r.status, length: (await r.text()).length };
      }),
      urlTool('fetch_json', async (url) => {
        const r = await fetch(url);
        return { items: ((await r.json()) as { items: unknown[] }).items.length };
      }),
    ];
  }
  if (m === 'catalog') {
    const count = Number(process.argv[3]);
    if (!Number.isInteger(count) || count < 1) throw new Error('catalog needs a tool count');
    return Array.from({ length: count }, (_, k) => echoTool(`fn_${String(k).padStart(4, '0')}`, plainEcho));
  }
  return [];
}
const TOOLS = toolsOf(mode);
const byName = new Map(TOOLS.map((t) => [t.name, t]));
/** Each tool's validator, made on its first call (a large catalog does not compile them all at start). */
const validators = new Map<string, ReturnType<typeof fromJsonSchema>>();
function validatorOf(tool: Tool): ReturnType<typeof fromJsonSchema> {
  let v = validators.get(tool.name);
  if (!v) validators.set(tool.name, (v = fromJsonSchema(tool.inputSchema as unknown as Schema)));
  return v;
}
const LISTED = TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));

const factory: McpServerFactory = () => {
  const server = new Server({ name: 'bench-plain', version: '0.0.0' }, { capabilities: { tools: { listChanged: true }, logging: {} } });
  server.setRequestHandler('tools/list', () => ({ tools: LISTED }));
  server.setRequestHandler('tools/call', async (request): Promise<CallToolResult> => {
    const found = byName.get(request.params.name);
    if (!found) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const checked = await validatorOf(found)['~standard'].validate(request.params.arguments ?? {});
    if (checked.issues) return { isError: true, content: [{ type: 'text', text: `Invalid arguments: ${checked.issues.map((i) => i.message).join('; ')}` }] };
    try {
      return { content: [{ type: 'text', text: await found.run(checked.value) }] };
    } catch (error) {
      return { isError: true, content: [{ type: 'text', text: String(error instanceof Error ? error.message : error) }] };
    }
  });
  return server;
};

const onerror = (error: Error): void => void process.stderr.write(`plain: ${error.message}\n`);
process.on('unhandledRejection', (error) => process.stderr.write(`plain: unhandled rejection: ${String(error)}\n`));

if (mode === 'stdio' || mode === 'stdio-context' || mode === 'stdio-hop' || mode === 'fetch' || mode === 'fetch-hop' || mode === 'catalog') {
  const handle = serveStdio(factory, { onerror });
  const stop = (): void => {
    hopChild?.close();
    void handle.close().finally(() => process.exit(0));
  };
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
  process.stderr.write(`usage: node test/bench/plainServer.ts stdio|stdio-context|stdio-hop|http|fetch|fetch-hop|catalog N\n`);
  process.exit(2);
}
