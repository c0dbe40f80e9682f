// ESLint (flat config). Every rule is an error: the layering of docs/ARCHITECTURE.md,
// "Layers and the import rule", no import cycles, no floating promises, and no console where stdout
// may carry MCP.
import { defineConfig, globalIgnores } from 'eslint/config';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import local from './eslint-rules/layers.js';

const CODE = '**/*.{ts,tsx,mts,cts,js,jsx,mjs,cjs}';
const typed = (dir) => `${dir}/**/*.{ts,tsx,mts,cts,js,jsx,mjs,cjs}`;

export default defineConfig([
  // resources/: user functions and their type stubs, not part of the app.
  globalIgnores(['out/', 'node_modules/', 'test-results/', 'playwright-report/', 'resources/']),
  {
    files: [CODE],
    languageOptions: { parser: tseslint.parser, ecmaVersion: 'latest', sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { local, 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx', '.mts', '.cts'] },
      // Imports name their files (`./x.ts`), so plain Node resolution finds them.
      'import-x/resolver-next': [createNodeResolver()],
    },
    rules: {
      'local/layers': 'error',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    // Type-aware: the files of tsconfig.json, through typescript-eslint's project service.
    files: ['src-main', 'src-preload', 'src-renderer', 'test'].map(typed),
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: { '@typescript-eslint/no-floating-promises': 'error' },
  },
  {
    // Stdout may be the MCP stdio transport: diagnostics go through injected writers.
    files: ['src-main/engine', 'src-main/sandboxHost', 'src-main/mcp', 'src-main/deploy', 'src-main/engineProcess', 'src-main/cli'].map(typed),
    rules: { 'no-console': 'error' },
  },
]);
