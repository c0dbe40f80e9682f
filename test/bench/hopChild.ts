// The hop floor's child process (issue #25): one long-lived node process holding the isolate, as a
// sandbox host does, and nothing else. It reads newline-framed JSON on stdin and writes one line per
// message on stdout (one write each):
//   in:  {"t":"call","id":1,"tool":"echo","args":{…}}   → out: {"t":"done","id":1,"text":"…"}
//        {"t":"call","id":2,"tool":"fetch_one","args":{"url":…}}
//                                                       → out: {"t":"fetch","id":7,"url":…} (the parent fetches)
//   in:  {"t":"fetched","id":7,"status":200,"body":"…"} → out: {"t":"done","id":2,"text":"…"}
// A failure answers {"t":"fail","id":…,"error":"…"}. The echo is the ideal's (contextEcho.ts): a
// fresh context per call, no prelude, no checks, no record. Ends when stdin ends.
import { contextEcho, contextFetchOne, type Fetched } from './contextEcho.ts';

const echo = contextEcho();
const fetchOne = contextFetchOne();
const asked = new Map<number, { resolve(f: Fetched): void; reject(e: Error): void }>();
let nextFetch = 0;

const send = (message: object): void => void process.stdout.write(`${JSON.stringify(message)}\n`);
const parentFetch = (url: string): Promise<Fetched> =>
  new Promise((resolve, reject) => {
    const id = ++nextFetch;
    asked.set(id, { resolve, reject });
    send({ t: 'fetch', id, url });
  });

type In = { t: 'call'; id: number; tool: string; args: { text: string; n: number; url: string } } | { t: 'fetched'; id: number; status: number; body: string; error?: string };

function onMessage(m: In): void {
  if (m.t === 'fetched') {
    const waiting = asked.get(m.id);
    asked.delete(m.id);
    if (m.error !== undefined) waiting?.reject(new Error(m.error));
    else waiting?.resolve({ status: m.status, body: m.body });
    return;
  }
  const fail = (error: unknown): void => send({ t: 'fail', id: m.id, error: error instanceof Error ? error.message : String(error) });
  if (m.tool === 'fetch_one') {
    fetchOne(m.args.url, parentFetch).then((text) => send({ t: 'done', id: m.id, text }), fail);
    return;
  }
  try {
    send({ t: 'done', id: m.id, text: echo(m.args) });
  } catch (error) {
    fail(error);
  }
}

let buffered = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  buffered += chunk;
  let end: number;
  while ((end = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (line !== '') onMessage(JSON.parse(line) as In);
  }
});
process.stdin.once('end', () => process.exit(0));
