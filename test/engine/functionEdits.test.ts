import { describe, expect, it } from 'vitest';
import { specOf } from '../../src-main/engine/index.ts';
import { defineFunction, testEngine } from '../support/engine.ts';

const engine = testEngine();
const TAKEN = (name: string) => ({ code: 'conflict', message: `a function named "${name}" already exists; pick another name` });

describe('copying, renaming and deleting functions (the engine calls the studio and the CLI share)', () => {
  it('copies a function under a new name: same spec and source, a first revision, runs on its own', async () => {
    await defineFunction(engine, { name: 'original', description: 'Greets', inputSchema: { type: 'object', properties: { who: { type: 'string' } } } }, 'export default ({ who }) => "hi " + who');
    await defineFunction(engine, { name: 'original', description: 'Greets', inputSchema: { type: 'object', properties: { who: { type: 'string' } } } }, 'export default ({ who }) => "hello " + who');
    const copy = await engine.duplicateFunction('original', 'original_copy');
    expect(copy).toMatchObject({ name: 'original_copy', description: 'Greets', revision: 1, source: 'export default ({ who }) => "hello " + who' });
    expect(copy.inputSchema).toEqual(engine.functions.get('original').inputSchema);
    expect(await engine.run('original_copy', { who: 'ada' }, { caller: 'test' })).toMatchObject({ ok: true, value: 'hello ada' });
  });

  it('refuses a name another function has, in one line, for a copy and a rename alike, and changes nothing', async () => {
    await defineFunction(engine, { name: 'first' }, 'export default () => 1');
    await defineFunction(engine, { name: 'second' }, 'export default () => 2');
    await expect(engine.duplicateFunction('first', 'second')).rejects.toMatchObject(TAKEN('second'));
    await expect(engine.functions.rename('first', 'second')).rejects.toMatchObject(TAKEN('second'));
    expect(engine.functions.get('second')).toMatchObject({ source: 'export default () => 2', revision: 1 });
    expect(engine.functions.get('first')).toMatchObject({ source: 'export default () => 1', revision: 1 });
  });

  it('deletes a function and hands back what it was, so it can be put back', async () => {
    const saved = await defineFunction(engine, { name: 'doomed', description: 'Short-lived' }, 'export default () => "still here"');
    const removed = engine.functions.delete('doomed');
    expect(removed).toMatchObject({ name: 'doomed', description: 'Short-lived', source: saved.source });
    expect(engine.functions.find('doomed')).toBeUndefined();
    expect(() => engine.functions.delete('doomed')).toThrow(expect.objectContaining({ code: 'not_found' }));
    await engine.saveFunction({ spec: specOf(removed), source: removed.source });
    expect(await engine.run('doomed', {}, { caller: 'test' })).toMatchObject({ ok: true, value: 'still here' });
  });
});

describe('applying advice', () => {
  it('saves the inferred outputSchema as a new revision; advice read at an older revision, or no longer given, changes nothing', async () => {
    const fn = await defineFunction(engine, { name: 'shaped' }, 'export default () => ({ count: 2, items: ["a", "b"] })');
    expect(await engine.run('shaped', {}, { caller: 'test' })).toMatchObject({ ok: true });
    expect(engine.advise(['shaped']).map((a) => a.kind)).toContain('output_schema');

    await defineFunction(engine, { name: 'shaped', description: 'moved on' }, fn.source);
    await expect(engine.applyAdvice('shaped', 'output_schema', fn.revision)).rejects.toMatchObject({
      code: 'conflict',
      message: 'shaped changed since this advice was given (it is now at revision 2); look at the advice again',
    });
    expect(engine.functions.get('shaped').outputSchema).toBeUndefined();

    const applied = await engine.applyAdvice('shaped', 'output_schema', 2);
    expect(applied).toMatchObject({ revision: 3, outputSchema: { type: 'object', properties: { count: { type: 'integer' }, items: { type: 'array' } } } });
    expect(await engine.run('shaped', {}, { caller: 'test' })).toMatchObject({ ok: true, value: { count: 2, items: ['a', 'b'] } });

    await expect(engine.applyAdvice('shaped', 'output_schema', 3)).rejects.toMatchObject({ code: 'conflict', message: 'there is no "output_schema" advice for shaped any more; nothing was changed' });
    expect(engine.functions.get('shaped').revision).toBe(3);
  });
});
