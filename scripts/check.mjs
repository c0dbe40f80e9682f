// npm run check: lint and type-check at once (they take about as long as each other).
// `--no-cache` (what npm test passes) lints without ESLint's cache, which can miss a type-aware
// finding in a file that did not change.
import { spawn } from 'node:child_process';

const cached = !process.argv.includes('--no-cache');
const run = (command) => new Promise((done) => spawn(command, { stdio: 'inherit', shell: true }).on('exit', (code) => done(code)));
const codes = await Promise.all([run(cached ? 'npm run lint -- --cache --cache-strategy content' : 'npm run lint'), run('npm run typecheck')]);
process.exit(codes.every((code) => code === 0) ? 0 : 1);
