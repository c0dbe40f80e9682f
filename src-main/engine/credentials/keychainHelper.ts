// The keychain helper process: the only place the OS keychain library runs. @napi-rs/keyring is
// synchronous native code that can block for seconds (a stopped Secret Service) or indefinitely
// (an unlock prompt nobody answers); here it blocks only this process, which the engine kills when
// it does not answer in time. One request per line on stdin, one answer per line on stdout (JSON).
// It exits when stdin closes, so it never outlives the engine that started it.
import module, { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

export interface HelperRequest {
  id: number;
  op: 'get' | 'set' | 'delete';
  service: string;
  account: string;
  secret?: string;
}

export type HelperAnswer = { id: number; ok: true; value: string | null } | { id: number; ok: false; message: string };

type Keyring = typeof import('@napi-rs/keyring');

function handle(keyring: Keyring, request: HelperRequest): HelperAnswer {
  try {
    // Linux: only the Secret Service, which keeps secrets across logins. The library's default
    // falls back to the kernel session keyring, which forgets them at logout or reboot.
    const entry = new keyring.Entry(request.service, request.account, process.platform === 'linux' ? { linux: { store: 'secret-service' } } : undefined);
    if (request.op === 'get') return { id: request.id, ok: true, value: entry.getPassword() ?? null };
    if (request.op === 'set') {
      entry.setPassword(request.secret ?? '');
      return { id: request.id, ok: true, value: null };
    }
    entry.deletePassword();
    return { id: request.id, ok: true, value: null };
  } catch (error) {
    return { id: request.id, ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}

function main(): void {
  let keyring: Keyring | undefined;
  try {
    keyring = createRequire(import.meta.url)('@napi-rs/keyring') as Keyring;
  } catch {
    // Said on each request below.
  }
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    let request: HelperRequest;
    try {
      request = JSON.parse(line) as HelperRequest;
    } catch {
      return;
    }
    let answer: HelperAnswer;
    try {
      keyring ??= createRequire(import.meta.url)('@napi-rs/keyring') as Keyring;
      answer = handle(keyring, request);
    } catch (error) {
      answer = { id: request.id, ok: false, message: `the keychain library could not be loaded: ${error instanceof Error ? error.message : String(error)}` };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  });
  lines.on('close', () => process.exit(0));
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  // A helper that does not answer in time, or outlives its engine's close, ends by SIGKILL, which
  // skips the compile cache's write at exit: the next helper starts from it only if it is written now.
  module.flushCompileCache?.();
}

main();
