// The fresh-subprocess-per-call reference (issue #5): one `node` process per call. It imports the
// function module given as argv[2], runs it on the JSON arguments in argv[3] and prints the result
// as JSON on stdout. Plain JavaScript on purpose: no type stripping, the cheapest honest version.
import { pathToFileURL } from 'node:url';

const [modulePath, argsJson] = process.argv.slice(2);
const mod = await import(pathToFileURL(modulePath).href);
const result = await mod.default(JSON.parse(argsJson));
process.stdout.write(`${JSON.stringify(result)}\n`);
