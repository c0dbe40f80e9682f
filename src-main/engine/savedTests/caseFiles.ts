import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatZodError, StudioError, TestCaseSchema, type TestCase } from '../model/index.ts';

/** Where a function's folder keeps its saved tests. */
export const TESTS_DIR = 'tests';

/** The cases of a function's folder (`tests/*.json`), each checked; a bad file is a bad_input error naming it. */
export function readCaseFiles(folder: string): TestCase[] {
  const dir = join(folder, TESTS_DIR);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  const cases: TestCase[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const path = join(dir, file);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new StudioError('bad_input', `${path}: not valid JSON (${(error as Error).message})`);
    }
    const testCase = parseTestCase(raw, path);
    if (`${testCase.name}.json` !== file) throw new StudioError('bad_input', `${path}: its "name" is "${testCase.name}"; a case's file is named after it (${testCase.name}.json)`);
    cases.push(testCase);
  }
  return cases;
}

/** A case as its file holds it: the format's key order, two-space indent, trailing newline. */
export function caseFileJson(testCase: TestCase): string {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(TestCaseSchema.shape)) {
    const value = (testCase as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return `${JSON.stringify(out, null, 2)}\n`;
}

/** Writes `cases` as `<folder>/tests/<name>.json`. */
export function writeCaseFiles(folder: string, cases: readonly TestCase[]): void {
  if (cases.length === 0) return;
  mkdirSync(join(folder, TESTS_DIR), { recursive: true });
  for (const c of cases) writeFileSync(join(folder, TESTS_DIR, `${c.name}.json`), caseFileJson(c));
}

/** Parses a case (from a file, the studio or a recording) into one readable bad_input error. */
export function parseTestCase(input: unknown, where: string): TestCase {
  const parsed = TestCaseSchema.safeParse(input);
  if (!parsed.success) throw new StudioError('bad_input', `${where}: ${formatZodError(parsed.error)}`);
  return parsed.data;
}
