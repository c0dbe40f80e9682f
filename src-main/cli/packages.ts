import { parseDependencySpec, type Engine } from '../engine/index.ts';
import { EXIT_OK, parse, UsageError, type Command, type CommandContext } from './common.ts';

const add: Command = {
  usage: 'add FUNCTION PACKAGE[@RANGE]…',
  summary:
    "Adds npm packages to a function, which then imports them by name (import ms from 'ms'). npm installs them from the registry your npm config names (registry, proxy), with install scripts never run, into a cache in the data folder that all functions share; the exact versions and their integrity are pinned in the function's package-lock.json, and the function is bundled with them and saved as a new revision. A package that needs a Node built-in (fs, net, child_process…) is refused, naming the built-in and the chain of imports that reached it.",
  options: [
    ['FUNCTION', 'the function that imports the packages'],
    ['PACKAGE[@RANGE]…', 'npm packages, each with a version, range or tag (default: the latest version, recorded as ^VERSION)'],
  ],
  examples: ['callable add word_stats ms', 'callable add word_stats ms@^2.1.0 zod@4'],
  async run(ctx) {
    const [name, ...specs] = positionalsOf(ctx, 'add FUNCTION PACKAGE[@RANGE]…');
    const wanted = specs.map(parseDependencySpec);
    const engine = ctx.engine();
    const record = await engine.addPackages(name, specs);
    const now = engine.packages(name);
    for (const { name: pkg } of wanted) ctx.out(`added ${pkg} ${now.versions[pkg]} (${now.dependencies[pkg]}) to ${name}`);
    ctx.out(`${name} is at revision ${record.revision}; ${now.locked} package${now.locked === 1 ? '' : 's'} locked, bundle ${kilobytes(now.bundleBytes)}`);
    return EXIT_OK;
  },
};

const remove: Command = {
  usage: 'remove FUNCTION PACKAGE…',
  summary: "Removes npm packages from a function (its source must no longer import them), re-locks the rest and saves it as a new revision. To delete a function, use \"callable rm\".",
  options: [
    ['FUNCTION', 'the function'],
    ['PACKAGE…', 'the packages to remove, by name'],
  ],
  examples: ['callable remove word_stats ms'],
  async run(ctx) {
    const [name, ...names] = positionalsOf(ctx, 'remove FUNCTION PACKAGE…');
    const engine = ctx.engine();
    const record = await engine.removePackages(name, names);
    const now = engine.packages(name);
    ctx.out(`removed ${names.join(', ')} from ${name} (revision ${record.revision}); ${now.locked > 0 ? `${now.locked} package${now.locked === 1 ? '' : 's'} still locked` : 'it imports no package now'}`);
    return EXIT_OK;
  },
};

/** FUNCTION and at least one more positional; flags other than --data-dir/--help are refused by parse. */
function positionalsOf(ctx: CommandContext, usage: string): [string, ...string[]] {
  const { positionals } = parse(ctx.args, {}, ctx.args.filter((a) => !a.startsWith('-')).length);
  if (positionals.length < 2) throw new UsageError(`give the function and at least one package: ${usage}`);
  return positionals as [string, ...string[]];
}

/** The packages section `callable show` prints: each as asked for → as resolved, then the count and the bundle's size. */
export function packageLines(engine: Engine, name: string): string[] {
  const p = engine.packages(name);
  const names = Object.keys(p.dependencies).sort();
  if (names.length === 0) return [];
  return [
    '--- packages (package.json, package-lock.json) ---',
    ...names.map((pkg) => `${pkg} ${p.dependencies[pkg]} → ${p.versions[pkg]}`),
    `${p.locked} package${p.locked === 1 ? '' : 's'} locked; bundle ${kilobytes(p.bundleBytes)}`,
  ];
}

/** What `callable show --json` adds: the packages as asked for and as resolved. */
export function packagesJson(engine: Engine, name: string): { dependencies: Record<string, string>; versions: Record<string, string>; locked: number; bundleBytes: number } {
  const p = engine.packages(name);
  return { dependencies: p.dependencies, versions: p.versions, locked: p.locked, bundleBytes: p.bundleBytes };
}

function kilobytes(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} kB`;
}

export const commands: Record<string, Command> = { add, remove };
