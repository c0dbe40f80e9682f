import { readdirSync, readFileSync } from 'node:fs';
import { afterAll } from 'vitest';

/**
 * For the integration files that share a worker process (vitest.config.ts): a file must not leave a
 * process running after its last test (an engine, sandbox or keychain store it never closed). In a
 * process of its own, the end of the process stopped them; in a shared one they would pile up
 * through every later file. Linux only (it reads /proc).
 */
const WAIT_MS = 10_000;

/** The child processes of this process, by pid, with their command lines. */
function children(): Map<number, string> {
  const found = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The fields after the command name, which may hold spaces and parentheses: state, ppid…
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) found.set(Number(entry), readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim());
    } catch {
      // It ended meanwhile.
    }
  }
  return found;
}

if (process.platform === 'linux') {
  // Taken as this setup file runs, before the test file is imported: a process it starts as it loads counts too.
  const before = new Set(children().keys());
  afterAll(async () => {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      // esbuild's service is started once per process, for every later file too; the keychain
      // helper ends itself 30 s after its last request (keychainProcess.ts); a zombie has ended.
      const left = [...children()].filter(([pid, command]) => !before.has(pid) && command !== '' && !command.includes(' --service=') && !command.includes('/keychainHelper.'));
      if (left.length === 0) return;
      if (Date.now() > deadline) {
        const listed = left.map(([pid, command]) => `${pid} ${command.slice(0, 160)}`).join('; ');
        throw new Error(`the file left ${left.length} process(es) running after its last test (${listed}): stop what it starts (test/support/scratch.ts), or list it in OWN_PROCESS_FILES of vitest.config.ts`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
}
