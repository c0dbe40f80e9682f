// Node's `process` for packages that use it without importing it (`process.env.X ?? default`, a
// version check): esbuild puts this in place of the free name `process` in the bundles that use it,
// and nothing is added to the sandbox's global object. It is the one browser bundlers give
// (browserify's): `browser` is true, `env` is empty, so a package's defaults apply; keys come
// from ctx.secret.
const noop = () => {};
const unavailable = (name) => () => {
  throw new Error(`process.${name}: the sandbox has no Node process`);
};

export const process = {
  title: 'browser',
  browser: true,
  env: {},
  argv: [],
  version: '',
  versions: {},
  nextTick: (callback, ...args) => queueMicrotask(() => callback(...args)),
  cwd: () => '/',
  chdir: unavailable('chdir'),
  binding: unavailable('binding'),
  umask: () => 0,
  emitWarning: noop,
  on: noop,
  addListener: noop,
  once: noop,
  off: noop,
  removeListener: noop,
  removeAllListeners: noop,
  emit: noop,
  prependListener: noop,
  prependOnceListener: noop,
  listeners: () => [],
};
