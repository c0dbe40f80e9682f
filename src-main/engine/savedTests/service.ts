import { performance } from 'node:perf_hooks';
import type { FunctionRepository } from '../functions/repository.ts';
import {
  formatZodError,
  MAX_TEST_CASES,
  StudioError,
  TEST_CASE_VERSION,
  type ErrorCode,
  TestCaseNameSchema,
  type RunResult,
  type TestCase,
  type TestCaseInfo,
  type TestCaseInput,
  type TestCaseResult,
  type TestDifference,
  type TestExpect,
  type TestRunSummary,
  type TestSource,
} from '../model/index.ts';
import type { RunOptions } from '../run.ts';
import { nowIso, writeTransaction, type Db } from '../store/database.ts';
import { parseTestCase } from './caseFiles.ts';
import { jsonDifferences } from './compare.ts';
import { decodeBody, expectOf } from './recorder.ts';
import type { RecordingStore } from './recordings.ts';
import { mismatchDifferences, Replayer } from './replay.ts';

/** A secret the store holds: its credential's name, and how a refusal names it. */
export interface StoredSecret {
  name: string;
  label: string;
  secret: string;
}

export interface TestServiceDeps {
  db: Db;
  functions: FunctionRepository;
  recordings: RecordingStore;
  run: (name: string, args: unknown, options: RunOptions) => Promise<RunResult>;
  /** Every stored credential secret (the keychain, or CALLABLE_SECRET_* in env mode); throws when they cannot be read. */
  storedSecrets: () => Promise<StoredSecret[]>;
  /** Hears what an import could not check (a secret it could not read); the import goes on. */
  notice?: (message: string) => void;
}

export interface SaveCaseOptions {
  /** Replace a case of the same name (default: refuse, `conflict`). */
  replace?: boolean;
}

/**
 * Saved test cases of functions: kept in the database (the studio's copy; export writes them to
 * `tests/<name>.json`), made from past runs, and replayed offline with ctx.fetch answered from the
 * recording. Nothing is written that holds a stored secret.
 */
export class TestService {
  readonly #deps: TestServiceDeps;

  constructor(deps: TestServiceDeps) {
    this.#deps = deps;
  }

  /** The cases of `functionName`, by name. */
  list(functionName: string): TestCaseInfo[] {
    return this.all(functionName).map((c) => ({ name: c.name, exchanges: c.exchanges.length, recordedAt: c.recordedAt, source: c.source, expectOk: c.expect.ok }));
  }

  /** Every case of `functionName`, in full, by name. */
  all(functionName: string): TestCase[] {
    const id = this.#functionId(functionName);
    const rows = this.#deps.db.prepare('SELECT body FROM test_cases WHERE function_id = ? ORDER BY name').all(id) as Array<{ body: string }>;
    return rows.map((r) => JSON.parse(r.body) as TestCase);
  }

  get(functionName: string, caseName: string): TestCase {
    const id = this.#functionId(functionName);
    const row = this.#deps.db.prepare('SELECT body FROM test_cases WHERE function_id = ? AND name = ?').get(id, caseName) as { body: string } | undefined;
    if (!row) throw this.#noCase(functionName, caseName);
    return JSON.parse(row.body) as TestCase;
  }

  /**
   * Checks and saves a case: the format, no truncated recording, and no stored secret anywhere in
   * it (a hit refuses the save naming the credential). Refuses an existing name unless `replace`.
   */
  async save(functionName: string, input: TestCaseInput, options: SaveCaseOptions = {}): Promise<TestCase> {
    this.#functionId(functionName);
    const testCase = parseTestCase(input, `test case of ${functionName}`);
    this.#refuseTruncated(testCase);
    // A secret that is not set cannot be in the case; one that cannot be read might be.
    const unchecked = await this.#refuseSecrets(testCase);
    if (unchecked?.failed) throw new StudioError(unchecked.failed, `test case "${testCase.name}" was not saved: ${unchecked.message}`);
    return this.#store(functionName, testCase, options);
  }

  #store(functionName: string, testCase: TestCase, options: SaveCaseOptions): TestCase {
    const id = this.#functionId(functionName);
    const existing = this.#deps.db.prepare('SELECT 1 FROM test_cases WHERE function_id = ? AND name = ?').get(id, testCase.name);
    if (existing && !options.replace) {
      throw new StudioError('conflict', `${functionName} already has a test case named "${testCase.name}"; pick another name, or delete or rename that one first`);
    }
    const count = (this.#deps.db.prepare('SELECT COUNT(*) AS n FROM test_cases WHERE function_id = ?').get(id) as { n: number }).n;
    if (!existing && count >= MAX_TEST_CASES) throw new StudioError('bad_input', `${functionName} has ${MAX_TEST_CASES} test cases, the most a function keeps; delete some first`);
    writeTransaction(this.#deps.db, () =>
      this.#deps.db
        .prepare('INSERT INTO test_cases (function_id, name, body, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(function_id, name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at')
        .run(id, testCase.name, JSON.stringify(testCase), nowIso()),
    );
    return testCase;
  }

  /** Refuses (bad_input, conflict, not_found) a case name `save` would refuse for `functionName`: checked before a paid run. */
  checkNewName(functionName: string, caseName: string): void {
    const parsed = TestCaseNameSchema.safeParse(caseName);
    if (!parsed.success) throw new StudioError('bad_input', `"${caseName}": ${formatZodError(parsed.error)}`);
    const id = this.#functionId(functionName);
    if (this.#deps.db.prepare('SELECT 1 FROM test_cases WHERE function_id = ? AND name = ?').get(id, caseName)) {
      throw new StudioError('conflict', `${functionName} already has a test case named "${caseName}"; pick another name, or delete or rename that one first`);
    }
  }

  /**
   * Checks the cases of a function being imported before anything is written: none truncated, none
   * holding a stored secret. The files are already the user's, so a secret that cannot be read (no
   * keychain, not in the environment) does not stop the import: the cases are checked against the
   * secrets that could be read, and `notice` says which were not.
   */
  async checkCases(functionName: string, cases: readonly TestCase[]): Promise<void> {
    const unchecked = new Map<string, string>();
    for (const c of cases) {
      this.#refuseTruncated(c);
      const missed = await this.#refuseSecrets(c);
      if (missed) unchecked.set(c.name, missed.message);
    }
    if (unchecked.size > 0) {
      const names = [...unchecked.keys()].map((n) => `"${n}"`).join(', ');
      this.#deps.notice?.(`${functionName}: test case${unchecked.size === 1 ? '' : 's'} ${names} imported, checked only against the secrets that could be read: ${[...new Set(unchecked.values())].join('; ')}`);
    }
  }

  /** Saves the cases read from a function's folder (import), checked by `checkCases`: each replaces a case of the same name. */
  async importCases(functionName: string, cases: readonly TestCase[]): Promise<void> {
    for (const c of cases) this.#store(functionName, parseTestCase(c, `test case of ${functionName}`), { replace: true });
  }

  delete(functionName: string, caseName: string): void {
    const id = this.#functionId(functionName);
    const changes = writeTransaction(this.#deps.db, () => this.#deps.db.prepare('DELETE FROM test_cases WHERE function_id = ? AND name = ?').run(id, caseName).changes);
    if (changes === 0) throw this.#noCase(functionName, caseName);
  }

  rename(functionName: string, caseName: string, newName: string): TestCase {
    const parsed = TestCaseNameSchema.safeParse(newName);
    if (!parsed.success) throw new StudioError('bad_input', `"${newName}": ${formatZodError(parsed.error)}`);
    const current = this.get(functionName, caseName);
    if (caseName === newName) return current;
    const id = this.#functionId(functionName);
    if (this.#deps.db.prepare('SELECT 1 FROM test_cases WHERE function_id = ? AND name = ?').get(id, newName)) {
      throw new StudioError('conflict', `${functionName} already has a test case named "${newName}"; pick another name`);
    }
    const renamed: TestCase = { ...current, name: newName };
    writeTransaction(this.#deps.db, () =>
      this.#deps.db.prepare('UPDATE test_cases SET name = ?, body = ?, updated_at = ? WHERE function_id = ? AND name = ?').run(newName, JSON.stringify(renamed), nowIso(), id, caseName),
    );
    return renamed;
  }

  /**
   * Saves run `runId` (one of the last runs, from any caller) as the case `caseName` of its
   * function: its arguments, its ctx.fetch exchanges and its result as the expectation.
   */
  async fromRun(runId: string, caseName: string, options: SaveCaseOptions & { source?: TestSource; ignore?: string[] } = {}): Promise<TestCase> {
    const recording = this.#deps.recordings.get(runId);
    if (!recording) {
      throw new StudioError('not_found', `run ${runId} has no recording to make a test case from: only the last runs that got past argument checks keep their requests; run the function again and save that run`);
    }
    if (recording.truncated) throw new StudioError('bad_input', `test case "${caseName}" was not saved: ${recording.truncated}`);
    return this.save(
      recording.functionName,
      {
        version: TEST_CASE_VERSION,
        name: caseName,
        args: recording.args,
        exchanges: recording.exchanges,
        expect: recording.expect,
        ignore: options.ignore ?? [],
        recordedAt: recording.recordedAt,
        source: options.source ?? 'history',
      },
      options,
    );
  }

  /** Replays the cases of `functionName` (all, or the one named); `update` rewrites the expectations of those whose result changed. */
  async run(functionName: string, caseName?: string, options: { update?: boolean } = {}): Promise<TestCaseResult[]> {
    const cases = caseName === undefined ? this.all(functionName) : [this.get(functionName, caseName)];
    const results: TestCaseResult[] = [];
    for (const c of cases) results.push(await this.#replay(functionName, c, options.update ?? false));
    return results;
  }

  /** Replays the cases of the named functions (default: every function that has cases). */
  async runAll(functionNames: readonly string[] = [], options: { case?: string; update?: boolean } = {}): Promise<TestRunSummary> {
    const names = functionNames.length > 0 ? [...functionNames] : this.#functionsWithCases();
    for (const n of names) this.#functionId(n);
    if (options.case !== undefined) {
      const having = names.filter((n) => this.list(n).some((c) => c.name === options.case));
      if (having.length === 0) throw new StudioError('not_found', `no test case named "${options.case}" in ${names.length === 0 ? 'any function' : names.join(', ')}`);
      names.splice(0, names.length, ...having);
    }
    const results: TestCaseResult[] = [];
    for (const n of names) results.push(...(await this.run(n, options.case, options)));
    return {
      results,
      passed: results.filter((r) => r.status === 'pass').length,
      failed: results.filter((r) => r.status === 'fail' || r.status === 'error').length,
      updated: results.filter((r) => r.status === 'updated').length,
    };
  }

  async #replay(functionName: string, testCase: TestCase, update: boolean): Promise<TestCaseResult> {
    const started = performance.now();
    const replayer = new Replayer(testCase.exchanges);
    const base = { function: functionName, case: testCase.name };
    const result = await this.#deps.run(functionName, testCase.args, { caller: 'test', fetch: replayer.fetch });
    const durationMs = Math.round((performance.now() - started) * 10) / 10;
    const actual = expectOf(result);
    const mismatch = replayer.finish();
    if (mismatch) {
      const differences = mismatchDifferences(mismatch);
      const what = mismatch.actual ? `${mismatch.actual.method} ${mismatch.actual.url}` : `${mismatch.expected!.method} ${mismatch.expected!.url}`;
      const message = mismatch.actual === undefined
        ? `request #${mismatch.number} (${what}) was recorded but the replay did not make it`
        : mismatch.expected === undefined
          ? `request #${mismatch.number} (${what}) is not in the recording`
          : `request #${mismatch.number} (${what}) does not match the recording`;
      return { ...base, status: 'fail', durationMs, message, expected: testCase.expect, actual, differences };
    }
    const differences = compareExpect(testCase.expect, actual, testCase.ignore);
    if (differences.length === 0) return { ...base, status: 'pass', durationMs, expected: testCase.expect, actual };
    if (update) {
      await this.save(functionName, { ...testCase, expect: actual }, { replace: true });
      return { ...base, status: 'updated', durationMs, message: `expectation rewritten (${describeDifference(differences[0]!)})`, expected: testCase.expect, actual, differences };
    }
    return { ...base, status: 'fail', durationMs, message: describeDifference(differences[0]!), expected: testCase.expect, actual, differences };
  }

  #functionsWithCases(): string[] {
    const rows = this.#deps.db.prepare('SELECT DISTINCT f.name FROM test_cases t JOIN functions f ON f.id = t.function_id ORDER BY f.name').all() as Array<{ name: string }>;
    return rows.map((r) => r.name);
  }

  #refuseTruncated(testCase: TestCase): void {
    const cut = testCase.exchanges.findIndex((e) => e.request.truncated || ('response' in e && e.response.truncated));
    if (cut >= 0) {
      throw new StudioError(
        'bad_input',
        `test case "${testCase.name}" was not saved: request #${cut + 1} (${testCase.exchanges[cut]!.request.method} ${testCase.exchanges[cut]!.request.url}) has a body over the recording limit, so it was cut and could not be replayed`,
      );
    }
  }

  /**
   * Refuses a case holding a stored secret. Returns what could not be checked: the secrets that
   * could not be read (`failed`: the store's error) or are not set here, and why.
   */
  async #refuseSecrets(testCase: TestCase): Promise<{ failed?: ErrorCode; message: string } | undefined> {
    // No credential, nothing stored to look for: no keychain is needed.
    const wanted = (this.#deps.db.prepare('SELECT name FROM credentials ORDER BY name').all() as Array<{ name: string }>).map((r) => r.name);
    if (wanted.length === 0) return undefined;
    let secrets: StoredSecret[] = [];
    let problem: { code: ErrorCode; message: string } | undefined;
    try {
      secrets = await this.#deps.storedSecrets();
    } catch (error) {
      problem = { code: error instanceof StudioError ? error.code : 'internal', message: error instanceof Error ? error.message : String(error) };
    }
    const hit = findSecret(testCase, secrets);
    if (hit) {
      throw new StudioError(
        'bad_input',
        `test case "${testCase.name}" was not saved: ${hit.where} contains the secret of ${hit.label}; a test case must never hold a stored secret (make the vendor stand-in or the function not echo it, or save another run)`,
        { credential: hit.label },
      );
    }
    const unread = wanted.filter((c) => !secrets.some((s) => s.name === c));
    if (unread.length === 0) return undefined;
    const which = `the secret of credential${unread.length === 1 ? '' : 's'} ${unread.map((c) => `"${c}"`).join(', ')}`;
    return problem ? { failed: problem.code, message: `${which} could not be read (${problem.message})` } : { message: `${which} could not be read here (none is set)` };
  }

  #functionId(name: string): number {
    return this.#deps.functions.get(name).id;
  }

  #noCase(functionName: string, caseName: string): StudioError {
    const names = this.list(functionName).map((c) => c.name);
    return new StudioError('not_found', `${functionName} has no test case named "${caseName}"${names.length > 0 ? ` (it has ${names.join(', ')})` : ' (it has none)'}`);
  }
}

/** The first place in `testCase` that holds one of `secrets` (raw, JSON-escaped, URL-encoded or base64, also inside base64 bodies). */
export function findSecret(testCase: TestCase, secrets: readonly StoredSecret[]): { label: string; where: string } | undefined {
  const needles = secrets
    .filter((s) => s.secret.length >= 4)
    .flatMap((s) => [...new Set([s.secret, JSON.stringify(s.secret).slice(1, -1), encodeURIComponent(s.secret), Buffer.from(s.secret).toString('base64')])].map((n) => ({ needle: n, label: s.label })));
  if (needles.length === 0) return undefined;
  const look = (text: string, where: string) => {
    const found = needles.find((n) => text.includes(n.needle));
    return found ? { label: found.label, where } : undefined;
  };
  const stack: Array<{ value: unknown; where: string }> = [{ value: testCase, where: 'the case' }];
  while (stack.length > 0) {
    const { value, where } = stack.pop()!;
    if (typeof value === 'string') {
      const hit = look(value, where);
      if (hit) return hit;
    } else if (value && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) {
        const at = Array.isArray(value) ? `${where}[${key}]` : where === 'the case' ? key : `${where}.${key}`;
        const hit = look(key, at);
        if (hit) return hit;
        stack.push({ value: child, where: at });
      }
    }
  }
  for (const [i, e] of testCase.exchanges.entries()) {
    for (const [part, body] of [['request', e.request], ['response', 'response' in e ? e.response : undefined]] as const) {
      if (body?.bodyBase64 === undefined) continue;
      const hit = look(Buffer.from(decodeBody(body)!).toString('latin1'), `exchanges[${i}].${part}.bodyBase64`);
      if (hit) return hit;
    }
  }
  return undefined;
}

function compareExpect(expected: TestExpect, actual: TestExpect, ignore: readonly string[]): TestDifference[] {
  if (expected.ok !== actual.ok) {
    return [{ path: '$', expected: expected.ok ? expected.value : { error: expected.code }, actual: actual.ok ? actual.value : { error: actual.code }, note: expected.ok ? 'expected a result, the run failed' : 'expected an error, the run succeeded' }];
  }
  if (!expected.ok && !actual.ok) return expected.code === actual.code ? [] : [{ path: 'error code', expected: expected.code, actual: actual.code }];
  if (expected.ok && actual.ok) {
    const differences = jsonDifferences(expected.value, actual.value, ignore);
    if (JSON.stringify(expected.content ?? null) !== JSON.stringify(actual.content ?? null)) differences.push({ path: 'content', expected: expected.content, actual: actual.content });
    return differences;
  }
  return [];
}

function describeDifference(d: TestDifference): string {
  const show = (v: unknown): string => (v === undefined ? '(absent)' : truncate(JSON.stringify(v)));
  if (d.note === 'missing') return `${d.path}: expected ${show(d.expected)}, missing`;
  if (d.note === 'not expected') return `${d.path}: not expected, got ${show(d.actual)}`;
  return `${d.path}: expected ${show(d.expected)}, got ${show(d.actual)}${d.note && d.path === '$' ? ` (${d.note})` : ''}`;
}

function truncate(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}
