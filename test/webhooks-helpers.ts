import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitUntil } from './common.ts';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  json: { hook_uuid: string; event: { id: string | null; kind: string; payload: Record<string, unknown>; scopes: string[] } };
}

export type Responder = (req: Received, res: ServerResponse) => void;

/** A real webhook receiver on 127.0.0.1 that records every request and answers through `respond`. */
export class Receiver {
  readonly received: Received[] = [];
  respond: Responder = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  private server: Server | null = null;
  port = 0;

  /** `keepAliveMs`: how long the receiver keeps an idle connection open (1 s by default). */
  async start(opts: { keepAliveMs?: number } = {}): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: Received['json'];
        try {
          json = JSON.parse(body) as Received['json'];
        } catch {
          json = { hook_uuid: '', event: { id: null, kind: '', payload: {}, scopes: [] } };
        }
        const r: Received = { headers: req.headers, body, json };
        this.received.push(r);
        this.respond(r, res);
      });
    });
    this.server.keepAliveTimeout = opts.keepAliveMs ?? 1000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Requests that arrived for one hook. */
  forHook(uuid: string): Received[] {
    return this.received.filter((r) => r.headers['x-weft-hook'] === uuid);
  }

  async waitFor(pred: () => boolean, ms = 20_000, what = 'condition'): Promise<void> {
    await waitUntil(pred, ms, what);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** Tests of hooks wait on deliveries with the shared helper. */
export { waitUntil };

/** A receiver that takes every request and never answers (until closed). */
export class HungReceiver {
  private server: Server | null = null;
  port = 0;
  requests = 0;

  async start(): Promise<this> {
    this.server = createServer(() => {
      this.requests++;
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path = '/hung'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
