import type { Engine } from '../../src-main/engine/index.ts';

/** Functions the MCP suites serve: each exercises one behaviour a client would notice. */
export async function seedMcpFunctions(engine: Engine): Promise<void> {
  const fns: Array<[Record<string, unknown>, string]> = [
    [
      {
        name: 'echo',
        title: 'Echo',
        description: 'Echoes text and doubles n',
        inputSchema: { type: 'object', properties: { text: { type: 'string' }, n: { type: 'number' } }, required: ['text'], additionalProperties: false },
        outputSchema: { type: 'object', properties: { echo: { type: 'string' }, n: { type: 'number' } }, required: ['echo', 'n'] },
        annotations: { readOnlyHint: true },
      },
      'export default ({ text, n = 1 }) => ({ echo: text, n: n * 2 })',
    ],
    [{ name: 'chatty', description: 'Logs at every level' }, 'export default (a, ctx) => { ctx.log.debug("d-msg"); ctx.log.info("i-msg"); ctx.log.warn("w-msg"); return "ok"; }'],
    [
      { name: 'slow', description: 'Waits, reporting progress', inputSchema: { type: 'object', properties: { ms: { type: 'number' }, steps: { type: 'number' } } }, timeoutMs: 60_000 },
      `export default async ({ ms = 1000, steps = 4 }, ctx) => {
        for (let i = 1; i <= steps; i++) { await new Promise((r) => setTimeout(r, ms / steps)); ctx.progress(i, steps, 'step ' + i); }
        return 'done';
      }`,
    ],
    [{ name: 'broken', description: 'Always fails' }, 'export default () => { throw new Error("vendor said no"); }'],
    [{ name: 'picture', description: 'Returns an image' }, 'export default (a, ctx) => ctx.content.image(new Uint8Array([137, 80, 78, 71]), "image/png")'],
    [{ name: 'hidden', description: 'Disabled', enabled: false }, 'export default () => "never listed"'],
  ];
  for (const [spec, source] of fns) await engine.saveFunction({ spec: spec as never, source });
}
