import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body's bytes as received. */
  bytes: Buffer;
}

export type VendorHandler = (req: SeenRequest, res: import('node:http').ServerResponse) => void;

/** A real HTTP server on 127.0.0.1 standing in for a vendor API; records what it received. */
export async function vendorServer(handler: VendorHandler): Promise<{ port: number; seen: SeenRequest[]; server: Server }> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const bytes = Buffer.concat(chunks);
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: bytes.toString(), bytes };
      seen.push(entry);
      handler(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as AddressInfo).port, seen, server };
}
