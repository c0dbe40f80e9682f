import type { McpEnginePort as Engine } from './port.ts';
import type { McpStatus } from '../engine/model/index.ts';
import type { RunningHttpServer } from './http.ts';

export type HttpHostStatus = McpStatus;

/**
 * The Streamable HTTP MCP server as the desktop app hosts it: started and stopped on demand,
 * reporting its state (including why it could not start, e.g. the port is taken).
 */
export class McpHttpHost {
  readonly #engine: Engine;
  readonly #diagnostic: (message: string) => void;
  readonly #listeners = new Set<(status: HttpHostStatus) => void>();
  #server: RunningHttpServer | undefined;
  #status: HttpHostStatus;

  constructor(engine: Engine, options: { host?: string; port?: number; auth?: boolean; diagnostic?: (message: string) => void } = {}) {
    this.#engine = engine;
    this.#diagnostic = options.diagnostic ?? (() => {});
    this.#status = { running: false, host: options.host ?? '127.0.0.1', port: options.port ?? 7777, auth: options.auth ?? true };
  }

  get status(): HttpHostStatus {
    return { ...this.#status };
  }

  onStatus(listener: (status: HttpHostStatus) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async start(port = this.#status.port): Promise<HttpHostStatus> {
    await this.stop();
    try {
      const token = this.#status.auth ? await this.#engine.mcpToken() : undefined;
      const { startMcpHttpServer } = await import('./http.ts');
      const provider = token === undefined ? undefined : () => this.#engine.mcpToken();
      this.#server = await startMcpHttpServer(this.#engine, { host: this.#status.host, port, token: provider, diagnostic: this.#diagnostic });
      this.#set({ running: true, url: this.#server.url, host: this.#status.host, port: this.#server.port, auth: this.#status.auth });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const reason =
        code === 'EADDRINUSE'
          ? `port ${port} is already in use (another Callable Studio or "callable serve"?); pick another port`
          : error instanceof Error
            ? error.message
            : String(error);
      this.#set({ running: false, host: this.#status.host, port, auth: this.#status.auth, error: reason });
    }
    return this.status;
  }

  async stop(): Promise<HttpHostStatus> {
    const server = this.#server;
    this.#server = undefined;
    if (server) {
      await server.close();
      this.#set({ running: false, host: this.#status.host, port: this.#status.port, auth: this.#status.auth });
    }
    return this.status;
  }

  #set(status: HttpHostStatus): void {
    this.#status = status;
    for (const l of this.#listeners) l(this.status);
  }
}
