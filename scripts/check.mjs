// npm run check: lint and type-check at once: ESLint and each of the typecheck script's tsc projects
// run side by side (each is one single-threaded process, and they take about as long as each other).
// `--no-cache` (what npm test passes) lints without ESLint's cache, which can miss a type-aware
// finding in a file that did not change. `--build` (npm test) also builds the app meanwhile
// (electron-vite build), so the second core does not idle while ESLint finishes.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const root = join(import.meta.dirname, '..');
const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const cached = !process.argv.includes('--no-cache');
const commands = [
  cached ? `${scripts.lint} --cache --cache-strategy content` : scripts.lint,
  ...scripts.typecheck.split(' && '),
  ...(process.argv.includes('--build') ? ['electron-vite build'] : []),
];
// What `npm run` would give these commands: the project's own binaries first on the PATH.
const env = { ...process.env, PATH: [join(root, 'node_modules', '.bin'), process.env.PATH].join(delimiter) };
const run = (command) => new Promise((done) => spawn(command, { stdio: 'inherit', shell: true, cwd: root, env }).on('exit', (code) => done(code)));
const codes = await Promise.all(commands.map(run));
process.exit(codes.every((code) => code === 0) ? 0 : 1);
