// The channel between Electron main and the engine process (src-main/engineProcess/protocol.ts):
// what either side refuses to read or to send. A real engine process behind it is engineProcess.test.ts.
import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage, EngineToMainSchema, MAX_MESSAGE_CHARS, MainToEngineSchema } from '../../src-main/engineProcess/protocol.ts';

describe('the engine channel protocol', () => {
  it('refuses what is not JSON text, too large, or not a message of the protocol', () => {
    expect(decodeMessage(MainToEngineSchema, { type: 'invoke' })).toMatchObject({ ok: false, reason: 'expected JSON text, got object' });
    expect(decodeMessage(MainToEngineSchema, 'x'.repeat(MAX_MESSAGE_CHARS + 1))).toMatchObject({ ok: false, reason: expect.stringContaining('over the 64.0 MiB bound') });
    expect(decodeMessage(MainToEngineSchema, '{"type":')).toMatchObject({ ok: false, reason: 'a message is not valid JSON' });
    expect(decodeMessage(MainToEngineSchema, '{"type":"eval","code":"process.exit()"}')).toMatchObject({ ok: false });
    expect(decodeMessage(MainToEngineSchema, '{"type":"invoke","id":7,"channel":"functions:list","payload":{},"extra":1}')).toMatchObject({ ok: false, id: 7 });
    expect(decodeMessage(EngineToMainSchema, '{"type":"reply","id":3,"envelope":{"ok":false,"error":{"code":"made_up","message":"x"}}}')).toMatchObject({ ok: false, id: 3 });
    expect(decodeMessage(EngineToMainSchema, '{"type":"event","name":"engine:status","payload":{}}')).toMatchObject({ ok: false });
    expect(decodeMessage(EngineToMainSchema, '{"type":"reply","id":3,"envelope":{"ok":true}}')).toMatchObject({ ok: false, id: 3 });
    expect(decodeMessage(EngineToMainSchema, '{"type":"reply","id":3,"envelope":{"ok":true,"value":null}}')).toEqual({ ok: true, message: { type: 'reply', id: 3, envelope: { ok: true, value: null } } });
  });

  it('refuses to send what JSON cannot carry or what is over the bound', () => {
    expect(encodeMessage({ type: 'invoke', id: 1, channel: 'runs:start', payload: { n: 1n } })).toMatchObject({ ok: false, message: expect.stringContaining('cannot be sent as JSON') });
    expect(encodeMessage({ type: 'invoke', id: 1, channel: 'functions:save', payload: 'x'.repeat(MAX_MESSAGE_CHARS) })).toMatchObject({ ok: false, message: expect.stringContaining('more than the 64.0 MiB') });
  });
});
