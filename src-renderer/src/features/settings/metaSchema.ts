/** Enough of the JSON Schema meta-schema for completion and validation in the schema editors (no network). */
const schemaRef = { $ref: '#' };
export const JSON_SCHEMA_META = {
  type: 'object',
  properties: {
    type: {
      anyOf: [
        { enum: ['object', 'string', 'number', 'integer', 'boolean', 'array', 'null'] },
        { type: 'array', items: { enum: ['object', 'string', 'number', 'integer', 'boolean', 'array', 'null'] } },
      ],
    },
    title: { type: 'string' },
    description: { type: 'string', description: 'Shown to agents: say what the value means and its format' },
    properties: { type: 'object', additionalProperties: schemaRef },
    required: { type: 'array', items: { type: 'string' } },
    additionalProperties: { anyOf: [{ type: 'boolean' }, schemaRef] },
    items: schemaRef,
    enum: { type: 'array' },
    const: {},
    default: {},
    examples: { type: 'array' },
    minimum: { type: 'number' },
    maximum: { type: 'number' },
    exclusiveMinimum: { type: 'number' },
    exclusiveMaximum: { type: 'number' },
    minLength: { type: 'integer', minimum: 0 },
    maxLength: { type: 'integer', minimum: 0 },
    pattern: { type: 'string', format: 'regex' },
    format: { type: 'string' },
    minItems: { type: 'integer', minimum: 0 },
    maxItems: { type: 'integer', minimum: 0 },
    uniqueItems: { type: 'boolean' },
    anyOf: { type: 'array', items: schemaRef },
    oneOf: { type: 'array', items: schemaRef },
    allOf: { type: 'array', items: schemaRef },
  },
};
