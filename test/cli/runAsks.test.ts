import { describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, type Engine } from '../../src-main/engine/index.ts';
import { cli } from '../support/cli.ts';
import { scratch } from '../support/scratch.ts';
import { untilValue } from '../support/wait.ts';

// `callable run` has no client to ask: a function's ctx.elicit question goes to the studio when one
// is open on the same data folder, and is refused, saying why, when none is.
const s = scratch();
const ENV = { ...process.env, CALLABLE_SECRETS: 'env' };
const SOURCE = `export default async (args, ctx) => {
  const answer = await ctx.elicit('Which floor?', { type: 'object', properties: { floor: { type: 'integer' } }, required: ['floor'] });
  return answer.action === 'accept' ? { floor: answer.content.floor } : { floor: null, action: answer.action };
}`;

async function folderWithAskingFunction(): Promise<{ dataDir: string; studio: Engine }> {
  const dataDir = s.dir('callable-run-asks-');
  const studio = s.engine(createEngine({ dataDir, secrets: new MemorySecretStore() }));
  await studio.saveFunction({ spec: { name: 'book_room', timeoutMs: 20_000 }, source: SOURCE });
  return { dataDir, studio };
}

describe('callable run of a function that asks (ctx.elicit)', () => {
  it('is refused in one line naming the way out when the studio is not open (exit 1)', async () => {
    const { dataDir } = await folderWithAskingFunction();
    const run = await cli(['run', 'book_room', '--data-dir', dataDir], { env: ENV });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('book_room failed (function_error):');
    expect(run.stderr).toContain('Callable Studio is not open');
  });

  it('asks the studio open on the same data folder, and the function gets the answer', async () => {
    const { dataDir, studio } = await folderWithAskingFunction();
    studio.prompts.openStudio();
    const running = cli(['run', 'book_room', '--data-dir', dataDir], { env: ENV });
    let run;
    try {
      const [prompt] = await untilValue('the question to reach the studio', () => studio.prompts.pending(), (pending) => pending.length === 1);
      expect(prompt).toMatchObject({ kind: 'elicitation', functionName: 'book_room', message: 'Which floor?' });
      studio.prompts.answer(prompt!.id, { action: 'accept', content: { floor: 5 } });
      run = await running;
    } finally {
      studio.prompts.closeStudio();
    }
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ floor: 5 });
  });
});
