import { serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { encodeFrame, EngineMessageCheck, FrameReader, HostMessageCheck, MAX_FRAME_BYTES, type HostMessage } from '../../src-main/engine/sandbox/protocol.ts';

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

  it('refuses bytes that are not a serialized message', () => {
    const { r, violations } = reader();
    const junk = Buffer.from([0, 0, 0, 4, 0xff, 0x13, 0x37, 0x00]);
    r.push(junk);
    expect(violations.length).toBe(1);
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
