import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { FunctionSpecSchema, specOf, StudioError, type FunctionRecord, type FunctionSpec } from '../model/index.ts';
import { parseSpec, type PackageRequest, type SaveInput } from './repository.ts';
import type { FunctionPackages } from './packages/install.ts';
import { readCaseFiles, writeCaseFiles } from '../savedTests/caseFiles.ts';
import type { TestCase } from '../model/index.ts';

const SPEC_FILE = 'function.json';
const PACKAGE_FILE = 'package.json';
const LOCK_FILE = 'package-lock.json';

/**
 * Reads functions from disk: `dir` is either one function's folder (`function.json` + `index.ts`
 * or `index.js`) or a folder of such folders. Everything is validated before anything is returned,
 * and every bad folder is reported in one error (each problem naming its file), so a fix-and-retry
 * loop takes one round.
 */
export function readFunctionFolders(dir: string): SaveInput[] {
  const { inputs, problems } = readAll(dir);
  throwProblems(dir, problems);
  return inputs.map((i) => i.input);
}

/**
 * Like readFunctionFolders, then runs `check` on every function read (schemas, compilation) and
 * reports the problems of all of them together: the list a user fixes before an all-or-nothing import.
 */
export async function readImportableFunctions(dir: string, check: (input: SaveInput, sourcePath: string) => Promise<void> | void): Promise<SaveInput[]> {
  const { inputs, problems } = readAll(dir);
  for (const { folder, input } of inputs) {
    try {
      await check(input, sourcePathOf(folder, input));
    } catch (error) {
      if (!(error instanceof StudioError)) throw error;
      // A message that starts with a file of the folder (a compile error) names it already.
      problems.push(error.message.startsWith(`${folder}${sep}`) ? error.message : `${folder}: ${error.message}`);
    }
  }
  throwProblems(dir, problems);
  return inputs.map((i) => i.input);
}

function readAll(dir: string): { inputs: Array<{ folder: string; input: SaveInput }>; problems: string[] } {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new StudioError('bad_input', `${dir} is not a folder; pass a function's folder (with function.json) or a folder of them`);
  }
  const folders = existsSync(join(dir, SPEC_FILE))
    ? [dir]
    : readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, SPEC_FILE)))
        .map((e) => join(dir, e.name))
        .sort();
  if (folders.length === 0) {
    throw new StudioError('bad_input', `${dir} holds no function: expected ${SPEC_FILE} in it or in its sub-folders`);
  }
  const inputs: Array<{ folder: string; input: SaveInput }> = [];
  const problems: string[] = [];
  for (const folder of folders) {
    try {
      inputs.push({ folder, input: readOne(folder) });
    } catch (error) {
      if (!(error instanceof StudioError)) throw error;
      problems.push(error.message);
    }
  }
  const seen = new Map<string, string>();
  for (const { folder, input } of inputs) {
    const name = input.spec.name as string;
    const first = seen.get(name);
    if (first !== undefined) problems.push(`${first} and ${folder} both define the function "${name}"; names must be unique`);
    else seen.set(name, folder);
  }
  return { inputs, problems };
}

function throwProblems(dir: string, problems: string[]): void {
  if (problems.length === 1) throw new StudioError('bad_input', problems[0]!, { problems });
  if (problems.length > 1) {
    throw new StudioError('bad_input', `${problems.length} problems in ${dir}, so nothing was imported:\n${problems.map((p) => `  - ${p}`).join('\n')}`, { problems });
  }
}

function readOne(folder: string): SaveInput {
  const specPath = join(folder, SPEC_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(specPath, 'utf8'));
  } catch (error) {
    throw new StudioError('bad_input', `${specPath}: not valid JSON (${(error as Error).message})`);
  }
  const sources = (['ts', 'js'] as const).filter((l) => existsSync(join(folder, `index.${l}`)));
  if (sources.length === 0) throw new StudioError('bad_input', `${folder}: no index.ts or index.js beside ${SPEC_FILE}`);
  if (sources.length > 1) throw new StudioError('bad_input', `${folder}: both index.ts and index.js exist; keep one`);
  const language = sources[0]!;
  const spec = parseSpec(raw && typeof raw === 'object' && !('language' in raw) ? { ...raw, language } : raw, specPath);
  if (spec.language !== language) {
    throw new StudioError('bad_input', `${specPath}: "language" is "${spec.language}" but the source file is index.${language}`);
  }
  const tests = readCaseFiles(folder);
  return { spec, source: readFileSync(join(folder, `index.${language}`), 'utf8'), ...(tests.length > 0 ? { tests } : {}), packages: readPackages(folder) };
}

/** package.json's dependencies (none without the file) and package-lock.json when it is there. */
function readPackages(folder: string): PackageRequest {
  const manifestPath = join(folder, PACKAGE_FILE);
  if (!existsSync(manifestPath)) return { dependencies: {} };
  let manifest: unknown;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (error) {
    throw new StudioError('bad_input', `${manifestPath}: not valid JSON (${(error as Error).message})`);
  }
  const dependencies = (manifest as { dependencies?: unknown } | null)?.dependencies ?? {};
  if (typeof dependencies !== 'object' || dependencies === null || Array.isArray(dependencies) || Object.values(dependencies).some((v) => typeof v !== 'string')) {
    throw new StudioError('bad_input', `${manifestPath}: "dependencies" must be an object of package names to versions, like {"ms": "^2.1.3"}`);
  }
  const lockPath = join(folder, LOCK_FILE);
  return { dependencies: dependencies as Record<string, string>, ...(existsSync(lockPath) ? { lock: readFileSync(lockPath, 'utf8') } : {}) };
}

/** The source file a function was read from: `<folder>/index.<language>`. */
function sourcePathOf(folder: string, input: SaveInput): string {
  return join(folder, `index.${parseSpec(input.spec).language}`);
}

/**
 * Writes each function as `<dir>/<name>/function.json` + `index.<language>` (+ `tests/<case>.json`
 * for the cases `casesOf` gives, + `package.json` and `package-lock.json` for the packages `packagesOf` gives).
 */
export function writeFunctionFolders(
  dir: string,
  records: FunctionRecord[],
  casesOf?: (name: string) => TestCase[],
  packagesOf?: (name: string) => FunctionPackages | undefined,
): string[] {
  mkdirSync(dir, { recursive: true });
  return records.map((record) => {
    const folder = join(dir, record.name);
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, SPEC_FILE), canonicalSpecJson(specOf(record)));
    writeFileSync(join(folder, `index.${record.language}`), record.source);
    if (casesOf) writeCaseFiles(folder, casesOf(record.name));
    if (packagesOf) writePackages(folder, record.name, packagesOf(record.name));
    return folder;
  });
}

function writePackages(folder: string, name: string, packages: FunctionPackages | undefined): void {
  if (!packages || Object.keys(packages.dependencies).length === 0) {
    // A folder exported before the packages were removed must not bring them back on import.
    rmSync(join(folder, PACKAGE_FILE), { force: true });
    rmSync(join(folder, LOCK_FILE), { force: true });
    return;
  }
  writeFileSync(join(folder, PACKAGE_FILE), `${JSON.stringify({ name: name.replace(/_/g, '-'), private: true, dependencies: packages.dependencies }, null, 2)}\n`);
  writeFileSync(join(folder, LOCK_FILE), packages.lock);
}

/**
 * function.json as we write it: keys in schema order, fields at their default left out, two-space
 * indent, trailing newline. Import then export of a file in this form gives the same bytes.
 */
export function canonicalSpecJson(spec: FunctionSpec): string {
  const defaults = FunctionSpecSchema.parse({ name: spec.name }) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(FunctionSpecSchema.shape)) {
    const value = (spec as Record<string, unknown>)[key];
    if (value === undefined) continue;
    const always = key === 'name' || key === 'description' || key === 'inputSchema';
    if (!always && JSON.stringify(value) === JSON.stringify(defaults[key])) continue;
    out[key] = value;
  }
  return `${JSON.stringify(out, null, 2)}\n`;
}
