// Reading the Origin allow-list (src-main/mcp/httpOrigin.ts): what `--allow-origin` and the settings
// accept, in canonical form. The HTTP server applying it is httpOrigin.test.ts.
import { describe, expect, it } from 'vitest';
import { normalizeOrigin, parseAllowedOrigins } from '../../src-main/mcp/httpOrigin.ts';

describe('Origin allow-list: normalising an origin', () => {
  it.each([
    ['http://localhost:6274', 'http://localhost:6274'],
    ['HTTP://LocalHost:6274/', 'http://localhost:6274'],
    ['http://localhost:80', 'http://localhost'],
    ['https://Inspector.Example:443', 'https://inspector.example'],
    ['http://[::1]:6274', 'http://[::1]:6274'],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
  ])('%s is %s', (text, origin) => {
    expect(normalizeOrigin(text)).toEqual({ origin });
  });

  it.each([
    ['null', /null/],
    ['*', /list each origin/],
    ['localhost:6274', /not an origin/],
    ['http://localhost:6274/app', /no path/],
    ['http://localhost:6274?x=1', /no path, query/],
    ['http://localhost:6274#top', /fragment/],
    ['ftp://files.example', /not an http or https origin/],
    ['http://user@localhost:6274', /user name/],
    ['http://', /not an origin/],
    ['http://localhost:99999', /not an origin/],
  ])('%s is refused', (text, why) => {
    const parsed = normalizeOrigin(text);
    expect(parsed).toHaveProperty('error');
    expect((parsed as { error: string }).error).toMatch(why);
  });

  it('a list keeps each origin once, in canonical form', () => {
    expect(parseAllowedOrigins(['http://localhost:6274/', 'HTTP://localhost:6274', 'https://a.example'])).toEqual({ origins: ['http://localhost:6274', 'https://a.example'] });
    expect(parseAllowedOrigins(['http://ok.example', 'null'])).toHaveProperty('error');
  });
});
