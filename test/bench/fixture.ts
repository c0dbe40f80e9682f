// What every benchmark target serves: the same trivial function, schema and arguments (issue #5).

/** The function under test, as a Callable Studio function source. */
export const ECHO_SOURCE = 'export default ({ text, n }) => ({ echo: text, n: n * 2 })';

export type EchoSchema = {
  type: 'object';
  properties: Record<string, { type: string }>;
  required: string[];
  additionalProperties: boolean;
};

/** The input schema, the same in the product's spec and the plain server's tool. */
export const ECHO_INPUT_SCHEMA: EchoSchema = {
  type: 'object',
  properties: { text: { type: 'string' }, n: { type: 'number' } },
  required: ['text', 'n'],
  additionalProperties: false,
};

export const ECHO_TEXT = 'hello';

export function echoArgs(i: number): { text: string; n: number } {
  return { text: ECHO_TEXT, n: i };
}

/** Undefined when `value` is the right answer to echoArgs(i), else what is wrong. */
export function echoProblem(value: unknown, i: number): string | undefined {
  if (!value || typeof value !== 'object') return `not an object: ${JSON.stringify(value)?.slice(0, 200)}`;
  const v = value as { echo?: unknown; n?: unknown };
  if (v.echo !== ECHO_TEXT || v.n !== i * 2) return `wrong answer: ${JSON.stringify(value).slice(0, 200)}`;
  return undefined;
}

/** The input of the fetch functions and the plain server's fetch tools: the vendor URL to request. */
export const URL_INPUT_SCHEMA = { type: 'object' as const, properties: { url: { type: 'string' } }, required: ['url'], additionalProperties: false };
