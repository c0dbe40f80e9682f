import type { CredentialSpec, TestCaseInput } from '../../model/index.ts';
import { describeCurl } from './curl.ts';
import { generateFunction, type CredentialSuggestion, type RequestDescription, type Scaffold } from './generate.ts';
import { describeHar, harTestCase } from './har.ts';
import { describeOperation, loadOpenApi } from './openapi.ts';

export { credentialCommand, type CredentialSuggestion, type Scaffold } from './generate.ts';
export { harEntries, type HarEntryInfo } from './har.ts';
export { listOperations, loadOpenApi, operationsOf, type OpenApiDocument, type OpenApiOperation } from './openapi.ts';

/** A new function made from what the user already has, plus its first test case (HAR). */
export interface ScaffoldResult extends Scaffold {
  /** HAR only: the entry's exchange as the function's first test case. */
  testCase?: TestCaseInput;
}

/** Where a new function comes from: a pasted curl command, a HAR file's entry, or an OpenAPI operation. */
export type ScaffoldSource =
  | { kind: 'curl'; command: string }
  | { kind: 'har'; text: string; file: string; entry?: number }
  | { kind: 'openapi'; file: string; operation: string; server?: string; shown?: string };

/**
 * Generates the function `name` from `source` (nothing is saved). `credentialExists` says whether
 * a credential of a name is already stored, so a generated one does not take over a credential the
 * user keeps for other hosts.
 */
export async function scaffoldFunction(name: string, source: ScaffoldSource, existing: (credential: string) => CredentialSpec | undefined = () => undefined): Promise<ScaffoldResult> {
  let described: { description: RequestDescription; notes: string[] };
  let har: ReturnType<typeof describeHar> | undefined;
  if (source.kind === 'curl') described = await describeCurl(source.command);
  else if (source.kind === 'har') described = har = describeHar(source.text, source.file, source.entry);
  else described = describeOperation(await loadOpenApi(source.file, source.shown), source.operation, { server: source.server });
  const { description, notes } = described;
  if (description.credential) description.credential = freeCredentialName(description.credential, existing);
  const scaffold: ScaffoldResult = generateFunction(name, description, notes);
  if (har) {
    const testCase = harTestCase(description, scaffold, har.response, new Date().toISOString(), scaffold.notes);
    if (testCase) scaffold.testCase = testCase;
  }
  return scaffold;
}

/**
 * The credential's name as generated, unless a stored credential of that name is for other hosts:
 * then the first free `name-2`, `name-3`… A stored one for the same host is reused.
 */
function freeCredentialName(credential: CredentialSuggestion, existing: (name: string) => CredentialSpec | undefined): CredentialSuggestion {
  for (let n = 1; n < 100; n++) {
    const name = n === 1 ? credential.name : `${credential.name.slice(0, 60)}-${n}`;
    const found = existing(name);
    if (!found || credential.hosts.every((h) => found.hosts.includes(h))) return { ...credential, name };
  }
  return credential;
}
