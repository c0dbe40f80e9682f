// A stand-in for Electron main in engineProcess.test.ts: starts the relay and its engine process on
// the data folder given as argument, prints the engine's pid, and stays up (the engine's IPC
// channel keeps it alive) until the test kills it.
import { join } from 'node:path';
import { EngineProcess } from '../../src-main/app/engineProcess.ts';

const relay = new EngineProcess({
  node: { ok: true, path: process.execPath, version: process.versions.node },
  entry: join(import.meta.dirname, '../../src-main/engineProcess/main.ts'),
  args: ['--data-dir', process.argv[2]!, '--mcp-port', '0'],
});
await relay.start();
process.stdout.write(`${relay.pid}\n`);
