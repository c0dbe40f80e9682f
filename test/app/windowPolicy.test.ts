// The app: protocol serving real files, and faults logged on a real filesystem (a full one too) and
// handled in real processes (src-main/app/appProtocol.ts, faults.ts). The decisions themselves, as
// pure functions, are in windowDecisions.test.ts; Electron wires them in main.ts (see electron.spec.ts).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { serveAppRequest } from '../../src-main/app/appProtocol.ts';
import { FAULT_WINDOW_MS, FaultLog, LOG_FILE, logsDir, MAX_MAIN_FAULTS } from '../../src-main/app/faults.ts';
import { CONTENT_SECURITY_POLICY, MIME_TYPES } from '../../src-main/app/windowPolicy.ts';
import { REPO } from '../support/callable.ts';
import { scratch } from '../support/scratch.ts';

const s = scratch();

describe('the app: protocol on real files', () => {
  function renderer(): { root: string; outside: string } {
    const base = s.dir('callable-app-protocol-');
    const root = join(base, 'renderer');
    mkdirSync(join(root, 'assets', 'folder.js'), { recursive: true });
    writeFileSync(join(root, 'index.html'), '<!doctype html><title>studio</title>');
    writeFileSync(join(root, 'assets', 'app.js'), 'console.log(1)');
    writeFileSync(join(base, 'secret.txt'), 'TOP-SECRET');
    return { root, outside: join(base, 'secret.txt') };
  }

  it('serves a file with its type, the CSP header and nosniff', async () => {
    const { root } = renderer();
    const answer = await serveAppRequest({ method: 'GET', url: 'app://studio/index.html' }, root);
    expect(answer.status).toBe(200);
    expect(answer.headers).toMatchObject({ 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CONTENT_SECURITY_POLICY, 'x-content-type-options': 'nosniff', 'content-length': '36' });
    expect(String(answer.body)).toBe('<!doctype html><title>studio</title>');
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/' }, root)).toMatchObject({ status: 200, body: answer.body });
  });

  it('answers HEAD without a body', async () => {
    const { root } = renderer();
    expect(await serveAppRequest({ method: 'HEAD', url: 'app://studio/assets/app.js' }, root)).toMatchObject({ status: 200, body: null, headers: { 'content-length': '14', 'content-type': 'text/javascript; charset=utf-8' } });
  });

  it('refuses other methods with 405', async () => {
    const { root } = renderer();
    const answer = await serveAppRequest({ method: 'POST', url: 'app://studio/index.html' }, root);
    expect(answer).toMatchObject({ status: 405, headers: { allow: 'GET, HEAD' }, body: 'POST is not allowed here; only GET and HEAD\n' });
  });

  it('answers 404 for a missing file and for a folder', async () => {
    const { root } = renderer();
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/missing.js' }, root)).toMatchObject({ status: 404, body: 'not found\n' });
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/assets/folder.js' }, root)).toMatchObject({ status: 404, body: 'not found\n' });
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/index.html/x.js' }, root)).toMatchObject({ status: 404 });
  });

  it('never reads a file next to the renderer folder, however the path is spelled', async () => {
    const { root } = renderer();
    for (const url of ['app://studio/../secret.txt', 'app://studio/%2e%2e/secret.txt', 'app://studio/..%2fsecret.txt', 'app://studio/..%5csecret.txt', 'app://studio/%252e%252e/secret.txt']) {
      const answer = await serveAppRequest({ method: 'GET', url }, root);
      expect(answer.status, url).toBe(400);
      expect(String(answer.body)).not.toContain('TOP-SECRET');
    }
  });

  it('refuses a symlink that leads out of the renderer folder, and follows one that stays inside', async () => {
    const { root, outside } = renderer();
    symlinkSync(outside, join(root, 'leak.txt'));
    symlinkSync(join(root, 'assets', 'app.js'), join(root, 'alias.js'));
    const leak = await serveAppRequest({ method: 'GET', url: 'app://studio/leak.txt' }, root);
    expect(leak).toMatchObject({ status: 400, body: 'the path leaves the renderer folder\n' });
    expect(await serveAppRequest({ method: 'GET', url: 'app://studio/alias.js' }, root)).toMatchObject({ status: 200, body: Buffer.from('console.log(1)') });
  });

  it('serves every file of the built renderer with a known type (needs `npx electron-vite build`, which npm test runs)', async () => {
    const built = join(REPO, 'out/renderer');
    if (!existsSync(join(built, 'index.html'))) throw new Error('the renderer is not built: run "npx electron-vite build" (npm test does)');
    const files = readdirSync(built, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(built, f)).isFile());
    expect(files.length).toBeGreaterThan(2);
    for (const file of files) {
      const url = `app://studio/${relative(built, join(built, file)).split(/[\\/]/).map(encodeURIComponent).join('/')}`;
      const answer = await serveAppRequest({ method: 'HEAD', url }, built);
      expect(answer.status, `${file}: ${String(answer.body)}`).toBe(200);
      expect(answer.headers['content-type']).toBe(MIME_TYPES[extname(file).toLowerCase()]);
    }
    // Everything index.html references resolves to a file that is served.
    const index = readFileSync(join(built, 'index.html'), 'utf8');
    const refs = [...index.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect((await serveAppRequest({ method: 'GET', url: `app://studio/${ref}` }, built)).status, ref).toBe(200);
  });
});

describe('faults in main and in the window', () => {
  it('writes the log in the logs folder of the data folder, creating it', () => {
    const data = s.dir('callable-faults-');
    const log = new FaultLog(logsDir(data));
    expect(log.path).toBe(join(data, 'logs', LOG_FILE));
    expect(log.write('first\n')).toBe(true);
    expect(log.write('second\n')).toBe(true);
    expect(readFileSync(log.path, 'utf8')).toBe('first\nsecond\n');
  });

  it('moves the log aside to main.log.1 before an entry takes it past its size', () => {
    const dir = s.dir('callable-faults-');
    const log = new FaultLog(dir, { maxBytes: 100 });
    for (let i = 0; i < 12; i++) log.write(`entry ${String(i).padStart(2, '0')} ${'x'.repeat(20)}\n`);
    // 30-byte entries: three fit, the fourth starts a new file.
    expect(readFileSync(log.path, 'utf8')).toMatch(/^entry 09 x+\nentry 10 x+\nentry 11 x+\n$/);
    expect(readFileSync(`${log.path}.1`, 'utf8')).toMatch(/^entry 06 x+\nentry 07 x+\nentry 08 x+\n$/);
  });

  it('never throws when the logs folder cannot be made: the entry goes to the fallback', () => {
    const data = s.dir('callable-faults-');
    writeFileSync(join(data, 'logs'), 'a file where the folder should be');
    const fallback: string[] = [];
    const log = new FaultLog(logsDir(data), { fallback: (m) => fallback.push(m) });
    expect(log.write('the entry\n')).toBe(false);
    expect(fallback).toHaveLength(1);
    expect(fallback[0]).toMatch(/^callable studio: could not write the log .*main\.log \((EEXIST|ENOTDIR)\); the entry was:\nthe entry\n$/);
  });

  describe('on a full filesystem', () => {
    const mounts: string[] = [];
    afterEach(() => {
      for (const m of mounts.splice(0)) execFileSync('umount', [m]);
    });

    it('hands the entry to the fallback and writes again once there is room', () => {
      const mount = s.dir('callable-full-');
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mount]);
      mounts.push(mount);
      const log = new FaultLog(join(mount, 'logs'));
      expect(log.write('before\n')).toBe(true);
      // Fill the filesystem for real.
      const filler = join(mount, 'filler');
      try {
        writeFileSync(filler, Buffer.alloc(1024 * 1024));
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe('ENOSPC');
      }
      const fallback: string[] = [];
      const full = new FaultLog(join(mount, 'logs'), { fallback: (m) => fallback.push(m) });
      expect(full.write(`${'y'.repeat(8192)}\n`)).toBe(false);
      expect(fallback[0]).toContain('(ENOSPC)');
      rmSync(filler);
      expect(full.write('after\n')).toBe(true);
      // What fitted of the refused entry may precede it; the fallback got it whole.
      expect(fallback[0]).toContain(`${'y'.repeat(8192)}\n`);
      expect(readFileSync(log.path, 'utf8')).toMatch(/^before\ny*\n?after\n$/);
    });
  });

  /** Runs a Node process that installs the fault handlers, then runs `body`; returns its output and the log. */
  function runWithHandlers(body: string): { status: number | null; stdout: string; stderr: string; log: string } {
    const dir = s.dir('callable-faults-proc-');
    const script = `
      import { FaultLog, installFaultHandlers } from ${JSON.stringify(pathToFileURL(join(REPO, 'src-main/app/faults.ts')).href)};
      const log = new FaultLog(${JSON.stringify(dir)});
      installFaultHandlers(process, { log, relaunch: () => process.stdout.write('RELAUNCH\\n') });
      ${body}
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 15_000 });
    const logPath = join(dir, LOG_FILE);
    return { status: run.status, stdout: run.stdout, stderr: run.stderr, log: existsSync(logPath) ? readFileSync(logPath, 'utf8') : '' };
  }

  it('logs an uncaught exception and an unhandled rejection in a real process, which keeps running', () => {
    const run = runWithHandlers(`
      setTimeout(() => { throw new Error('boom in a timer'); }, 0);
      Promise.reject(new Error('a promise nobody awaited'));
      setTimeout(() => { process.stdout.write('still alive\\n'); }, 200);
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('still alive\n');
    expect(run.log).toMatch(/^\[[^\]]+\] uncaughtException: Error: boom in a timer\n {4}at /m);
    expect(run.log).toMatch(/^\[[^\]]+\] unhandledRejection: Error: a promise nobody awaited\n {4}at /m);
  });

  it(`restarts once when more than ${MAX_MAIN_FAULTS} faults come within ${FAULT_WINDOW_MS / 1000} s`, () => {
    const run = runWithHandlers(`
      for (let i = 1; i <= ${MAX_MAIN_FAULTS + 3}; i++) setTimeout(() => { throw new Error('fault ' + i); }, i);
      setTimeout(() => { process.stdout.write('done\\n'); }, 300);
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('RELAUNCH\ndone\n');
    expect(run.log.match(/uncaughtException: Error: fault \d+/g)).toHaveLength(MAX_MAIN_FAULTS + 3);
    expect(run.log).toContain(`(${MAX_MAIN_FAULTS + 1} faults within ${FAULT_WINDOW_MS / 1000} s: restarting the app)`);
  });
});
