import { z } from 'zod';

/**
 * A saved test case of a function: the arguments of one real run, every ctx.fetch exchange it made
 * (in order) and what the run returned. Kept in the function's folder as `tests/<name>.json` and in
 * the database for the studio. `callable test` replays it offline: ctx.fetch is answered from the
 * exchanges and the result is compared with `expect`.
 */

/** The case format this build writes and reads. */
export const TEST_CASE_VERSION = 1;
/** The most bytes of one recorded request or response body; past it the exchange is marked truncated and the case cannot be saved. */
export const MAX_RECORDED_BODY_BYTES = 1024 * 1024;
/** The most ctx.fetch exchanges one case holds (a run that made more is marked truncated). */
export const MAX_RECORDED_EXCHANGES = 100;
/** The most cases one function has. */
export const MAX_TEST_CASES = 200;

/** A case's name is its file name (`tests/<name>.json`). */
export const TestCaseNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'a test case name starts with a lower-case letter or a digit and has only a-z, 0-9, _ and - (at most 64 characters), e.g. translate_hello');

const HeaderListSchema = z.array(z.tuple([z.string(), z.string()])).max(500);

/**
 * A body: `body` holds it as text when it is valid UTF-8; otherwise `body` is null and
 * `bodyBase64` holds the bytes. A request without a body has `body: null` and no `bodyBase64`.
 * `truncated` marks a body cut at MAX_RECORDED_BODY_BYTES: such an exchange cannot be saved.
 */
const BodyFields = {
  body: z.string().nullable(),
  bodyBase64: z.string().optional(),
  truncated: z.literal(true).optional(),
};

export const RecordedRequestSchema = z
  .object({
    method: z.string().min(1).max(20),
    /** The URL as the function passed it to ctx.fetch (no credential query parameter: that is added host-side). */
    url: z.string().min(1).max(8192),
    /** The headers the function set (never an injected credential header). */
    headers: HeaderListSchema,
    ...BodyFields,
  })
  .strict();
export type RecordedRequest = z.infer<typeof RecordedRequestSchema>;

export const RecordedResponseSchema = z
  .object({
    status: z.number().int().min(100).max(599),
    statusText: z.string().max(200).optional(),
    headers: HeaderListSchema,
    ...BodyFields,
  })
  .strict();
export type RecordedResponse = z.infer<typeof RecordedResponseSchema>;

/** A request that ctx.fetch failed (refused, unreachable, too large) instead of answering: replay fails it the same way. */
export const RecordedFetchErrorSchema = z.object({ code: z.string().min(1).max(64), message: z.string().max(2000) }).strict();

/** One ctx.fetch call: the request and its response, or the error ctx.fetch threw. */
export const ExchangeSchema = z.union([
  z.object({ request: RecordedRequestSchema, response: RecordedResponseSchema }).strict(),
  z.object({ request: RecordedRequestSchema, error: RecordedFetchErrorSchema }).strict(),
]);
export type Exchange = z.infer<typeof ExchangeSchema>;

/** What the run should end with: a JSON value (and MCP content, when the function returned content), or an error code. */
export const TestExpectSchema = z.union([
  z.object({ ok: z.literal(true), value: z.unknown(), content: z.array(z.unknown()).optional() }).strict(),
  z.object({ ok: z.literal(false), code: z.string().min(1).max(64) }).strict(),
]);
export type TestExpect = z.infer<typeof TestExpectSchema>;

/**
 * JSON paths left out of the comparison: `$`, then `.key`, `['key']`, `[0]`, `[*]` or `.*`
 * steps, e.g. `$.id`, `$.items[*].createdAt`.
 */
export const JsonPathSchema = z
  .string()
  .max(500)
  .regex(/^\$((\.[A-Za-z_$][\w$-]*)|(\.\*)|(\[\d+\])|(\[\*\])|(\['[^']*'\]))*$/, "a JSON path to ignore looks like $.id, $.items[*].createdAt or $['a key'][0]");

export const TestSourceSchema = z.enum(['console', 'cli', 'history', 'har']);
export type TestSource = z.infer<typeof TestSourceSchema>;

export const TestCaseSchema = z
  .object({
    version: z.literal(TEST_CASE_VERSION, { message: `this build reads test cases of version ${TEST_CASE_VERSION}` }),
    name: TestCaseNameSchema,
    args: z.unknown(),
    exchanges: z.array(ExchangeSchema).max(MAX_RECORDED_EXCHANGES),
    expect: TestExpectSchema,
    ignore: z.array(JsonPathSchema).max(100).default([]),
    recordedAt: z.string().max(64),
    source: TestSourceSchema,
  })
  .strict();
/** A case as stored and written (every field present). */
export type TestCase = z.infer<typeof TestCaseSchema>;
/** A case as given to `tests.save` (ignore may be left out). */
export type TestCaseInput = z.input<typeof TestCaseSchema>;

/** One difference between what a replay did and what the case expected. */
export interface TestDifference {
  /** JSON path in the result (`$.items[0].name`), or `request #N` for a request that did not match. */
  path: string;
  expected: unknown;
  actual: unknown;
  /** Set for missing (`absent` on one side) values. */
  note?: string;
}

/** The outcome of replaying one case. */
export interface TestCaseResult {
  function: string;
  case: string;
  status: 'pass' | 'fail' | 'error' | 'updated';
  durationMs: number;
  /** Why it failed, in one line (the first difference, or the request that did not match). */
  message?: string;
  /** The result the case expects and the one the replay produced, for a side-by-side view. */
  expected?: TestExpect;
  actual?: TestExpect;
  differences?: TestDifference[];
}

export interface TestRunSummary {
  results: TestCaseResult[];
  passed: number;
  failed: number;
  updated: number;
}

/** A saved case as the studio lists it. */
export interface TestCaseInfo {
  name: string;
  exchanges: number;
  recordedAt: string;
  source: TestSource;
  expectOk: boolean;
}
