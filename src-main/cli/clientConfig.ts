import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultDataDir } from '../engine/index.ts';
import { stdioConfigs, stdioLaunch } from '../mcp/clientConfig.ts';
import { EXIT_OK, parse, type Command } from './common.ts';

/** This install's command, as a client is told to start it (with an absolute Node, so not through its shebang). */
const CALLABLE_BIN = fileURLToPath(new URL('../../bin/callable.js', import.meta.url));

const mcpConfig: Command = {
  usage: 'mcp-config [--profile NAME] [--json]',
  summary:
    'Prints how an MCP client starts "callable mcp" over stdio from this install: the Claude Code command and the JSON for Claude Desktop, Cursor and VS Code (the studio\'s MCP page shows the same). They name the Node that runs this command, since an IDE may have an older node first on its PATH, and pass the keychain\'s session (DBUS_SESSION_BUS_ADDRESS on Linux), which clients do not pass to the servers they start. Never a secret.',
  options: [
    ['--profile NAME', 'serve only the functions of this profile ("callable profiles list")'],
    ['--json', 'the command, arguments and environment, and each client\'s config, as one JSON document'],
  ],
  examples: ['callable mcp-config', 'callable mcp-config --profile writing --json'],
  async run(ctx) {
    const { values } = parse(ctx.args, { profile: { type: 'string' }, json: { type: 'boolean' } }, 0);
    // A profile that does not exist would give a config that fails in the IDE: named here instead.
    if (values.profile !== undefined) ctx.engine().profiles.get(values.profile);
    const dataDir = ctx.dataDir === resolve(ctx.io.cwd, defaultDataDir(ctx.io.env)) ? [] : ['--data-dir', ctx.dataDir];
    const launch = stdioLaunch(process.execPath, CALLABLE_BIN, [...(values.profile !== undefined ? ['--profile', values.profile] : []), ...dataDir], ctx.io.env);
    const configs = stdioConfigs(launch);
    if (values.json) {
      ctx.out(JSON.stringify({ ...launch, ...configs }, null, 2));
      return EXIT_OK;
    }
    ctx.out(`Claude Code (run in a terminal):\n  ${configs.claudeCode}\n`);
    ctx.out(`Claude Desktop (claude_desktop_config.json), Cursor (~/.cursor/mcp.json):\n${configs.claudeDesktop}\n`);
    ctx.out(`VS Code (.vscode/mcp.json):\n${configs.vscode}`);
    if (Object.keys(launch.env).length > 0) ctx.err(`callable mcp-config: the configs pass ${Object.keys(launch.env).join(', ')} from this session; print them again after it changes (a new login)`);
    return EXIT_OK;
  },
};

export const commands: Record<string, Command> = { 'mcp-config': mcpConfig };
