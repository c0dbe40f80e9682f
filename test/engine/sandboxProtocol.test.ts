import { serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { encodeFrame, EngineMessageCheck, FrameReader, flushFrames, HostMessageCheck, MAX_FRAME_BYTES, writeFrame, type EngineMessage, type HostMessage } from '../../src-main/engine/sandbox/protocol.ts';

// What the engine accepts from a sandbox host: a host is treated as possibly compromised, so every
// frame is bounded before it is read and every message is checked before it is acted on.

function reader() {
  const messages: HostMessage[] = [];
  const violations: string[] = [];
  const r = new FrameReader<HostMessage>(HostMessageCheck, (m) => messages.push(m), (v) => violations.push(v));
  return { r, messages, violations };
}

function rawFrame(value: unknown): Buffer {
  const body = serialize(value);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

describe('the sandbox channel', () => {
  it('reassembles messages split across chunks and joined in one', () => {
    const { r, messages, violations } = reader();
    const a = encodeFrame({ t: 'beat', rssBytes: 1, capBytes: 2, runs: 0 });
    const b = encodeFrame({ t: 'log', runId: 'r1', level: 'info', message: 'héllo', at: 3 });
    const both = Buffer.concat([a, b]);
    r.push(both.subarray(0, 3));
    r.push(both.subarray(3, a.length + 5));
    r.push(both.subarray(a.length + 5));
    expect(violations).toEqual([]);
    expect(messages).toEqual([
      { t: 'beat', rssBytes: 1, capBytes: 2, runs: 0 },
      { t: 'log', runId: 'r1', level: 'info', message: 'héllo', at: 3 },
    ]);
  });

  it("carries a body's bytes exactly, large or small, each in bytes of its own (never a view of the frame)", () => {
    const messages: EngineMessage[] = [];
    const violations: string[] = [];
    const r = new FrameReader<EngineMessage>(EngineMessageCheck, (m) => messages.push(m), (v) => violations.push(v));
    const big = randomBytes(300 * 1024);
    const small = Buffer.from('{"ok":true}');
    const head = { status: 200, statusText: 'OK', headers: [['content-type', 'application/json']] as Array<[string, string]>, url: 'https://x.test/', redirected: false };
    const sent: EngineMessage[] = [
      { t: 'fetchChunk', runId: 'r', op: 1, chunk: big },
      { t: 'fetched', runId: 'r', op: 2, response: { ...head, body: small } },
      { t: 'fetched', runId: 'r', op: 3, response: { ...head, body: new Uint8Array(0) } },
      // Not JSON data: it still crosses, as a structured clone.
      { t: 'fetchFailed', runId: 'r', op: 4, error: { code: 'fetch_failed', message: 'no', details: { big: 1n } } },
    ];
    const all = Buffer.concat(sent.map(encodeFrame));
    for (let at = 0; at < all.length; at += 7000) r.push(all.subarray(at, at + 7000));
    expect(violations).toEqual([]);
    expect(messages.map((m) => m.t)).toEqual(['fetchChunk', 'fetched', 'fetched', 'fetchFailed']);
    const bodies = [(messages[0] as { chunk: Uint8Array }).chunk, ...messages.slice(1, 3).map((m) => (m as { response: { body: Uint8Array } }).response.body)];
    expect(bodies.map((b) => Buffer.from(b).equals(b.byteLength === big.length ? big : b.byteLength === 0 ? Buffer.alloc(0) : small))).toEqual([true, true, true]);
    for (const b of bodies) expect([b.byteOffset, b.byteLength]).toEqual([0, b.buffer.byteLength]);
    expect((messages[1] as { response: object }).response).toMatchObject(head);
    expect((messages[3] as { error: { details: unknown } }).error.details).toEqual({ big: 1n });
  });

  it('refuses a frame that announces more than the bound, before reading it', () => {
    const { r, messages, violations } = reader();
    const head = Buffer.alloc(4);
    head.writeUInt32BE(MAX_FRAME_BYTES + 1);
    r.push(head);
    expect(violations).toEqual([`a frame of ${MAX_FRAME_BYTES + 1} bytes (the bound is ${MAX_FRAME_BYTES})`]);
    // Nothing after a violation is read.
    r.push(encodeFrame({ t: 'beat', rssBytes: 1, capBytes: 2, runs: 0 }));
    expect(messages).toEqual([]);
  });

  it('refuses a message the host may not send (an engine-only message, a forged field)', () => {
    for (const forged of [
      { t: 'run', runId: 'x', fn: 'f', hash: 'h', limits: {}, argsJson: '{}', measureHeap: false },
      { t: 'log', runId: 'r', level: 'trace', message: 'm', at: 0 },
      { t: 'fetch', runId: 'r', op: 1, request: { url: 'https://x', method: 'GET', headers: [['a']], redirect: 'follow' } },
    ]) {
      const { r, messages, violations } = reader();
      r.push(rawFrame(forged));
      expect(messages).toEqual([]);
      expect(violations[0]).toMatch(/^a malformed message/);
    }
  });

  it('refuses a JSON frame that lies about its parts, carries bytes a message has none of, or names no message', () => {
    /** A frame of the JSON kinds as a hostile host could write it: `[length][json]` or `[length][0x01][json length][json][bytes]`. */
    const jsonFrame = (json: string, bytes?: Buffer, claimedJsonBytes = Buffer.byteLength(json)): Buffer => {
      const body = bytes === undefined ? Buffer.from(json) : Buffer.concat([Buffer.from([0x01]), Buffer.alloc(4), Buffer.from(json), bytes]);
      if (bytes !== undefined) body.writeUInt32BE(claimedJsonBytes, 1);
      const head = Buffer.alloc(4);
      head.writeUInt32BE(body.length);
      return Buffer.concat([head, body]);
    };
    const beat = JSON.stringify({ t: 'beat', rssBytes: 1, capBytes: 2, runs: 0 });
    const fetch = JSON.stringify({ t: 'fetch', runId: 'r', op: 1, request: { url: 'https://x.test/', method: 'POST', headers: [], redirect: 'follow' } });
    const cases: Array<[string, Buffer, RegExp]> = [
      ['a JSON length past the end of the frame', jsonFrame(fetch, Buffer.from('body'), 100_000), /^a frame that does not deserialize$/],
      ['bytes on a message that carries none', jsonFrame(beat, Buffer.from('extra')), /^a frame that does not deserialize$/],
      ['bytes on a message type that is an Object.prototype name', jsonFrame(JSON.stringify({ t: 'toString' }), Buffer.from('x')), /^a frame that does not deserialize$/],
      ['bytes on a message type of "__proto__"', jsonFrame(JSON.stringify({ t: '__proto__' }), Buffer.from('x')), /^a frame that does not deserialize$/],
      ['bytes on JSON that is not an object', jsonFrame('null', Buffer.from('x')), /^a frame that does not deserialize$/],
      ['an unknown kind of frame', Buffer.from([0, 0, 0, 2, 0x02, 0x00]), /^a frame that does not deserialize$/],
      ['an empty frame', Buffer.from([0, 0, 0, 0]), /^a frame that does not deserialize$/],
      ['JSON that does not parse', jsonFrame('{"t":"beat",'), /^a frame that does not deserialize$/],
      ['a forged message as JSON', jsonFrame(JSON.stringify({ t: 'run', runId: 'x', fn: 'f', hash: 'h', limits: {}, argsJson: '{}', measureHeap: false })), /^a malformed message/],
    ];
    for (const [what, frame, expected] of cases) {
      const { r, messages, violations } = reader();
      r.push(frame);
      // Nothing after a violation is read.
      r.push(encodeFrame({ t: 'beat', rssBytes: 1, capBytes: 2, runs: 0 }));
      expect({ what, messages, violations }).toEqual({ what, messages: [], violations: [expect.stringMatching(expected)] });
    }
    // The same host message with its body as it should be is read.
    const { r, messages, violations } = reader();
    r.push(jsonFrame(fetch, Buffer.from('body')));
    expect(violations).toEqual([]);
    expect(Buffer.from((messages[0] as { request: { body: Uint8Array } }).request.body).toString()).toBe('body');
  });

  it('refuses bytes that are not a serialized message', () => {
    const { r, violations } = reader();
    const junk = Buffer.from([0, 0, 0, 4, 0xff, 0x13, 0x37, 0x00]);
    r.push(junk);
    expect(violations.length).toBe(1);
  });
});

describe('writing to the sandbox channel', () => {
  // What the other side sees: each write that reaches the channel (one wake-up of the other process)
  // and the messages it reads from them.
  function channel() {
    const writes: Buffer[] = [];
    const stream = new Writable({
      writev(chunks, done) {
        writes.push(Buffer.concat(chunks.map((c) => c.chunk as Buffer)));
        done();
      },
      write(chunk: Buffer, _encoding, done) {
        writes.push(chunk);
        done();
      },
    });
    const read = (): string[] => {
      const seen: string[] = [];
      new FrameReader<HostMessage>(HostMessageCheck, (m) => seen.push(m.t === 'log' ? m.message : m.t), (v) => seen.push(`violation: ${v}`)).push(Buffer.concat(writes));
      return seen;
    };
    return { stream, writes, read };
  }
  const log = (message: string): HostMessage => ({ t: 'log', runId: 'r', level: 'info', message, at: 1 });
  const tick = () => new Promise<void>((resolve) => process.nextTick(resolve));

  it('sends what one stretch of code wrote in one write, once that code has returned', async () => {
    const { stream, writes, read } = channel();
    writeFrame(stream, log('a'));
    writeFrame(stream, log('b'));
    expect(writes).toHaveLength(0);
    await tick();
    expect(writes).toHaveLength(1);
    expect(read()).toEqual(['a', 'b']);
    expect(stream.writableCorked).toBe(0);
  });

  it('sends at once what a run waits on (flushFrames), and what follows in the same stretch after it', async () => {
    const { stream, writes, read } = channel();
    writeFrame(stream, log('before'));
    writeFrame(stream, log('fetch'));
    flushFrames(stream);
    expect(writes).toHaveLength(1);
    expect(read()).toEqual(['before', 'fetch']);
    writeFrame(stream, log('after'));
    flushFrames(stream);
    flushFrames(stream);
    writeFrame(stream, log('last'));
    await tick();
    await tick();
    expect(read()).toEqual(['before', 'fetch', 'after', 'last']);
    // Corks and uncorks balance: nothing is held back for good.
    expect(stream.writableCorked).toBe(0);
    writeFrame(stream, log('later'));
    await tick();
    expect(read().at(-1)).toBe('later');
  });
});

describe('questions on the sandbox channel', () => {
  it('a host may only ask elicit or sample with an object payload; only the engine answers', () => {
    expect(HostMessageCheck({ t: 'ask', runId: 'r', op: 1, kind: 'elicit', payload: { message: 'm', requestedSchema: {} } })).toBeUndefined();
    expect(HostMessageCheck({ t: 'ask', runId: 'r', op: 1, kind: 'keychain', payload: {} })).toBe('kind: expected one of elicit, sample');
    expect(HostMessageCheck({ t: 'ask', runId: 'r', op: 1, kind: 'sample', payload: 'x' })).toBe('payload: expected an object');
    expect(HostMessageCheck({ t: 'answer', runId: 'r', op: 1, ok: true, value: 1 })).toBe('unknown message type "answer"');
    expect(EngineMessageCheck({ t: 'answer', runId: 'r', op: 1, ok: false, value: null, error: { code: 'bad_input', message: 'no' } })).toBeUndefined();
    expect(EngineMessageCheck({ t: 'answer', runId: 'r', op: 1, ok: 'yes', value: null })).toBe('ok: expected a boolean');
  });
});
