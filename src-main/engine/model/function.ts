import { z } from 'zod';
import { LimitOverridesSchema, MemoryMbSchema, SamplingSettingsSchema, TimeoutMsSchema } from './limits.ts';
import { isHostPatternError, parseHostPattern } from './hosts.ts';

/** A function's name is its MCP tool name. */
export const FunctionNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/, 'a function name starts with a lower-case letter and has only a-z, 0-9 and _ (at most 64 characters), e.g. translate_text');

export const CredentialNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a credential name starts with a lower-case letter and has only a-z, 0-9, _ and - (at most 64 characters), e.g. deepl');

export const HostPatternSchema = z.string().superRefine((value, ctx) => {
  const parsed = parseHostPattern(value);
  if (isHostPatternError(parsed)) ctx.addIssue({ code: 'custom', message: parsed.error });
});

const ObjectJsonSchemaShape = z.object({ type: z.literal('object', { message: 'the schema must have "type": "object"' }) }).catchall(z.unknown());
export type ObjectJsonSchema = z.infer<typeof ObjectJsonSchemaShape>;

/**
 * A JSON Schema for an object (MCP requires tool input schemas to be objects). The schema object
 * itself is kept, not a copy: a copy would drop a key named "__proto__" (a vendor's field).
 */
export const ObjectJsonSchemaSchema = z.custom<ObjectJsonSchema>().superRefine((value, ctx) => {
  const checked = ObjectJsonSchemaShape.safeParse(value);
  if (!checked.success) for (const issue of checked.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
});

export const ToolAnnotationsSchema = z
  .object({
    title: z.string().optional(),
    readOnlyHint: z.boolean().optional(),
    destructiveHint: z.boolean().optional(),
    idempotentHint: z.boolean().optional(),
    openWorldHint: z.boolean().optional(),
  })
  .strict();

export const LanguageSchema = z.enum(['ts', 'js']);
export type Language = z.infer<typeof LanguageSchema>;

/** Everything about a function except its source: what `function.json` holds on disk. */
export const FunctionSpecSchema = z
  .object({
    name: FunctionNameSchema,
    title: z.string().max(200).optional(),
    description: z.string().max(10_000).default(''),
    language: LanguageSchema.default('ts'),
    inputSchema: ObjectJsonSchemaSchema.default({ type: 'object', properties: {} }),
    outputSchema: ObjectJsonSchemaSchema.optional(),
    annotations: ToolAnnotationsSchema.optional(),
    allowedHosts: z.array(HostPatternSchema).max(100).default([]),
    credentials: z.array(CredentialNameSchema).max(50).default([]),
    timeoutMs: TimeoutMsSchema.optional(),
    memoryMb: MemoryMbSchema.optional(),
    limits: LimitOverridesSchema.optional(),
    /** Opt-in to ctx.sample (the client's model), at most `maxCalls` completions per run. */
    sampling: SamplingSettingsSchema.optional(),
    enabled: z.boolean().default(true),
    /** Ask a person before every MCP call (as for `annotations.destructiveHint: true`). */
    askBeforeCall: z.boolean().optional(),
  })
  .strict();
export type FunctionSpec = z.infer<typeof FunctionSpecSchema>;
export type FunctionSpecInput = z.input<typeof FunctionSpecSchema>;

/** A stored function: its spec, its current source and bookkeeping. */
export interface FunctionRecord extends FunctionSpec {
  id: number;
  source: string;
  revision: number;
  createdAt: string;
  updatedAt: string;
}

export interface RevisionRecord {
  revision: number;
  source: string;
  spec: FunctionSpec;
  createdAt: string;
}

/** The spec part of a stored function (what function.json holds), without its bookkeeping. */
export function specOf(record: FunctionRecord): FunctionSpec {
  const { id: _id, source: _source, revision: _revision, createdAt: _c, updatedAt: _u, ...spec } = record;
  return spec;
}
