// The studio's prompts across processes: presence (heartbeat, clean exit, a killed studio going
// stale), questions and answers between connections to one database file, a prompt whose asker
// died, and a write lock held by another process while a prompt is put.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, MemorySecretStore, StudioError, type Engine } from '../../src-main/engine/index.ts';
import { DATABASE_FILE } from '../../src-main/engine/store/database.ts';
import { McpHttpHost } from '../../src-main/mcp/httpHost.ts';
import { createStudioApi } from '../../src-main/engineProcess/studioApi.ts';
import { CALLABLE_BIN, REPO } from '../support/callable.ts';
import { holdWriteLock, undoFaults } from '../support/fsFaults.ts';
import { scratch } from '../support/scratch.ts';
import { until } from '../support/wait.ts';

const s = scratch();
afterEach(undoFaults);

const ENGINE_URL = pathToFileURL(join(REPO, 'src-main/engine/index.ts')).href;

/** Another process with an engine on `dir` that runs `body` (engine in scope) and prints "ready". */
function otherProcess(dir: string, body: string): Promise<ChildProcessWithoutNullStreams> {
  const script = `
    import { createEngine, MemorySecretStore } from ${JSON.stringify(ENGINE_URL)};
    const engine = createEngine({ dataDir: ${JSON.stringify(dir)}, secrets: new MemorySecretStore() });
    process.on('SIGTERM', () => { engine.close(); process.exit(0); });
    setInterval(() => {}, 1000);
    ${body}
    process.stdout.write('ready\\n');`;
  const child = s.child(spawn(process.execPath, ['--no-node-snapshot', '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready')) resolve(child);
    });
    child.on('exit', (code) => reject(new Error(`the other process exited (${code}):\n${out}${err}`)));
  });
}

function engineOn(dir: string): Engine {
  return s.engine(createEngine({ dataDir: dir, secrets: new MemorySecretStore() }));
}

const exited = (child: ChildProcessWithoutNullStreams): Promise<void> => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));

describe("the studio's prompts across processes", () => {
  it('presence: seen from another process, removed at a clean exit, stale a few heartbeats after the studio is killed', async () => {
    const dir = s.dir('callable-prompts-');
    const engine = engineOn(dir);
    expect(engine.prompts.studioOpen()).toBe(false);

    const clean = await otherProcess(dir, 'engine.prompts.openStudio();');
    expect(engine.prompts.studioOpen()).toBe(true);
    clean.kill('SIGTERM');
    await exited(clean);
    // A clean exit removes the row: closed at once, not after the heartbeat goes stale.
    expect(engine.database.prepare('SELECT COUNT(*) FROM studio_presence').pluck().get()).toBe(0);
    expect(engine.prompts.studioOpen()).toBe(false);

    const killed = await otherProcess(dir, 'engine.prompts.openStudio();');
    // Heartbeats keep it open past the staleness window.
    const firstBeat = engine.database.prepare('SELECT heartbeat_at FROM studio_presence').pluck().get() as number;
    await until(() => (engine.database.prepare('SELECT heartbeat_at FROM studio_presence').pluck().get() as number) > firstBeat, 'a heartbeat');
    killed.kill('SIGKILL');
    await exited(killed);
    expect(engine.prompts.studioOpen()).toBe(true);
    await until(() => !engine.prompts.studioOpen(), 'the killed studio to go stale', 15_000);
    expect(engine.database.prepare('SELECT COUNT(*) FROM studio_presence').pluck().get()).toBe(1);
    // The next studio to open clears the stale row.
    engine.prompts.openStudio();
    expect(engine.database.prepare('SELECT COUNT(*) FROM studio_presence').pluck().get()).toBe(1);
    engine.prompts.closeStudio();
    expect(engine.prompts.studioOpen()).toBe(false);
  });

  it('an answer written by the studio reaches the asking process; a second answer, or one for no prompt, is refused', async () => {
    const dir = s.dir('callable-prompts-');
    const asker = engineOn(dir);
    const studio = engineOn(dir);
    const seen: string[][] = [];
    const stop = studio.prompts.watch((pending) => seen.push(pending.map((p) => p.functionName)));
    try {
      const asked = asker.prompts.ask({ kind: 'elicitation', functionName: 'book_room', client: 'agent 1.0', args: { room: 'B' }, message: 'Which floor?', schema: { type: 'object', properties: { floor: { type: 'number' } } }, waitMs: 20_000 });
      await until(() => seen.some((list) => list.includes('book_room')), 'the studio to see the prompt');
      const [prompt] = studio.prompts.pending();
      expect(prompt).toMatchObject({ kind: 'elicitation', client: 'agent 1.0', args: { room: 'B' }, message: 'Which floor?', schema: { properties: { floor: { type: 'number' } } }, sessionScoped: false });
      studio.prompts.answer(prompt!.id, { action: 'accept', content: { floor: 3 } });
      expect(await asked).toEqual({ state: 'answered', answer: { action: 'accept', content: { floor: 3 } } });
      await until(() => seen.at(-1)?.length === 0, 'the prompt to leave the studio');
      expect(() => studio.prompts.answer(prompt!.id, { action: 'decline' })).toThrow(/already answered/);
      const unknown = (() => {
        try {
          studio.prompts.answer('00000000-0000-4000-8000-000000000000', { action: 'decline' });
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(unknown).toBeInstanceOf(StudioError);
      expect(unknown).toMatchObject({ code: 'conflict', message: 'the prompt can no longer be answered: there is no such prompt' });
    } finally {
      stop();
    }
  });

  it('a prompt whose asker was killed leaves the studio at its deadline and can no longer be answered', async () => {
    const dir = s.dir('callable-prompts-');
    const studio = engineOn(dir);
    const asker = await otherProcess(dir, "void engine.prompts.ask({ kind: 'approval', functionName: 'drop_table', args: {}, message: 'Drop?', waitMs: 1500 });");
    await until(() => studio.prompts.pending().length === 1, 'the prompt');
    const [prompt] = studio.prompts.pending();
    asker.kill('SIGKILL');
    await exited(asker);
    await until(() => studio.prompts.pending().length === 0, 'the orphaned prompt to leave the list');
    expect(() => studio.prompts.answer(prompt!.id, { action: 'accept', content: { decision: 'allow_once' } })).toThrow(/its deadline passed/);
  });

  it("ctx.elicit's studio fallback: refused when no studio is open, answered by the studio, cancel when nobody answers in time", async () => {
    const dir = s.dir('callable-prompts-');
    const asker = engineOn(dir);
    const studio = engineOn(dir);
    const question = { functionName: 'book_room', message: 'Which floor?', requestedSchema: { type: 'object', properties: { floor: { type: 'number' } }, required: ['floor'] }, timeoutMs: 20_000 };
    await expect(asker.askInStudio(question, new AbortController().signal)).rejects.toMatchObject({
      code: 'ask_unavailable',
      message: 'book_room asked for input and there is no one to ask: this client does not support elicitation and Callable Studio is not open. Open Callable Studio, or use a client that supports elicitation.',
    });

    studio.prompts.openStudio();
    const answered = asker.askInStudio(question, new AbortController().signal);
    await until(() => studio.prompts.pending().length === 1, 'the question in the studio');
    const [prompt] = studio.prompts.pending();
    expect(prompt).toMatchObject({ kind: 'elicitation', functionName: 'book_room', message: 'Which floor?', schema: question.requestedSchema });
    studio.prompts.answer(prompt!.id, { action: 'accept', content: { floor: 4 } });
    expect(await answered).toEqual({ action: 'accept', content: { floor: 4 }, via: 'studio' });

    expect(await asker.askInStudio({ ...question, timeoutMs: 300 }, new AbortController().signal)).toEqual({ action: 'cancel', via: 'studio' });
    expect(studio.prompts.recent(1)[0]).toMatchObject({ kind: 'elicitation', state: 'expired' });
  });

  it("the studio API marks the studio open while it serves, lists and answers prompts, and refuses a malformed or stale answer", async () => {
    const dir = s.dir('callable-prompts-');
    const asker = engineOn(dir);
    const engine = engineOn(dir);
    const events: unknown[] = [];
    const api = createStudioApi({ engine, mcp: new McpHttpHost(engine, { port: 0 }), resourcesDir: join(REPO, 'resources'), callableCommand: CALLABLE_BIN, diagnostic: () => {} });
    const off = api.subscribe('prompts:pending', (pending) => events.push(pending));
    try {
      expect(asker.prompts.studioOpen()).toBe(true);
      const asked = asker.prompts.ask({ kind: 'approval', functionName: 'drop_table', client: 'agent 2', args: { table: 'users' }, message: 'Drop?', sessionScoped: true, waitMs: 20_000 });
      await until(() => events.length > 0, 'the prompts:pending event');
      const listed = await api.dispatch('prompts:list', {});
      expect(listed).toMatchObject({ ok: true, value: [{ functionName: 'drop_table', client: 'agent 2', args: { table: 'users' }, sessionScoped: true }] });
      const id = (listed as { value: Array<{ id: string }> }).value[0]!.id;
      expect(await api.dispatch('prompts:answer', { id: 'not-an-id', action: 'accept' })).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringContaining('prompts:answer: id:') } });
      expect(await api.dispatch('prompts:answer', { id, action: 'maybe' })).toMatchObject({ ok: false, error: { code: 'bad_input' } });
      // Form values are primitive fields of bounded size (as MCP elicitation forms are).
      expect(await api.dispatch('prompts:answer', { id, action: 'accept', content: { note: 'n'.repeat(10_001) } })).toMatchObject({ ok: false, error: { code: 'bad_input', message: expect.stringContaining('content.note') } });
      expect(await api.dispatch('prompts:answer', { id, action: 'accept', content: { nested: { a: 1 } } })).toMatchObject({ ok: false, error: { code: 'bad_input' } });
      expect(await api.dispatch('prompts:answer', { id, action: 'accept', content: { decision: 'allow_session' } })).toEqual({ ok: true, value: { answered: true } });
      expect(await asked).toEqual({ state: 'answered', answer: { action: 'accept', content: { decision: 'allow_session' } } });
      expect(await api.dispatch('prompts:answer', { id, action: 'decline' })).toEqual({ ok: false, error: { code: 'conflict', message: 'the prompt can no longer be answered: it was already answered' } });
      await until(() => JSON.stringify(events.at(-1)) === '[]', 'the event saying nothing waits');
    } finally {
      off();
      api.close();
    }
    expect(asker.prompts.studioOpen()).toBe(false);
  });

  it('bounds what a prompt keeps: arguments over 16 KiB become a marked excerpt, the message 2000 characters; old answered prompts are pruned after 30 days', async () => {
    const dir = s.dir('callable-prompts-');
    const engine = engineOn(dir);
    const controller = new AbortController();
    const asked = engine.prompts.ask({ kind: 'approval', functionName: 'bulk_delete', args: { ids: 'x'.repeat(20_000) }, message: 'm'.repeat(3000), waitMs: 20_000, signal: controller.signal });
    const [prompt] = engine.prompts.pending();
    expect(prompt!.args).toEqual({ truncated: true, chars: JSON.stringify({ ids: 'x'.repeat(20_000) }).length, start: JSON.stringify({ ids: 'x'.repeat(20_000) }).slice(0, 2000) });
    expect(prompt!.message).toHaveLength(2000);
    controller.abort();
    expect(await asked).toEqual({ state: 'cancelled' });
    // Just under the bound: kept whole.
    const second = new AbortController();
    const small = engine.prompts.ask({ kind: 'approval', functionName: 'bulk_delete', args: { ids: 'y'.repeat(16_000) }, message: 'ok', waitMs: 20_000, signal: second.signal });
    expect(engine.prompts.pending()[0]!.args).toEqual({ ids: 'y'.repeat(16_000) });
    second.abort();
    expect(await small).toEqual({ state: 'cancelled' });

    const day = 24 * 3600 * 1000;
    const insert = engine.database.prepare("INSERT INTO prompts (id, kind, function_name, args, message, created_at, expires_at, state) VALUES (?, 'approval', 'old_one', '{}', 'old', ?, ?, 'answered')");
    insert.run('old-31', new Date(Date.now() - 31 * day).toISOString(), Date.now() - 31 * day);
    insert.run('old-29', new Date(Date.now() - 29 * day).toISOString(), Date.now() - 29 * day);
    engine.prompts.openStudio();
    expect(engine.prompts.get('old-31')).toBeUndefined();
    expect(engine.prompts.get('old-29')).toMatchObject({ state: 'answered' });
  });

  it('"ask before every call" is kept in function.json by export and import', async () => {
    const dir = s.dir('callable-prompts-');
    const engine = engineOn(dir);
    await engine.saveFunction({ spec: { name: 'refund', askBeforeCall: true }, source: 'export default () => 1' });
    const out = s.dir('callable-prompts-export-');
    engine.exportFunctions(out);
    expect(JSON.parse(readFileSync(join(out, 'refund', 'function.json'), 'utf8'))).toMatchObject({ name: 'refund', askBeforeCall: true });
    const other = engineOn(s.dir('callable-prompts-'));
    await other.importFunctions(out);
    expect(other.functions.get('refund').askBeforeCall).toBe(true);
  });

  it('a call that needs approval while another process holds the write lock is refused with database_busy, and recorded once the lock goes', async () => {
    const dir = s.dir('callable-prompts-');
    const engine = engineOn(dir);
    const fn = await engine.saveFunction({ spec: { name: 'wipe', annotations: { destructiveHint: true } }, source: 'export default () => "wiped"' });
    engine.prompts.openStudio();
    const lock = await holdWriteLock(join(dir, DATABASE_FILE), 15_000, REPO);
    try {
      const outcome = await engine.approveCall({ fn, args: {}, transport: 'stdio', session: {} });
      expect(outcome).toMatchObject({ allowed: false, decision: 'no_way_to_ask' });
      expect((outcome as { message: string }).message).toMatch(/^wipe was not run: it needs a person's approval and the question could not be put to Callable Studio: the database \S+callable\.db is busy: another Callable Studio process is writing \(waited 5 s for it\); try again$/);
      expect(engine.prompts.pending()).toEqual([]);
    } finally {
      lock.release();
      await lock.released;
    }
    await until(() => engine.runs.list({ functionName: 'wipe' }).length === 1, 'the refusal to be recorded');
    expect(engine.runs.list({ functionName: 'wipe' })[0]).toMatchObject({ ok: false, errorCode: 'database_busy', approval: 'no_way_to_ask' });
  });
});
