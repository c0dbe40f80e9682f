import type { z } from 'zod';

/** One line per problem, each naming the field: `inputSchema.type: the schema must have "type": "object"`. */
export function formatZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}
