// The parent side of the hop floor (issue #25): the plain SDK server's tools forward each call to one
// long-lived child process (hopChild.ts, spawned at start) over its stdin/stdout, newline-framed
// JSON, one write per message, concurrent calls told apart by id. A fetch the child's function asks
// for is made here, with Node's fetch, as callable's engine makes a sandbox host's. It is the least
// any design with the isolates outside the server process pays: one process hop each way per call.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Fetched } from './contextEcho.ts';

const HOP_CHILD = join(import.meta.dirname, 'hopChild.ts');

type Out = { t: 'done'; id: number; text: string } | { t: 'fail'; id: number; error: string } | { t: 'fetch'; id: number; url: string };

export class Hop {
  readonly #child = spawn(process.execPath, ['--no-node-snapshot', HOP_CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
  readonly #pending = new Map<number, { resolve(text: string): void; reject(e: Error): void }>();
  #next = 0;
  #buffered = '';

  constructor() {
    this.#child.stdout.setEncoding('utf8');
    this.#child.stdout.on('data', (chunk: string) => {
      this.#buffered += chunk;
      let end: number;
      while ((end = this.#buffered.indexOf('\n')) >= 0) {
        const line = this.#buffered.slice(0, end);
        this.#buffered = this.#buffered.slice(end + 1);
        if (line !== '') this.#onMessage(JSON.parse(line) as Out);
      }
    });
    this.#child.once('exit', (code, signal) => {
      for (const p of this.#pending.values()) p.reject(new Error(`the hop child exited (${code ?? signal})`));
      this.#pending.clear();
    });
  }

  #send(message: object): void {
    this.#child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  #onMessage(m: Out): void {
    if (m.t === 'fetch') {
      fetch(m.url)
        .then(async (r): Promise<Fetched> => ({ status: r.status, body: await r.text() }))
        .then(
          (f) => this.#send({ t: 'fetched', id: m.id, ...f }),
          (error: unknown) => this.#send({ t: 'fetched', id: m.id, status: 0, body: '', error: error instanceof Error ? error.message : String(error) }),
        );
      return;
    }
    const p = this.#pending.get(m.id);
    this.#pending.delete(m.id);
    if (m.t === 'done') p?.resolve(m.text);
    else p?.reject(new Error(m.error));
  }

  /** One call of `tool` in the child: its answer (JSON text), or a rejection with the child's error. */
  call(tool: 'echo' | 'fetch_one', args: unknown): Promise<string> {
    return new Promise((resolve, reject) => {
      const id = ++this.#next;
      this.#pending.set(id, { resolve, reject });
      this.#send({ t: 'call', id, tool, args });
    });
  }

  close(): void {
    this.#child.stdin.end();
  }
}
