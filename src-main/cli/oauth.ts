import { spawn } from 'node:child_process';
import { PRESET_NAMES } from '../engine/index.ts';
import type { OAuthGrant } from '../engine/model/index.ts';
import { EXIT_OK, parse, UsageError, type CliIo, type CommandContext } from './common.ts';

const GRANTS: readonly OAuthGrant[] = ['code', 'device', 'client_credentials'];

export const CONNECT_OPTIONS: Array<[string, string]> = [
  ['connect NAME', 'connects an OAuth 2 account: runs the grant, keeps the tokens in the OS keychain and refreshes them on this host'],
  ['--preset NAME', `a provider's URLs, default scopes and API hosts (${PRESET_NAMES.join(', ')}); flags given override them`],
  ['--issuer URL', 'the authorization server, found by discovery (OpenID or RFC 8414)'],
  ['--client-id ID', 'the OAuth client id registered with the server'],
  ['--scope "a b"', 'the scopes to ask for, separated by spaces'],
  ['--grant G', 'code (the default: browser sign-in with PKCE through a loopback redirect), device, or client_credentials'],
  ['--client-secret-stdin', 'read the client secret from standard input (client_credentials always does)'],
  ['--no-browser', 'print the sign-in URL without opening a browser'],
  ['--authorize-url URL', 'the authorization endpoint, for a server without discovery (with --token-url)'],
  ['--token-url URL', 'the token endpoint, for a server without discovery'],
  ['--revocation-url URL', 'the revocation endpoint (RFC 7009) credentials rm and disconnect use, when discovery does not give one'],
  ['--authorize-param KEY=VALUE', 'an extra sign-in request parameter, e.g. prompt=consent, access_type=offline, audience=URL (repeatable)'],
  ['--timeout SECONDS', 'how long to wait for the sign-in (default 300)'],
];

/** `callable credentials connect NAME …`: the grant runs here; the engine stores and refreshes. */
export async function connectCommand(ctx: CommandContext, args: string[], readSecret: (stdin: CliIo['stdin']) => Promise<string>): Promise<number> {
  const { positionals, values } = parse(
    args,
    {
      issuer: { type: 'string' },
      'client-id': { type: 'string' },
      host: { type: 'string', multiple: true },
      scope: { type: 'string' },
      grant: { type: 'string' },
      'client-secret-stdin': { type: 'boolean' },
      'no-browser': { type: 'boolean' },
      'authorize-url': { type: 'string' },
      'token-url': { type: 'string' },
      'revocation-url': { type: 'string' },
      'authorize-param': { type: 'string', multiple: true },
      timeout: { type: 'string' },
      preset: { type: 'string' },
    },
    1,
  );
  const name = positionals[0]!;
  // A credential defined before (by the OpenAPI scaffold) or connected before keeps its server, hosts, scopes and grant.
  const stored = ctx.engine().credentials.oauth.status(name);
  const grant = (values.grant ?? stored?.grant ?? 'code') as OAuthGrant;
  if (!GRANTS.includes(grant)) throw new UsageError(`--grant must be code, device or client_credentials, not "${values.grant}"`);
  if (!values['client-id'] && !stored?.clientId) throw new UsageError('give --client-id ID (the client registered with the authorization server)');
  const preset = values.preset;
  if (preset !== undefined && !PRESET_NAMES.includes(preset)) throw new UsageError(`no preset "${preset}"; the presets are ${PRESET_NAMES.join(', ')}`);
  const known = preset !== undefined || stored !== undefined;
  if (!known && (!values.host || values.host.length === 0)) throw new UsageError('give at least one --host the tokens may be sent to');
  if (!known && values.issuer === undefined && values['token-url'] === undefined) throw new UsageError('give --issuer URL (discovery), or --token-url URL (and --authorize-url URL for --grant code)');
  const timeoutS = values.timeout === undefined ? 300 : Number(values.timeout);
  if (!Number.isInteger(timeoutS) || timeoutS < 1 || timeoutS > 3600) throw new UsageError(`--timeout must be a whole number of seconds from 1 to 3600, not "${values.timeout}"`);
  const authorizeParams = values['authorize-param']?.length ? authorizeParamsOf(values['authorize-param']) : undefined;
  let clientSecret: string | undefined;
  if (grant === 'client_credentials' || values['client-secret-stdin']) {
    if (ctx.io.stdin.isTTY) ctx.err(`Client secret for "${name}" (input hidden), then Enter:`);
    clientSecret = await readSecret(ctx.io.stdin);
    if (clientSecret === '') throw new UsageError('the client secret is empty; pass it on standard input');
  }
  const info = await ctx.engine().credentials.connect(
    {
      name,
      hosts: values.host ?? [],
      preset,
      issuer: values.issuer,
      authorizeUrl: values['authorize-url'],
      tokenUrl: values['token-url'],
      revocationUrl: values['revocation-url'],
      authorizeParams,
      clientId: values['client-id'] ?? '',
      scopes: (values.scope ?? '').split(/\s+/).filter(Boolean),
      grant,
    },
    {
      clientSecret,
      timeoutMs: timeoutS * 1000,
      onAuthorizeUrl: (url) => {
        ctx.err('Sign in to connect, at:');
        ctx.err(url);
        if (!values['no-browser']) openBrowser(url, ctx.io.env);
      },
      onDeviceCode: ({ verificationUri, verificationUriComplete, userCode }) => {
        ctx.err(`On any device, open ${verificationUri} and enter the code ${userCode}`);
        if (verificationUriComplete) ctx.err(verificationUriComplete);
      },
    },
  );
  ctx.out(`connected ${name}${info.account ? ` as ${info.account}` : ''}${info.scopes && info.scopes.length > 0 ? ` (scopes: ${info.scopes.join(' ')})` : ''}`);
  return EXIT_OK;
}

/** `KEY=VALUE` each; the engine refuses the parameters it sets itself. */
function authorizeParamsOf(pairs: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at < 1) throw new UsageError(`--authorize-param must be KEY=VALUE (e.g. prompt=consent), not "${pair}"`);
    params[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return params;
}

/** $BROWSER, else the platform's opener; a failure to open is not an error, the URL is printed. */
function openBrowser(url: string, env: NodeJS.ProcessEnv): void {
  const [command, args] = env.BROWSER
    ? [env.BROWSER, [url]]
    : process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true, env });
    child.on('error', () => {});
    child.unref();
  } catch {
    // The URL is on stderr for the user to open.
  }
}
