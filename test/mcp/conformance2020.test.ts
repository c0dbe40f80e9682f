import { describe, expect, it } from 'vitest';
import { connect, type Era } from '../support/mcpClients.ts';
import { conformanceServe, runConformance } from '../support/conformance.ts';

// MCP 2025-11-25 (SEP-1613): tool schemas are JSON Schema 2020-12 unless they say otherwise. The
// official conformance scenario checks the listing keeps "$schema", "$defs" and
// "additionalProperties"; real clients of both eras check what is listed and how calls are validated.

const D2020 = 'https://json-schema.org/draft/2020-12/schema';
const D07 = 'http://json-schema.org/draft-07/schema#';

/** The tool the json-schema-2020-12 scenario looks for, exactly as its instructions give it. */
const CONFORMANCE_TOOL = {
  name: 'json_schema_2020_12_tool',
  description: 'Tool with JSON Schema 2020-12 features',
  language: 'js',
  inputSchema: {
    $schema: D2020,
    type: 'object',
    $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
    properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
    additionalProperties: false,
  },
};

const TUPLE_TOOL = {
  name: 'tuple_tool',
  description: 'Adds the pair',
  language: 'js',
  inputSchema: { type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'number' }], items: false } }, required: ['pair'] },
  outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'], unevaluatedProperties: false },
};

const DRAFT07_TOOL = {
  name: 'draft07_tool',
  description: 'Counts a draft-07 tuple',
  language: 'js',
  inputSchema: { $schema: D07, type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false } } },
};

const server = conformanceServe([
  { spec: CONFORMANCE_TOOL, source: 'export default (a) => a' },
  { spec: TUPLE_TOOL, source: 'export default ({ pair }) => ({ sum: pair[0] + pair[1] })' },
  { spec: DRAFT07_TOOL, source: 'export default ({ pair = [] }) => "n=" + pair.length' },
]);

describe('the official conformance scenario json-schema-2020-12', () => {
  it('passes json-schema-2020-12', async () => {
    const result = await runConformance(server.url, 'json-schema-2020-12');
    expect(result.code, result.output).toBe(0);
  });
});

for (const era of ['2025-11-25', '2026-07-28'] as Era[]) {
  describe(`a ${era} client over HTTP`, () => {
    it('lists each schema exactly as saved, "$schema" and "$defs" included', async () => {
      const client = await connect(era, { transport: 'http', url: server.serve.url });
      try {
        const tools = await client.listTools();
        const byName = new Map(tools.map((t) => [t.name, t]));
        expect(byName.get(CONFORMANCE_TOOL.name)?.inputSchema).toEqual(CONFORMANCE_TOOL.inputSchema);
        expect(byName.get(TUPLE_TOOL.name)?.inputSchema).toEqual(TUPLE_TOOL.inputSchema);
        expect(byName.get(TUPLE_TOOL.name)?.outputSchema).toEqual(TUPLE_TOOL.outputSchema);
        expect(byName.get(DRAFT07_TOOL.name)?.inputSchema).toEqual(DRAFT07_TOOL.inputSchema);
      } finally {
        await client.close();
      }
    });

    it('calls are validated by 2020-12 unless the schema declares draft-07', async () => {
      const client = await connect(era, { transport: 'http', url: server.serve.url });
      try {
        const sum = await client.callTool('tuple_tool', { pair: [2, 3] });
        expect(sum.isError).toBeFalsy();
        expect(sum.structuredContent).toEqual({ sum: 5 });
        const long = await client.callTool('tuple_tool', { pair: [2, 3, 4] });
        expect(long).toMatchObject({ isError: true });
        expect(long.content[0]?.text).toBe(
          "Invalid arguments for tuple_tool: args.pair must NOT have more than 2 items. Fix the arguments to match the tool's input schema and call again.",
        );
        const stray = await client.callTool(CONFORMANCE_TOOL.name, { name: 'Ada', address: { city: 3 } });
        expect(stray.content[0]?.text).toBe(
          `Invalid arguments for ${CONFORMANCE_TOOL.name}: args.address.city must be string. Fix the arguments to match the tool's input schema and call again.`,
        );
        expect((await client.callTool('draft07_tool', { pair: ['a', 1] })).content[0]?.text).toBe('n=2');
        const tooLong07 = await client.callTool('draft07_tool', { pair: ['a', 1, 'b'] });
        expect(tooLong07).toMatchObject({ isError: true });
        expect(tooLong07.content[0]?.text).toBe(
          "Invalid arguments for draft07_tool: args.pair must NOT have more than 2 items. Fix the arguments to match the tool's input schema and call again.",
        );
      } finally {
        await client.close();
      }
    });
  });
}
