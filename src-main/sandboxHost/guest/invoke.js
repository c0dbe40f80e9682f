// @ts-check
// The handler call: its result (or what it threw) becomes the JSON text the host decodes.
import { ReflectApply, ArrayIsArray, ArraySlice, JSONStringify, JSONParse, PromiseResolve, PromiseThen, call, str } from './intrinsics.js';
import { format } from './console.js';
import { isContent } from './content.js';
import { createCtx } from './ctx.js';

/** @param {unknown} value */
const serialize = (value) => {
  if (isContent(value)) {
    return JSONStringify({ ok: true, content: [value] });
  }
  if (ArrayIsArray(value) && value.length > 0) {
    let all = true;
    for (let i = 0; i < value.length; i++) if (!isContent(value[i])) all = false;
    if (all) return JSONStringify({ ok: true, content: call(ArraySlice, value) });
  }
  let json;
  try {
    json = JSONStringify(value === undefined ? null : value);
  } catch (error) {
    return JSONStringify({ ok: false, error: { name: 'TypeError', message: `the result is not JSON-serializable: ${format(error && /** @type {{ message?: unknown }} */ (error).message)}` } });
  }
  if (json === undefined) json = 'null';
  return `{"ok":true,"value":${json}}`;
};
/** @param {any} error */
const describeError = (error) => {
  if (error !== null && typeof error === 'object') {
    let name = 'Error';
    let message = '';
    let stack;
    let code;
    try {
      name = str(error.name);
      message = str(error.message);
      stack = typeof error.stack === 'string' ? error.stack : undefined;
      code = typeof error.code === 'string' ? error.code : undefined;
    } catch {
      message = '[unreadable error]';
    }
    return { name, message, stack, code };
  }
  return { name: 'Error', message: `a non-Error value was thrown: ${format(error, 0)}` };
};

/** @param {any} moduleExports @param {string} argsJson @param {unknown} functionName @param {unknown} runId @param {number} deadline */
export const invoke = (moduleExports, argsJson, functionName, runId, deadline) => {
  const handler = moduleExports && moduleExports.default;
  if (typeof handler !== 'function') {
    return PromiseResolve(JSONStringify({ ok: false, error: { name: 'TypeError', message: 'the module has no default export function' } }));
  }
  const ctx = createCtx(functionName, runId, deadline);
  let promise;
  try {
    promise = PromiseResolve(ReflectApply(handler, undefined, [JSONParse(argsJson), ctx]));
  } catch (error) {
    return PromiseResolve(JSONStringify({ ok: false, error: describeError(error) }));
  }
  return call(PromiseThen, promise, serialize, /** @param {unknown} error */ (error) => JSONStringify({ ok: false, error: describeError(error) }));
};
