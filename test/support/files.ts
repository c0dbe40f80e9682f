import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Every byte under a folder (a database and its WAL, exported files), as one string to search. */
export function everything(dir: string): string {
  let all = '';
  for (const entry of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const path = join(dir, entry);
    if (statSync(path).isFile()) all += readFileSync(path).toString('latin1');
  }
  return all;
}
