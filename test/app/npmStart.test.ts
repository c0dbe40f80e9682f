import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/callable.ts';
import { tempDir } from '../support/tmp.ts';
import { vendorServer } from '../support/vendor.ts';

// `npm start` when Electron's binary cannot be downloaded: one line saying so and what to do, exit 1.
// The download is made to fail for real: ELECTRON_MIRROR points at a server on 127.0.0.1 that has no
// Electron (404), with an empty download cache, so the test is the same with or without a network.

const installed = existsSync(join(REPO, 'node_modules/electron/path.txt'));

describe('npm start', () => {
  it.skipIf(installed)('without a downloadable Electron binary prints one line (what failed, what to do) and exits 1 (skipped when this checkout already has the binary)', async () => {
    const mirror = await vendorServer((_req, res) => {
      res.statusCode = 404;
      res.end('no electron here');
    });
    const env: NodeJS.ProcessEnv = { ...process.env, ELECTRON_MIRROR: `http://127.0.0.1:${mirror.port}/`, electron_config_cache: tempDir('callable-electron-cache-') };
    delete env.ELECTRON_OVERRIDE_DIST_PATH;
    const child = spawn('npm', ['start'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));

    expect(mirror.seen.length).toBeGreaterThan(0);
    expect(code).toBe(1);
    const ours = stderr.split('\n').filter((l) => l.startsWith('npm start: '));
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatch(
      /^npm start: Electron's binary could not be downloaded \(.*404.*\): connect to the network, or set ELECTRON_MIRROR to a mirror you can reach, and run npm start again; the headless commands \(npx callable …\) need no Electron$/,
    );
    expect(stderr).not.toMatch(/\n\s+at /);
    expect(stderr.trim().split('\n')).toEqual(ours);
    // Nothing was built: the check comes first.
    expect(stdout).not.toContain('vite');
  }, 60_000);
});
