// `npm run dist`: electron-builder packages the built app (out/) for Linux (AppImage, deb), macOS
// (dmg) and Windows (nsis). Read by electron-builder (--config) and by test/app/packaging.test.ts.
//
// The app is two programs. Electron runs out/main (the window) from app.asar. The engine process is
// plain Node running the TypeScript sources (src-main/engineProcess/main.ts, see src-main/app/main.ts) on a
// Node 24 bundled as an extra resource, because isolated-vm, better-sqlite3 and @napi-rs/keyring are
// built for Node, not for Electron's ABI. That Node cannot read inside app.asar, so the engine's
// files and every production module are unpacked beside it (app.asar.unpacked), and the native
// modules are shipped exactly as npm installed them for this machine's Node (npmRebuild: false).
import type { Configuration } from 'electron-builder';
import { BUNDLED_NODE_DIR } from './src-main/app/nodeRuntime.ts';

/** What the engine process loads (its sources, the bridge contract, the examples, the CLI it offers MCP clients). */
export const ENGINE_FILES = ['src-main/**', 'src-preload/**', 'resources/**', 'bin/**'];

/** Where scripts/fetchNodeRuntime.mjs leaves each target's Node (its RUNTIME_DIR). */
const RUNTIME_FROM = 'dist/node-runtime/${os}-${arch}';

const config: Configuration = {
  productName: 'Callable Studio',
  directories: { output: 'dist', buildResources: 'build' },
  // package.json's main is out/main/index.js; src-main/app is bundled into it, so its sources stay out.
  files: ['package.json', 'out/**', ...ENGINE_FILES, '!src-main/app/**', '!**/*.test.ts'],
  asar: true,
  asarUnpack: [...ENGINE_FILES, 'node_modules/**'],
  npmRebuild: false,
  extraResources: [{ from: RUNTIME_FROM, to: BUNDLED_NODE_DIR }],
  beforePack: './scripts/fetchNodeRuntime.mjs',
  afterPack: './scripts/afterPack.mjs',
  linux: { target: ['AppImage', 'deb'], category: 'Development' },
  mac: { target: ['dmg'], category: 'public.app-category.developer-tools' },
  win: { target: ['nsis'] },
  nsis: { oneClick: false, allowToChangeInstallationDirectory: true },
};


export default config;
