// Ambient names the guest runtime may use besides the language (it runs with no DOM and no Node).

/**
 * Loads a bundled package on first call (see defineLazyGlobal in globals.js): esbuild resolves it
 * at build time and wraps the package so its top level runs only then.
 */
declare function require(id: string): any;
