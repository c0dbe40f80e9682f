import type { Ajv as AjvType, ErrorObject, ValidateFunction } from 'ajv';
import { createRequire } from 'node:module';
import { StudioError } from '../model/index.ts';

const require = createRequire(import.meta.url);

/**
 * JSON Schema validation for function arguments and results (ajv). Validators are compiled once
 * per distinct schema. Unknown keywords and formats are tolerated: schemas come from users and
 * from vendors' docs, and a schema that validates less is better than one that cannot be saved.
 */
export class SchemaValidator {
  #ajv: AjvType | undefined;
  readonly #cache = new Map<string, ValidateFunction>();
  /** Schema objects of cached function records are stable: skip serializing them on every call. */
  readonly #byObject = new WeakMap<object, ValidateFunction>();

  /** Created on first use: a server that only lists tools never pays for ajv. */
  #instance(): AjvType {
    if (!this.#ajv) {
      const { Ajv } = require('ajv') as typeof import('ajv');
      this.#ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
    }
    return this.#ajv;
  }

  compile(schema: object, what: string): ValidateFunction {
    const known = this.#byObject.get(schema);
    if (known) return known;
    const key = JSON.stringify(schema);
    let validate = this.#cache.get(key);
    if (!validate) {
      try {
        validate = this.#instance().compile(schema);
      } catch (error) {
        throw new StudioError('bad_input', `${what} is not a valid JSON Schema: ${(error as Error).message}`);
      }
      if (this.#cache.size > 500) this.#cache.clear();
      this.#cache.set(key, validate);
    }
    this.#byObject.set(schema, validate);
    return validate;
  }

  /** Returns undefined when valid, else one readable line per problem. */
  check(schema: object, value: unknown, what: string, root: string): string | undefined {
    const validate = this.compile(schema, what);
    if (validate(value)) return undefined;
    return formatAjvErrors(validate.errors ?? [], root);
  }
}

export function formatAjvErrors(errors: ErrorObject[], root: string): string {
  return errors
    .slice(0, 10)
    .map((e) => {
      const path = `${root}${e.instancePath.replace(/\//g, '.')}`;
      if (e.keyword === 'required') return `${path}.${(e.params as { missingProperty: string }).missingProperty} is required`;
      if (e.keyword === 'additionalProperties') return `${path} has an unexpected property "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      if (e.keyword === 'enum') return `${path} must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
      return `${path} ${e.message ?? 'is invalid'}`;
    })
    .join('; ');
}
