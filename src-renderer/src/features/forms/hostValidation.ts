// The form validates with the host's validator, over the bridge (`schemas:validate`), not in the
// page. Ajv compiles every schema to JavaScript with `new Function`, which the renderer's
// Content-Security-Policy (script-src 'self', no 'unsafe-eval') forbids, and a user's schema cannot
// be precompiled at build time. So rjsf gets a validator that finds nothing itself, and the host's
// problems come back as rjsf `extraErrors`, shown inline next to the fields they are about.
import { ErrorSchemaBuilder, getClosestMatchingOption, type ErrorSchema, type RJSFSchema, type ValidatorType } from '@rjsf/utils';
import type { SchemaProblem } from '../../../../src-preload/contract.ts';

/**
 * rjsf's validator, for a page where none can run: it reports no errors (the host's come as
 * `extraErrors`) and answers "not valid" when rjsf asks whether data matches a schema, so rjsf
 * picks `oneOf`/`anyOf` branches by its structural score (`const` discriminators, types, keys),
 * and always takes `else` for an `if`/`then`/`else`.
 */
export const hostValidator: ValidatorType = {
  validateFormData: () => ({ errors: [], errorSchema: {} }),
  isValid: () => false,
  rawValidation: () => ({ errors: [] }),
};

/** One problem, placed: the path of the value it is about (keys and indexes) and what is wrong with it. */
export interface PlacedProblem {
  path: string[];
  message: string;
}

const pointer = (path: string): string[] => (path === '' ? [] : path.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')));

function at(value: unknown, path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/**
 * Ajv (allErrors) reports a failed `oneOf`/`anyOf` with the errors of every branch. Only the branch
 * the form shows is worth reading: the one rjsf picks for the data (as its selector does), else the
 * branch with the fewest errors. The summary ("must match exactly one schema in oneOf") goes when
 * that branch's own errors say what is wrong.
 */
export function relevantProblems(problems: SchemaProblem[], rootSchema: RJSFSchema, value: unknown): SchemaProblem[] {
  let kept = problems;
  const summaries = problems.filter((p) => p.keyword === 'oneOf' || p.keyword === 'anyOf').sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  for (const summary of summaries) {
    if (!kept.includes(summary)) continue;
    const prefix = `${summary.schemaPath}/`;
    const inBranch = (p: SchemaProblem): boolean =>
      p.schemaPath.startsWith(prefix) && (p.instancePath === summary.instancePath || p.instancePath.startsWith(`${summary.instancePath}/`));
    const branchOf = (p: SchemaProblem): number => Number(p.schemaPath.slice(prefix.length).split('/')[0]);
    const branches = kept.filter(inBranch);
    if (branches.length === 0) continue;
    const counts = new Map<number, number>();
    for (const p of branches) counts.set(branchOf(p), (counts.get(branchOf(p)) ?? 0) + 1);
    let chosen = -1;
    const options = at(rootSchema, pointer(summary.schemaPath.replace(/^#/, '')));
    if (Array.isArray(options)) {
      chosen = getClosestMatchingOption(hostValidator, rootSchema, at(value, pointer(summary.instancePath)), options as RJSFSchema[], -1);
    }
    if (chosen < 0) chosen = [...counts.entries()].sort((a, b) => a[1] - b[1] || a[0] - b[0])[0]![0];
    const chosenHasErrors = counts.has(chosen);
    kept = kept.filter((p) => (inBranch(p) ? branchOf(p) === chosen : p !== summary || !chosenHasErrors));
  }
  return kept;
}

/** Where each problem belongs in the form and its message, worded like the host's run errors. */
export function placeProblems(problems: SchemaProblem[]): PlacedProblem[] {
  return problems.map((p) => {
    const path = pointer(p.instancePath);
    const params = p.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string; allowedValues?: unknown[] };
    if (p.keyword === 'required' && params.missingProperty !== undefined) return { path: [...path, params.missingProperty], message: 'is required' };
    if (p.keyword === 'additionalProperties') return { path, message: `has an unexpected property "${params.additionalProperty}"` };
    if (p.keyword === 'unevaluatedProperties') return { path, message: `has an unexpected property "${params.unevaluatedProperty}"` };
    if (p.keyword === 'enum') return { path, message: `must be one of ${JSON.stringify(params.allowedValues)}` };
    return { path, message: p.message };
  });
}

/** rjsf's error tree for `extraErrors`. */
export function errorSchemaOf(placed: PlacedProblem[]): ErrorSchema {
  const builder = new ErrorSchemaBuilder();
  for (const { path, message } of placed) builder.addErrors(message, path.length === 0 ? undefined : path);
  return builder.ErrorSchema;
}

/** One line per problem, as a run reports it ("contact.email must match pattern …"). */
export function problemLine({ path, message }: PlacedProblem): string {
  return path.length === 0 ? message : `${path.join('.')} ${message}`;
}
