import { describe, expect, it } from 'vitest';
import { conformanceServe, runConformance } from '../support/conformance.ts';

// The official conformance scenarios for questions a tool asks (elicitation, sampling), against a
// real `callable serve` whose tools are ordinary functions using ctx.elicit and ctx.sample, written
// as each scenario's instructions describe them.

const NO_ARGS = { type: 'object', properties: {} };

const TOOLS: Array<{ spec: Record<string, unknown>; source: string }> = [
  {
    spec: {
      name: 'test_elicitation',
      description: 'Asks the user for a username and an email',
      language: 'js',
      inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    },
    source: `export default async ({ message }, ctx) => {
  const answer = await ctx.elicit(message, {
    type: 'object',
    properties: { username: { type: 'string', description: "User's response" }, email: { type: 'string', description: "User's email address" } },
    required: ['username', 'email'],
  });
  return ctx.content.text('User response: ' + JSON.stringify(answer));
}`,
  },
  {
    spec: { name: 'test_elicitation_sep1034_defaults', description: 'Asks with a default for every primitive type', language: 'js', inputSchema: NO_ARGS },
    source: `export default async (args, ctx) => {
  const { action, content } = await ctx.elicit('Please review the defaults', {
    type: 'object',
    properties: {
      name: { type: 'string', default: 'John Doe' },
      age: { type: 'integer', default: 30 },
      score: { type: 'number', default: 95.5 },
      status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
      verified: { type: 'boolean', default: true },
    },
  });
  return ctx.content.text('Elicitation completed: action=' + action + ', content=' + JSON.stringify(content ?? {}));
}`,
  },
  {
    spec: { name: 'test_elicitation_sep1330_enums', description: 'Asks with every enum variant', language: 'js', inputSchema: NO_ARGS },
    source: `export default async (args, ctx) => {
  const { action, content } = await ctx.elicit('Pick some options', {
    type: 'object',
    properties: {
      untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
      titledSingle: { type: 'string', oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }] },
      legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
      untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
      titledMulti: { type: 'array', items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] } },
    },
  });
  return ctx.content.text('Elicitation completed: action=' + action + ', content=' + JSON.stringify(content ?? {}));
}`,
  },
  {
    spec: {
      name: 'test_sampling',
      description: "Asks the client's model",
      language: 'js',
      sampling: { maxCalls: 1 },
      inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    },
    source: `export default async ({ prompt }, ctx) => {
  const answer = await ctx.sample([{ role: 'user', content: { type: 'text', text: prompt } }], { maxTokens: 100 });
  return ctx.content.text('LLM response: ' + answer.content.text);
}`,
  },
];

const server = conformanceServe(TOOLS);

describe('the official conformance scenarios for elicitation and sampling, with tools written as functions', () => {
  for (const scenario of ['tools-call-elicitation', 'elicitation-sep1034-defaults', 'elicitation-sep1330-enums', 'tools-call-sampling']) {
    it(`passes ${scenario} with no warnings`, async () => {
      const result = await runConformance(server.url, scenario);
      expect(result.code, result.output).toBe(0);
      const scored = result.checks.filter((c) => c.status !== 'INFO');
      expect(scored.length, result.output).toBeGreaterThan(0);
      expect(
        scored.filter((c) => c.status !== 'SUCCESS'),
        result.output,
      ).toEqual([]);
    });
  }
});
