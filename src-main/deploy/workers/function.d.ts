// The function's compiled module, which the gateway gives each call's isolate as function.js:
// its default export is the module's exports (the handler is their `default`).
declare const exports: { default?: unknown } | undefined;
export default exports;
