import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { createRequire } from 'node:module';
import { StudioError } from '../model/index.ts';

const require = createRequire(import.meta.url);

/** What both ajv builds (draft-07 and 2020-12) offer that is used here. */
type AjvType = Pick<Ajv, 'compile'>;

/** The JSON Schema dialects Callable Studio validates with: 2020-12 unless a schema's `$schema` says draft-07. */
export type SchemaDialect = '2020-12' | 'draft-07';

export const DIALECT_URIS: Record<SchemaDialect, string> = {
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
};

/** Dialects people declare that are refused by name (validating them by another dialect's rules would be wrong). */
const REFUSED_DIALECTS: Record<string, string> = {
  'json-schema.org/draft-03/schema': 'draft-03',
  'json-schema.org/draft-04/schema': 'draft-04',
  'json-schema.org/draft-06/schema': 'draft-06',
  'json-schema.org/draft/2019-09/schema': '2019-09',
};

const SUPPORTED = `leave "$schema" out (2020-12, the default) or set it to "${DIALECT_URIS['2020-12']}" or "${DIALECT_URIS['draft-07']}"`;

/**
 * Which dialect a schema declares with its root `$schema` (absent means 2020-12, as MCP 2025-11-25
 * says). http and https and a trailing "#" are all accepted. Anything else is refused in one line.
 */
export function dialectOf(schema: object, what: string): SchemaDialect {
  if (!Object.prototype.hasOwnProperty.call(schema, '$schema')) return '2020-12';
  const declared = (schema as { $schema?: unknown }).$schema;
  if (typeof declared !== 'string') throw new StudioError('bad_input', `${what}: "$schema" must be a string; ${SUPPORTED}`);
  const key = declared.trim().replace(/^https?:\/\//, '').replace(/#$/, '');
  if (key === 'json-schema.org/draft/2020-12/schema') return '2020-12';
  if (key === 'json-schema.org/draft-07/schema') return 'draft-07';
  const refused = REFUSED_DIALECTS[key];
  if (refused) throw new StudioError('bad_input', `${what}: "$schema" is JSON Schema ${refused}, which Callable Studio does not validate; ${SUPPORTED}`);
  throw new StudioError('bad_input', `${what}: "$schema" ${JSON.stringify(declared.slice(0, 200))} is not a JSON Schema dialect Callable Studio knows; ${SUPPORTED}`);
}

/**
 * JSON Schema validation for function arguments and results (ajv). Schemas are JSON Schema 2020-12
 * unless their `$schema` declares draft-07 (see dialectOf). Validators are compiled once per
 * distinct schema. Unknown keywords and formats are tolerated: schemas come from users and from
 * vendors' docs, and a schema that validates less is better than one that cannot be saved.
 */
export class SchemaValidator {
  readonly #ajv = new Map<string, AjvType>();
  /** Validators by schema text, and by schema object (those of cached function records are stable: no serializing on every call). */
  readonly #checked = { byText: new Map<string, ValidateFunction>(), byObject: new WeakMap<object, ValidateFunction>() };
  /** The same for schemas of saved functions, which were checked against their meta-schema when saved. */
  readonly #stored = { byText: new Map<string, ValidateFunction>(), byObject: new WeakMap<object, ValidateFunction>() };

  /**
   * Created on first use: a server that only lists tools never pays for ajv. Checking a schema
   * against its meta-schema costs about 100 ms the first time, which a saved schema had already paid.
   */
  #instance(dialect: SchemaDialect, stored: boolean): AjvType {
    const key = `${dialect}${stored ? ' stored' : ''}`;
    let ajv = this.#ajv.get(key);
    if (!ajv) {
      // ownProperties: a property named "constructor" or "prototype" is the value's own or absent, never Object.prototype's.
      const options = { allErrors: true, strict: false, validateFormats: false, ownProperties: true, validateSchema: !stored };
      if (dialect === '2020-12') {
        const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
        ajv = new Ajv2020(options);
      } else {
        const { Ajv: AjvDraft07 } = require('ajv') as typeof import('ajv');
        ajv = new AjvDraft07(options);
      }
      this.#ajv.set(key, ajv);
    }
    return ajv;
  }

  compile(schema: object, what: string): ValidateFunction {
    return this.#compile(schema, what, false);
  }

  #compile(schema: object, what: string, stored: boolean): ValidateFunction {
    const cache = stored ? this.#stored : this.#checked;
    const known = cache.byObject.get(schema) ?? (stored ? this.#checked.byObject.get(schema) : undefined);
    if (known) return known;
    const key = JSON.stringify(schema);
    let validate = cache.byText.get(key);
    if (!validate) {
      const dialect = dialectOf(schema, what);
      const ajv = this.#instance(dialect, stored);
      // The dialect is chosen above, so ajv gets the schema without "$schema" (any spelling of it is fine).
      const { $schema: _declared, ...rest } = schema as Record<string, unknown>;
      try {
        validate = hasProtoKey(rest) ? protoAware(ajv.compile(aliasProto(rest, true) as object)) : ajv.compile(rest);
      } catch (error) {
        // ajv repeats a meta-schema problem once per branch it tried: each distinct one is said once.
        const text = (error as Error).message.replace(/\s+/g, ' ');
        const invalid = text.startsWith('schema is invalid: ') ? 'schema is invalid: ' : '';
        const message = invalid + [...new Set(text.slice(invalid.length).split(', '))].join(', ');
        const hint = Object.prototype.hasOwnProperty.call(schema, '$schema')
          ? ''
          : ` (a schema without "$schema" follows JSON Schema 2020-12; for draft-07 rules such as "items" as an array, add "$schema": "${DIALECT_URIS['draft-07']}")`;
        throw new StudioError('bad_input', `${what} is not a valid JSON Schema ${dialect}: ${message}${hint}`);
      }
      if (cache.byText.size > 500) cache.byText.clear();
      cache.byText.set(key, validate);
    }
    cache.byObject.set(schema, validate);
    return validate;
  }

  /** Every problem of `value` (at most 100), as ajv reports them: for a form that marks each field. */
  problems(schema: object, value: unknown, what: string): ErrorObject[] {
    const validate = this.compile(schema, what);
    return validate(value) ? [] : (validate.errors ?? []).slice(0, 100);
  }

  /** Returns undefined when valid, else one readable line per problem. */
  check(schema: object, value: unknown, what: string, root: string): string | undefined {
    return this.#check(this.compile(schema, what), value, root);
  }

  /** check() with a saved function's schema, which was checked against its meta-schema when saved. */
  checkStored(schema: object, value: unknown, what: string, root: string): string | undefined {
    return this.#check(this.#compile(schema, what, true), value, root);
  }

  /** Compiles a saved function's schema ahead of its first call (a schema that does not compile is left to the call to report). */
  prepareStored(schema: object, what: string): void {
    try {
      this.#compile(schema, what, true);
    } catch {
      // The call says what is wrong with it.
    }
  }

  #check(validate: ValidateFunction, value: unknown, root: string): string | undefined {
    return validate(value) ? undefined : formatAjvErrors(validate.errors ?? [], root);
  }
}

/**
 * ajv skips a property named "__proto__" (its properties, required and additionalProperties never
 * see it), yet vendors' APIs have such fields. Where a schema names one, schema and value are
 * validated with that key spelled PROTO_ALIAS instead, and ajv's errors are spelled back.
 */
const PROTO_ALIAS = '__proto__\u0000callable';

function hasProtoKey(value: unknown): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (!v || typeof v !== 'object') continue;
    if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, '__proto__')) return true;
    stack.push(...Object.values(v));
  }
  return false;
}

/**
 * A copy of `value` with every key "__proto__" spelled PROTO_ALIAS; in a schema (`names`) also each
 * "__proto__" in a required or dependentRequired list.
 */
function aliasProto(value: unknown, names: boolean, list = false): unknown {
  if (Array.isArray(value)) return value.map((item) => (list && item === '__proto__' ? PROTO_ALIAS : aliasProto(item, names)));
  if (!value || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    let aliased: unknown;
    if (names && key === 'dependentRequired' && item && typeof item === 'object' && !Array.isArray(item)) {
      aliased = Object.fromEntries(Object.entries(item).map(([k, required]) => [k === '__proto__' ? PROTO_ALIAS : k, aliasProto(required, names, true)]));
    } else aliased = aliasProto(item, names, names && key === 'required');
    copy[key === '__proto__' ? PROTO_ALIAS : key] = aliased;
  }
  return copy;
}

function unalias<T>(value: T): T {
  return (typeof value === 'string' ? value.split(PROTO_ALIAS).join('__proto__') : value) as T;
}

/** `validate` (compiled from an aliased schema) applied to the aliased value, its errors spelled back. */
function protoAware(validate: ValidateFunction): ValidateFunction {
  const aware = ((value: unknown) => {
    const ok = validate(aliasProto(value, false));
    aware.errors = validate.errors?.map((e) => ({
      ...e,
      instancePath: unalias(e.instancePath),
      schemaPath: unalias(e.schemaPath),
      params: Object.fromEntries(Object.entries(e.params).map(([k, v]) => [k, unalias(v)])),
    }));
    return ok;
  }) as ValidateFunction;
  return Object.assign(aware, { schema: validate.schema, schemaEnv: validate.schemaEnv });
}

export function formatAjvErrors(errors: ErrorObject[], root: string): string {
  const lines = errors.map((e) => {
    const path = `${root}${e.instancePath.replace(/\//g, '.')}`;
    if (e.keyword === 'required') return `${path}.${(e.params as { missingProperty: string }).missingProperty} is required`;
    if (e.keyword === 'additionalProperties') return `${path} has an unexpected property "${(e.params as { additionalProperty: string }).additionalProperty}"`;
    if (e.keyword === 'unevaluatedProperties') return `${path} has an unexpected property "${(e.params as { unevaluatedProperty: string }).unevaluatedProperty}"`;
    if (e.keyword === 'enum') return `${path} must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
    return `${path} ${e.message ?? 'is invalid'}`;
  });
  // The branches of one anyOf/oneOf often fail the same way: each problem is said once.
  return [...new Set(lines)].slice(0, 10).join('; ');
}
