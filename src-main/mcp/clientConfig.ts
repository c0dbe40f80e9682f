/**
 * What an MCP client (Claude Code, Claude Desktop, Cursor, VS Code) is told to launch for
 * `callable mcp` over stdio: the CLI and the studio print the same configs.
 *
 * The command is the absolute path of the Node that runs this install (24 or newer), not
 * `bin/callable.js`, whose `#!/usr/bin/env node` finds whatever node an IDE has first on its PATH.
 * And clients start servers with a reduced environment (the official SDK keeps HOME, PATH, USER and
 * a few more), which on Linux drops the D-Bus session address the keychain is reached through, so the
 * config passes it, with the settings that choose where secrets come from. Never a secret.
 */

import { shellQuote } from '../engine/index.ts';

/** The environment variables a stdio server needs to read secrets as this process does, when set. */
export const PASSED_ENV = ['DBUS_SESSION_BUS_ADDRESS', 'CALLABLE_SECRETS', 'CALLABLE_KEYCHAIN_SERVICE', 'CALLABLE_KEYCHAIN_TIMEOUT_MS'] as const;

export interface StdioLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** How a client starts `callable mcp ARGS` of the install whose command is `bin`, run by `node`. */
export function stdioLaunch(node: string, bin: string, mcpArgs: readonly string[], env: NodeJS.ProcessEnv): StdioLaunch {
  const passed: Record<string, string> = {};
  for (const name of PASSED_ENV) {
    const value = env[name];
    if (value !== undefined && value !== '') passed[name] = value;
  }
  return { command: node, args: [bin, 'mcp', ...mcpArgs], env: passed };
}

export interface StdioConfigs {
  claudeCode: string;
  claudeDesktop: string;
  cursor: string;
  vscode: string;
}

/** The copy-paste configs of each common client for `launch`, under the server name "callable". */
export function stdioConfigs(launch: StdioLaunch): StdioConfigs {
  const { command, args, env } = launch;
  const withEnv = Object.keys(env).length > 0 ? { env } : {};
  const json = (value: unknown): string => JSON.stringify(value, null, 2);
  const flags = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  return {
    claudeCode: ['claude', 'mcp', 'add', 'callable', ...flags.map(shellQuote), '--', ...[command, ...args].map(shellQuote)].join(' '),
    claudeDesktop: json({ mcpServers: { callable: { command, args, ...withEnv } } }),
    cursor: json({ mcpServers: { callable: { command, args, ...withEnv } } }),
    vscode: json({ servers: { callable: { type: 'stdio', command, args, ...withEnv } } }),
  };
}
