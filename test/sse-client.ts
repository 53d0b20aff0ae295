import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestApp } from './helpers.ts';

/** One parsed server-sent event frame. */
export interface Frame {
  id?: string;
  event?: string;
  data: string;
  retry?: string;
}

/** A real-socket SSE client for tests: parses frames as they arrive; always bounded in time. */
export interface SseClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The raw text received so far. */
  raw(): string;
  frames: Frame[];
  comments: string[];
  /** Resolves when `predicate` holds for the frames (checked on every frame), or rejects after `ms`. */
  waitFor(predicate: (frames: Frame[]) => boolean, ms?: number): Promise<void>;
  /** Resolves when the server ends the stream, or rejects after `ms`. */
  ended(ms?: number): Promise<void>;
  isEnded(): boolean;
  close(): void;
  /** Stops reading from the socket (a slow client). */
  pause(): void;
}

/** Listens on 127.0.0.1 (once per app) and returns the base URL. */
export async function listen(t: TestApp): Promise<string> {
  const address = t.app.server.address() as AddressInfo | null;
  if (address && typeof address === 'object') return `http://127.0.0.1:${address.port}`;
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

export function openSse(
  base: string,
  path: string,
  token: string | null,
  headers: Record<string, string> = {},
): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      `${base}${path}`,
      {
        headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), accept: 'text/event-stream', ...headers },
        agent: false,
      },
      (res) => {
        let text = '';
        let pending = '';
        let ended = false;
        const frames: Frame[] = [];
        const comments: string[] = [];
        const waiters = new Set<() => void>();
        const notify = () => {
          for (const w of [...waiters]) w();
        };
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          pending += chunk;
          let cut: number;
          while ((cut = pending.indexOf('\n\n')) >= 0) {
            const block = pending.slice(0, cut);
            pending = pending.slice(cut + 2);
            const frame: Frame = { data: '' };
            const data: string[] = [];
            let isEvent = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) {
                comments.push(line);
                continue;
              }
              const colon = line.indexOf(':');
              const field = colon < 0 ? line : line.slice(0, colon);
              let value = colon < 0 ? '' : line.slice(colon + 1);
              if (value.startsWith(' ')) value = value.slice(1);
              if (field === 'data') {
                data.push(value);
                isEvent = true;
              } else if (field === 'id') frame.id = value;
              else if (field === 'event') frame.event = value;
              else if (field === 'retry') frame.retry = value;
            }
            frame.data = data.join('\n');
            if (isEvent || frame.retry !== undefined) frames.push(frame);
          }
          notify();
        });
        const finish = () => {
          ended = true;
          notify();
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
        const client: SseClient = {
          status: res.statusCode ?? 0,
          headers: res.headers,
          raw: () => text,
          frames,
          comments,
          isEnded: () => ended,
          waitFor: (predicate, ms = 10_000) =>
            new Promise<void>((ok, fail) => {
              if (predicate(frames)) return ok();
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(new Error(`SSE wait timed out after ${ms} ms with ${frames.length} frames`));
              }, ms);
              const check = () => {
                if (predicate(frames)) {
                  clearTimeout(timer);
                  waiters.delete(check);
                  ok();
                } else if (ended) {
                  clearTimeout(timer);
                  waiters.delete(check);
                  fail(new Error(`SSE stream ended with ${frames.length} frames before the wait was met`));
                }
              };
              waiters.add(check);
            }),
          ended: (ms = 10_000) =>
            new Promise<void>((ok, fail) => {
              if (ended) return ok();
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(new Error(`SSE stream still open after ${ms} ms`));
              }, ms);
              const check = () => {
                if (ended) {
                  clearTimeout(timer);
                  waiters.delete(check);
                  ok();
                }
              };
              waiters.add(check);
            }),
          close: () => {
            req.destroy();
            res.destroy();
          },
          pause: () => res.pause(),
        };
        resolve(client);
      },
    );
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy());
  });
}

/** The event frames (not the retry frame) parsed as event JSON. */
export const eventFrames = (frames: Frame[]) => frames.filter((f) => f.event !== undefined);
