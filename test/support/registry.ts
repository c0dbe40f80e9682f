// A real npm registry stand-in on 127.0.0.1: packuments and tarballs of packages the test builds,
// served over HTTP exactly where npm asks for them (GET /NAME, GET /NAME/-/FILE.tgz).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { findNpm } from '../../src-main/engine/functions/packages/npm.ts';
import { vendorServer } from './vendor.ts';

export interface FixturePackage {
  name: string;
  version: string;
  /** File path inside the package → its text; package.json is made from the other fields. */
  files: Record<string, string>;
  dependencies?: Record<string, string>;
  scripts?: Record<string, string>;
  /** Extra package.json fields (main, exports, browser…). */
  manifest?: Record<string, unknown>;
}

export interface FixtureRegistry {
  /** http://127.0.0.1:PORT/ — what npm_config_registry is set to. */
  url: string;
  /** The requests npm made, by path. */
  requests: string[];
  /** The sha512 integrity npm pins for `name@version`. */
  integrity(name: string, version: string): string;
  /** Serves other bytes than the published tarball for `name@version` (the packument keeps the real integrity). */
  tamper(name: string, version: string): void;
  /** Publishes one more package (or version). */
  publish(pkg: FixturePackage): void;
  /** Stops answering: every connection is refused from now on. */
  close(): Promise<void>;
}

/** Starts the registry with `packages` published. */
export async function fixtureRegistry(packages: FixturePackage[]): Promise<FixtureRegistry> {
  const tarballs = new Map<string, Buffer>();
  const tampered = new Set<string>();
  const docs = new Map<string, { name: string; 'dist-tags': { latest: string }; versions: Record<string, unknown> }>();
  const requests: string[] = [];
  let base = '';
  const { port, server } = await vendorServer((req, res) => {
    const path = decodeURIComponent(req.url.split('?')[0]!);
    requests.push(path);
    const tarball = /^\/(.+)\/-\/([^/]+\.tgz)$/.exec(path);
    if (tarball) {
      const key = `${tarball[1]}/-/${tarball[2]}`;
      const bytes = tarballs.get(key);
      if (!bytes) return void res.writeHead(404).end('{"error":"not found"}');
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(tampered.has(key) ? Buffer.concat([bytes, Buffer.from('tampered')]) : bytes);
      return;
    }
    const doc = docs.get(path.slice(1));
    if (!doc) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not found"}');
    // As registry.npmjs.org does: npm's cache keeps a packument only with validators.
    const body = JSON.stringify(doc);
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300', etag: `"${createHash('sha1').update(body).digest('hex')}"`, 'last-modified': new Date().toUTCString() }).end(body);
  });
  base = `http://127.0.0.1:${port}/`;
  const fileOf = (name: string, version: string): string => `${name}/-/${name.split('/').pop()}-${version}.tgz`;
  const publish = (pkg: FixturePackage): void => {
    const manifest = { name: pkg.name, version: pkg.version, ...(pkg.dependencies ? { dependencies: pkg.dependencies } : {}), ...(pkg.scripts ? { scripts: pkg.scripts } : {}), ...pkg.manifest };
    const bytes = gzipSync(tar({ 'package.json': JSON.stringify(manifest, null, 2), ...pkg.files }));
    const file = fileOf(pkg.name, pkg.version);
    tarballs.set(file, bytes);
    const doc = docs.get(pkg.name) ?? { name: pkg.name, 'dist-tags': { latest: pkg.version }, versions: {} };
    doc['dist-tags'].latest = pkg.version;
    doc.versions[pkg.version] = {
      ...manifest,
      dist: {
        tarball: `${base}${file}`,
        integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
        shasum: createHash('sha1').update(bytes).digest('hex'),
      },
    };
    docs.set(pkg.name, doc);
  };
  for (const pkg of packages) publish(pkg);
  return {
    url: base,
    requests,
    integrity: (name, version) => `sha512-${createHash('sha512').update(tarballs.get(fileOf(name, version))!).digest('base64')}`,
    tamper: (name, version) => void tampered.add(fileOf(name, version)),
    publish,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A ustar archive of `files` under package/, as npm packs them. */
function tar(files: Record<string, string>): Buffer {
  const blocks: Buffer[] = [];
  for (const [path, text] of Object.entries(files)) {
    const body = Buffer.from(text);
    const header = Buffer.alloc(512);
    header.write(`package/${path}`, 0, 100);
    header.write('0000644\0', 100);
    header.write('0000000\0', 108);
    header.write('0000000\0', 116);
    header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
    header.write(`${Math.floor(Date.UTC(2020, 0, 1) / 1000).toString(8).padStart(11, '0')}\0`, 136);
    header.write('        ', 148);
    header.write('0', 156);
    header.write('ustar\0', 257);
    header.write('00', 263);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** The npm registry this machine's npm config names, and whether it answers from here (for skipIf). */
export async function machineRegistry(): Promise<{ url: string; reachable: boolean }> {
  const npm = findNpm(process.env);
  const url = npm ? execFileSync(npm.command, [...npm.args, 'config', 'get', 'registry'], { encoding: 'utf8', timeout: 20_000 }).trim() : 'https://registry.npmjs.org/';
  const reachable = await fetch(new URL('ms', url), { signal: AbortSignal.timeout(8000) }).then(
    (r) => r.ok,
    () => false,
  );
  return { url, reachable };
}
