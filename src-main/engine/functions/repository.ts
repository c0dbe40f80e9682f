import type Database from 'better-sqlite3';
import type { Db } from '../store/database.ts';
import { corruptionOf, nowIso, writeTransaction } from '../store/database.ts';
import { bumpCatalog } from '../store/catalog.ts';
import {
  FunctionNameSchema,
  FunctionSpecSchema,
  StudioError,
  type FunctionRecord,
  type FunctionSpec,
  type FunctionSpecInput,
  type RevisionRecord,
  type TestCase,
  specOf,
} from '../model/index.ts';
import { compileFunction, type CompiledFunction } from './compile.ts';
import type { PackageStore } from './packages/install.ts';
import { keepValidators, useStoredValidators } from './validatorCache.ts';
import { formatZodError } from '../model/validation.ts';

interface Row {
  id: number;
  name: string;
  spec: string;
  source: string;
  compiled: string;
  enabled: number;
  revision: number;
  created_at: string;
  updated_at: string;
}

export interface LoadedFunction {
  record: FunctionRecord;
  compiled: CompiledFunction;
}

export interface SaveInput {
  spec: FunctionSpecInput;
  source: string;
  /** Saved test cases read from the folder's tests/*.json (import). */
  tests?: TestCase[] | undefined;
  /** The npm packages it imports (package.json's dependencies, and package-lock.json when there is one); left out, the function keeps the ones it has. */
  packages?: PackageRequest | undefined;
}

export interface PackageRequest {
  dependencies: Record<string, string>;
  lock?: string | undefined;
}

/** Parses a spec, turning zod's issues into one readable bad_input error. */
export function parseSpec(input: unknown, where = 'function.json'): FunctionSpec {
  const parsed = FunctionSpecSchema.safeParse(input);
  if (!parsed.success) throw new StudioError('bad_input', `${where}: ${formatZodError(parsed.error)}`);
  return parsed.data;
}

/**
 * Functions and their revision history in SQLite. Every save compiles first: a source that does
 * not compile is refused with line and column, and the stored version stays as it was.
 * Each change bumps `catalog_version`, which running MCP servers in any process watch. A save also
 * keeps the schemas' validators as code, so serving the function needs no compiler (validatorCache.ts).
 */
export class FunctionRepository {
  readonly #db: Db;
  readonly #catalogVersion: Database.Statement;
  // Reads are cached until the catalog version moves (any write, in any process, bumps it):
  // MCP servers list and load functions on every request, and the rows carry compiled code.
  #cachedAt = -1;
  #list: FunctionRecord[] | undefined;
  readonly #loaded = new Map<string, LoadedFunction>();

  readonly #packages: PackageStore | undefined;

  constructor(db: Db, packages?: PackageStore) {
    this.#db = db;
    this.#packages = packages;
    // Read on every MCP call (the one catalog read a call makes): the bare value, no row object.
    this.#catalogVersion = db.prepare("SELECT value FROM settings WHERE key = 'catalog_version'").pluck();
  }

  #fresh(version = this.catalogVersion()): void {
    if (version === this.#cachedAt) return;
    this.#cachedAt = version;
    this.#list = undefined;
    this.#loaded.clear();
  }

  list(): FunctionRecord[] {
    this.#fresh();
    // Without the compiled bundles: a listing never runs them, and they are most of each row.
    this.#list ??= this.#read(() => this.#db.prepare(`SELECT ${RECORD_COLUMNS} FROM functions ORDER BY name`).all() as Array<Omit<Row, 'compiled'>>).map(toRecord);
    return this.#list.map((r) => ({ ...r }));
  }

  find(name: string): FunctionRecord | undefined {
    const row = this.#read(() => this.#db.prepare('SELECT * FROM functions WHERE name = ?').get(name) as Row | undefined);
    return row ? toRecord(row) : undefined;
  }

  /** A catalog read; damage SQLite finds there is the line opening gives for it (whoever reads: CLI, MCP, studio). */
  #read<T>(query: () => T): T {
    try {
      return query();
    } catch (error) {
      throw corruptionOf(error, this.#db.name, 'the function catalog') ?? error;
    }
  }

  /** Refuses a name another function already has (a create, copy or rename must not replace it). */
  assertNameFree(name: string): void {
    if (this.find(name)) throw new StudioError('conflict', `a function named "${name}" already exists; pick another name`);
  }

  get(name: string): FunctionRecord {
    const found = this.find(name);
    if (!found) throw notFound(name);
    return found;
  }

  /**
   * The record with its compiled script, as the sandbox needs it. `version`: the catalog version
   * the caller read in this same turn (catalogVersion()), so it is not read twice; left out, it is read here.
   */
  load(name: string, version?: number): LoadedFunction {
    this.#fresh(version);
    let loaded = this.#loaded.get(name);
    if (!loaded) {
      const row = this.#read(() => this.#db.prepare('SELECT * FROM functions WHERE name = ?').get(name) as Row | undefined);
      if (!row) throw notFound(name);
      loaded = { record: toRecord(row), compiled: JSON.parse(row.compiled) as CompiledFunction };
      // Its schemas' validators are the ones generated when it was saved (validatorCache.ts).
      useStoredValidators(loaded.record);
      this.#loaded.set(name, loaded);
    }
    return loaded;
  }

  /** Compiles and stores a function (created, or updated by name). Returns the new record. */
  async save(input: SaveInput): Promise<FunctionRecord> {
    const spec = parseSpec(input.spec);
    if (typeof input.source !== 'string') throw new StudioError('bad_input', 'source must be a string');
    const compiled = await this.compile(input);
    const record = this.#write(spec, input.source, compiled);
    keepValidators(record);
    return record;
  }

  /**
   * Compiles a function as a save would: its packages (the input's, or else the ones the function
   * has now) installed from the lock and bundled in. `sourcePath` names the file in errors.
   */
  async compile(input: SaveInput, sourcePath?: string): Promise<CompiledFunction> {
    const spec = parseSpec(input.spec);
    const packages = input.packages ?? this.#packagesOf(spec.name);
    if (!packages || Object.keys(packages.dependencies).length === 0) return compileFunction(input.source, spec.language, spec.name, sourcePath);
    if (!this.#packages) throw new StudioError('bad_input', `${spec.name} imports npm packages, which this engine was opened without`);
    const installed = await this.#packages.install(spec.name, packages.dependencies, packages.lock);
    return compileFunction(input.source, spec.language, spec.name, sourcePath, installed);
  }

  /** The packages a stored function has now (as asked for and as locked). */
  #packagesOf(name: string): PackageRequest | undefined {
    const row = this.#read(() => this.#db.prepare('SELECT compiled FROM functions WHERE name = ?').get(name) as { compiled: string } | undefined);
    const packages = row ? (JSON.parse(row.compiled) as CompiledFunction).packages : undefined;
    return packages ? { dependencies: packages.dependencies, lock: packages.lock } : undefined;
  }

  /** Compiles every input first; stores all or none. */
  async saveAll(inputs: SaveInput[]): Promise<FunctionRecord[]> {
    const prepared: Array<{ spec: FunctionSpec; source: string; compiled: CompiledFunction }> = [];
    for (const input of inputs) {
      const spec = parseSpec(input.spec);
      prepared.push({ spec, source: input.source, compiled: await this.compile(input) });
    }
    const records = writeTransaction(this.#db, () => prepared.map((p) => this.#write(p.spec, p.source, p.compiled)));
    for (const record of records) keepValidators(record);
    return records;
  }

  #write(spec: FunctionSpec, source: string, compiled: CompiledFunction): FunctionRecord {
    const now = nowIso();
    const specJson = JSON.stringify(spec);
    return writeTransaction(this.#db, (): FunctionRecord => {
      const existing = this.#db.prepare('SELECT * FROM functions WHERE name = ?').get(spec.name) as Row | undefined;
      if (existing && existing.spec === specJson && existing.source === source && samePackages(existing.compiled, compiled)) return toRecord(existing);
      let id: number;
      let revision: number;
      if (existing) {
        id = existing.id;
        revision = existing.revision + 1;
        this.#db
          .prepare('UPDATE functions SET spec = ?, source = ?, compiled = ?, enabled = ?, revision = ?, updated_at = ? WHERE id = ?')
          .run(specJson, source, JSON.stringify(compiled), spec.enabled ? 1 : 0, revision, now, id);
      } else {
        revision = 1;
        id = Number(
          this.#db
            .prepare('INSERT INTO functions (name, spec, source, compiled, enabled, revision, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
            .run(spec.name, specJson, source, JSON.stringify(compiled), spec.enabled ? 1 : 0, revision, now, now).lastInsertRowid,
        );
      }
      this.#db.prepare('INSERT INTO revisions (function_id, revision, spec, source, created_at) VALUES (?, ?, ?, ?, ?)').run(id, revision, specJson, source, now);
      this.#bumpCatalog();
      return toRecord(this.#db.prepare('SELECT * FROM functions WHERE id = ?').get(id) as Row);
    });
  }

  async setEnabled(name: string, enabled: boolean): Promise<FunctionRecord> {
    const current = this.get(name);
    return this.save({ spec: { ...specOf(current), enabled }, source: current.source });
  }

  async rename(name: string, newName: string): Promise<FunctionRecord> {
    const parsedName = FunctionNameSchema.safeParse(newName);
    if (!parsedName.success) throw new StudioError('bad_input', `"${newName}": ${formatZodError(parsedName.error)}`);
    const current = this.get(name);
    if (name === newName) return current;
    this.assertNameFree(newName);
    const compiled = await this.compile({ spec: { ...specOf(current), name: newName }, source: current.source, packages: this.#packagesOf(name) });
    const spec = { ...specOf(current), name: newName };
    return writeTransaction(this.#db, () => {
      this.#db
        .prepare('UPDATE functions SET name = ?, spec = ?, compiled = ?, updated_at = ? WHERE id = ?')
        .run(newName, JSON.stringify(spec), JSON.stringify(compiled), nowIso(), current.id);
      this.#bumpCatalog();
      return this.get(newName);
    });
  }

  /** Deletes a function with its revisions; returns it as it was, so the caller can offer to put it back. */
  delete(name: string): FunctionRecord {
    const removed = this.get(name);
    const info = writeTransaction(this.#db, () => {
      const r = this.#db.prepare('DELETE FROM functions WHERE name = ?').run(name);
      if (r.changes > 0) this.#bumpCatalog();
      return r;
    });
    if (info.changes === 0) throw notFound(name);
    return removed;
  }

  revisions(name: string): RevisionRecord[] {
    const fn = this.get(name);
    const rows = this.#db
      .prepare('SELECT revision, spec, source, created_at FROM revisions WHERE function_id = ? ORDER BY revision DESC')
      .all(fn.id) as Array<{ revision: number; spec: string; source: string; created_at: string }>;
    return rows.map((r) => ({ revision: r.revision, source: r.source, spec: JSON.parse(r.spec) as FunctionSpec, createdAt: r.created_at }));
  }

  /** One revision of a function; one that does not exist is a not_found error naming the ones that do. */
  revision(name: string, revision: number): RevisionRecord {
    const all = this.revisions(name);
    const found = all.find((r) => r.revision === revision);
    if (found) return found;
    const newest = all[0]?.revision ?? 0;
    const oldest = all.at(-1)?.revision ?? 0;
    throw new StudioError('not_found', `function "${name}" has no revision ${revision}; ${newest === oldest ? `its only revision is ${newest}` : `its revisions are ${oldest} to ${newest}`}`);
  }

  /** Makes an old revision current again (as a new revision, so nothing is lost). */
  async restore(name: string, revision: number): Promise<FunctionRecord> {
    const found = this.revision(name, revision);
    return this.save({ spec: { ...found.spec, name }, source: found.source });
  }

  /** A number that changes whenever any process changes the set of functions. */
  catalogVersion(): number {
    return Number((this.#catalogVersion.get() as string | undefined) ?? 0);
  }

  #bumpCatalog(): void {
    bumpCatalog(this.#db);
  }
}


/** Whether a stored function's packages are the ones just compiled (a change of packages alone is a new revision). */
function samePackages(storedCompiled: string, compiled: CompiledFunction): boolean {
  const stored = (JSON.parse(storedCompiled) as CompiledFunction).packages;
  return (stored?.lock ?? '') === (compiled.packages?.lock ?? '') && JSON.stringify(stored?.dependencies ?? {}) === JSON.stringify(compiled.packages?.dependencies ?? {});
}

/** The columns a FunctionRecord is made of (every one but the compiled bundle). */
const RECORD_COLUMNS = 'id, name, spec, source, enabled, revision, created_at, updated_at';

function toRecord(row: Omit<Row, 'compiled'>): FunctionRecord {
  const spec = JSON.parse(row.spec) as FunctionSpec;
  return { ...spec, enabled: row.enabled === 1, id: row.id, source: row.source, revision: row.revision, createdAt: row.created_at, updatedAt: row.updated_at };
}

function notFound(name: string): StudioError {
  return new StudioError('not_found', `no function named "${name}"; "callable list" shows the functions there are`);
}
