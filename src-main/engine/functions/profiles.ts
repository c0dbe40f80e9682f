import type { Db } from '../store/database.ts';
import { nowIso, prepared, writeTransaction } from '../store/database.ts';
import { bumpCatalog } from '../store/catalog.ts';
import { formatZodError, ProfileSpecSchema, StudioError, type ProfileSpec } from '../model/index.ts';

interface Row {
  name: string;
  functions: string;
  meta_tools: number;
}

export class ProfileRepository {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  list(): ProfileSpec[] {
    return (prepared(this.#db, 'SELECT * FROM profiles ORDER BY name').all() as Row[]).map(toSpec);
  }

  find(name: string): ProfileSpec | undefined {
    const row = prepared(this.#db, 'SELECT * FROM profiles WHERE name = ?').get(name) as Row | undefined;
    return row ? toSpec(row) : undefined;
  }

  get(name: string): ProfileSpec {
    const found = this.find(name);
    if (!found) throw new StudioError('not_found', `no profile named "${name}"; "callable profiles list" shows them`);
    return found;
  }

  /** Creates or replaces a profile. Functions that do not exist yet are allowed (they join when created). */
  set(input: unknown): ProfileSpec {
    const parsed = ProfileSpecSchema.safeParse(input);
    if (!parsed.success) throw new StudioError('bad_input', `profile: ${formatZodError(parsed.error)}`);
    const spec = parsed.data;
    const now = nowIso();
    writeTransaction(this.#db, () => {
      this.#db
        .prepare(
          `INSERT INTO profiles (name, functions, meta_tools, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(name) DO UPDATE SET functions = excluded.functions, meta_tools = excluded.meta_tools, updated_at = excluded.updated_at`,
        )
        .run(spec.name, JSON.stringify([...new Set(spec.functions)]), spec.metaTools ? 1 : 0, now, now);
      bumpCatalog(this.#db);
    });
    return spec;
  }

  delete(name: string): void {
    const changes = writeTransaction(this.#db, () => {
      const r = this.#db.prepare('DELETE FROM profiles WHERE name = ?').run(name);
      if (r.changes > 0) bumpCatalog(this.#db);
      return r.changes;
    });
    if (changes === 0) throw new StudioError('not_found', `no profile named "${name}"`);
  }
}

function toSpec(row: Row): ProfileSpec {
  return { name: row.name, functions: JSON.parse(row.functions) as string[], metaTools: row.meta_tools === 1 };
}
