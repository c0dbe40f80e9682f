// How a "__proto__" field is validated, shared by the engine's validation
// (src-main/engine/functions/schemas.ts) and the deployed gateway Worker (src-main/deploy/), so an
// argument or result with such a field gets the same answer locally and on workerd. Pure: no
// imports, so the Workers may bundle it (the import rule lets the deploy layer reach the model).

/** An ajv validate function as far as this module uses it (ajv's ValidateFunction is one). */
interface Validate {
  (value: unknown): boolean;
  errors?: Array<{ instancePath: string; schemaPath: string; params: Record<string, unknown>; message?: string }> | null;
  schema?: unknown;
  schemaEnv?: unknown;
}

/**
 * ajv skips a property named "__proto__" (its properties, required and additionalProperties never
 * see it), yet vendors' APIs have such fields. Where a schema names one, schema and value are
 * validated with that key spelled PROTO_ALIAS instead, and ajv's errors are spelled back.
 */
export const PROTO_ALIAS = '__proto__\u0000callable';

export function hasProtoKey(value: unknown): boolean {
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
export function aliasProto(value: unknown, names: boolean, list = false): unknown {
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
export function protoAware<V extends Validate>(validate: V): V {
  const aware = ((value: unknown) => {
    const ok = validate(aliasProto(value, false));
    aware.errors = validate.errors?.map((e) => ({
      ...e,
      instancePath: unalias(e.instancePath),
      schemaPath: unalias(e.schemaPath),
      params: Object.fromEntries(Object.entries(e.params).map(([k, v]) => [k, unalias(v)])),
      ...(e.message !== undefined && { message: unalias(e.message) }),
    }));
    return ok;
  }) as V;
  return Object.assign(aware, { schema: validate.schema, schemaEnv: validate.schemaEnv });
}
