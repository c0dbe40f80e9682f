import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { createRequire } from 'node:module';
import { StudioError } from '../model/index.ts';
import { PROTO_ALIAS, aliasProto, hasProtoKey, protoAware } from '../model/schemaAliases.ts';

const require = createRequire(import.meta.url);

/** What both ajv builds (draft-07 and 2020-12) offer that is used here. */
type AjvType = Pick<Ajv, 'compile' | 'removeSchema'>;

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
 * Where the validators of saved schemas are kept between processes as ajv standalone code (see
 * validatorCache.ts): `read` gives back only code that `write` stored for that key, intact.
 */
export interface ValidatorStore {
  read(key: string): string | undefined;
  write(key: string, code: string): void;
}

/**
 * The store of each saved schema, by schema object: set where a saved function is read (the
 * function repository), so a served function's first call evaluates its stored validator and loads
 * neither ajv nor its compiler. A schema without one is compiled by ajv, as any other.
 */
export const savedValidatorStores = new WeakMap<object, ValidatorStore>();

// ownProperties: a property named "constructor" or "prototype" is the value's own or absent, never Object.prototype's.
const CHECKED_OPTIONS = { allErrors: true, strict: false, validateFormats: false, ownProperties: true, validateSchema: true };
/** For saved schemas, which were checked against their meta-schema when saved; `code.source` lets their code be stored. */
const STORED_OPTIONS = { ...CHECKED_OPTIONS, validateSchema: false, code: { source: true } };

/** Bumped when what is stored, or how it is evaluated, changes. */
const STORED_FORMAT = 1;

let generator: string | undefined;

/** What a stored validator's code depends on besides its schema: ajv's version, the options, how "__proto__" is aliased (its code too), the format. */
function storedGenerator(): string {
  generator ??= JSON.stringify([(require('ajv/package.json') as { version: string }).version, STORED_OPTIONS, PROTO_ALIAS, String(aliasProto), String(hasProtoKey), STORED_FORMAT]);
  return generator;
}

/** The key a saved schema's validator is stored under: its dialect and content (as stored) and what generated the code. */
export function storedValidatorKey(schemaText: string): string {
  return `${storedGenerator()}\n${schemaText}`;
}

/** The only modules ajv's standalone code requires: its runtime helpers (deep equality, string length, URI, the async error). */
const RUNTIME_MODULE = /^ajv\/dist\/runtime\/[a-z0-9_]+$/;

function runtimeRequire(id: string): unknown {
  if (!RUNTIME_MODULE.test(id)) throw new Error(`a stored validator asked for "${id}"`);
  return require(id);
}

/** A stored validator's code (a CommonJS module exporting the validate function) evaluated; undefined if it does not evaluate to one. */
function evaluateStored(code: string): ValidateFunction | undefined {
  try {
    const module = { exports: {} as unknown };
    // The code is ajv's own output for this schema, generated by this process or another of this user's (validatorCache.ts).
    new Function('require', 'module', 'exports', code)(runtimeRequire, module, module.exports);
    return typeof module.exports === 'function' ? (module.exports as ValidateFunction) : undefined;
  } catch {
    return undefined;
  }
}

/** ajv's standalone code of a validator it compiled (undefined for the rare schema it cannot write out). */
function standaloneOf(ajv: AjvType, validate: ValidateFunction): string | undefined {
  try {
    const standaloneCode = (require('ajv/dist/standalone/index.js') as typeof import('ajv/dist/standalone/index.js')).default;
    return standaloneCode(ajv as Ajv, validate);
  } catch {
    return undefined;
  }
}

/** How long after a stored validator was found missing its code is written (off the path of the call that found it so). */
const STORE_DELAY_MS = 50;

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
      const options = stored ? STORED_OPTIONS : CHECKED_OPTIONS;
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
      // The dialect is chosen above, so ajv gets the schema without "$schema" (any spelling of it is fine).
      const { $schema: _declared, ...rest } = schema as Record<string, unknown>;
      const proto = hasProtoKey(rest);
      const store = stored ? savedValidatorStores.get(schema) : undefined;
      const storedCode = store?.read(storedValidatorKey(key));
      let raw = storedCode === undefined ? undefined : evaluateStored(storedCode);
      try {
        if (!raw) {
          const ajv = this.#instance(dialect, stored);
          const target = proto ? (aliasProto(rest, true) as object) : rest;
          // The instance keeps no schema once done with it: two functions' schemas may share an
          // $id (copied from one vendor's spec) and differ, and each must get its own validator.
          let forget = (): void => void ajv.removeSchema(target);
          try {
            const compiled = ajv.compile(target);
            raw = compiled;
            if (store) {
              // Missing, stale or damaged: stored again once this call is under way.
              const done = forget;
              forget = () => {};
              const timer: unknown = setTimeout(() => {
                try {
                  storeCode(store, key, ajv, compiled);
                } finally {
                  done();
                }
              }, STORE_DELAY_MS);
              // Node's timer need not keep the process alive (a Worker's, in a deployed project, is a number).
              (timer as { unref?: () => void }).unref?.();
            }
          } finally {
            forget();
          }
        }
        validate = proto ? protoAware(raw) : raw;
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

  /**
   * Stores the validator of a saved function's schema (ajv's standalone code) unless `store` has it
   * already: done when a function is saved, so serving it never needs ajv. A schema that does not
   * compile is left to the call to report.
   */
  storeStored(schema: object, what: string, store: ValidatorStore): void {
    const key = JSON.stringify(schema);
    if (store.read(storedValidatorKey(key)) !== undefined) return;
    try {
      const { $schema: _declared, ...rest } = schema as Record<string, unknown>;
      const ajv = this.#instance(dialectOf(schema, what), true) as Ajv;
      const target = hasProtoKey(rest) ? (aliasProto(rest, true) as object) : rest;
      try {
        storeCode(store, key, ajv, ajv.compile(target));
      } finally {
        // Nothing is kept in this instance: a later save may give a schema of the same $id other content.
        ajv.removeSchema(target);
      }
    } catch {
      // The call says what is wrong with it.
    }
  }

  #check(validate: ValidateFunction, value: unknown, root: string): string | undefined {
    return validate(value) ? undefined : formatAjvErrors(validate.errors ?? [], root);
  }
}

function storeCode(store: ValidatorStore, schemaText: string, ajv: AjvType, validate: ValidateFunction): void {
  const code = standaloneOf(ajv, validate);
  if (code !== undefined) store.write(storedValidatorKey(schemaText), code);
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
