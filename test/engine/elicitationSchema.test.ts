// The form schema ctx.elicit may ask with (src-main/engine/sandbox/asks.ts): MCP's flat form schema
// of the 2025-11-25 revision and nothing else. Asking through a real sandbox host is ask.test.ts.
import { describe, expect, it } from 'vitest';
import { elicitationSchemaProblem } from '../../src-main/engine/sandbox/asks.ts';

describe('the elicitation form schema', () => {
  it('accepts every shape of the 2025-11-25 revision (SEP-1034 defaults, SEP-1330 enums)', () => {
    expect(
      elicitationSchemaProblem({
        type: 'object',
        properties: {
          name: { type: 'string', default: 'John Doe', minLength: 1, maxLength: 50 },
          email: { type: 'string', format: 'email' },
          age: { type: 'integer', minimum: 0, maximum: 150, default: 30 },
          score: { type: 'number', default: 95.5 },
          verified: { type: 'boolean', default: true },
          status: { type: 'string', enum: ['active', 'inactive'], default: 'active' },
          titled: { type: 'string', oneOf: [{ const: 'a', title: 'A' }] },
          legacy: { type: 'string', enum: ['x', 'y'], enumNames: ['X', 'Y'] },
          multi: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1, default: ['a'] },
          titledMulti: { type: 'array', items: { anyOf: [{ const: 'a', title: 'A' }] } },
        },
        required: ['name'],
      }),
    ).toBeUndefined();
  });

  it('refuses what the revision does not allow, naming the property', () => {
    expect(elicitationSchemaProblem({ type: 'object', properties: { a: { type: 'string', format: 'hostname' } } })).toBe('properties.a: format must be one of email, uri, date, date-time');
    expect(elicitationSchemaProblem({ type: 'object', properties: { a: { type: 'array', items: { type: 'number' } } } })).toMatch(/^properties\.a: items must be/);
    expect(elicitationSchemaProblem({ type: 'object', properties: { a: { type: 'string', pattern: '.*' } } })).toBe('properties.a: "pattern" is not allowed on a string property');
    expect(elicitationSchemaProblem({ type: 'object', properties: {}, required: ['b'] })).toBe('"required" names "b", which is not in properties');
    expect(elicitationSchemaProblem({ type: 'object', properties: {}, $defs: {} })).toBe('"$defs" is not allowed at the top (only type, properties, required, title, description)');
  });
});
