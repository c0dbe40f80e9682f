import { z } from 'zod';
import { FunctionNameSchema } from './function.ts';

export const ProfileNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a profile name starts with a lower-case letter and has only a-z, 0-9, _ and - (at most 64 characters)');

/** A named subset of functions served together (per stdio server, or per HTTP path /mcp/<name>). */
export const ProfileSpecSchema = z
  .object({
    name: ProfileNameSchema,
    functions: z.array(FunctionNameSchema).max(1000),
    /** Adds find_functions and call_function, so clients that ignore list-changed can use new functions. */
    metaTools: z.boolean().default(false),
  })
  .strict();
export type ProfileSpec = z.infer<typeof ProfileSpecSchema>;
