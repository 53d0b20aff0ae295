import net from 'node:net';
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** True once a graceful shutdown began: every response closes its connection. */
    draining: boolean;
    /** Steps run as soon as a graceful shutdown begins (ending event streams, ...). */
    drainHooks: Array<() => void | Promise<void>>;
  }
}

export function installDrainFlag(app: FastifyInstance): void {
  app.decorate('draining', false);
  app.decorate('drainHooks', []);
  app.addHook('preClose', async () => {
    app.draining = true;
  });
  // the responses' `Connection: close` while draining is set by app.ts's one onSend hook
}

/**
 * Graceful shutdown without resetting keep-alive connections:
 * 0. run the drain hooks (long-lived responses such as event streams end, their clients reconnect
 *    to another instance);
 * 1. stop accepting new connections, but keep the open ones (http.Server.close would also cut
 *    the idle keep-alive connections, and a client sending on one at that moment gets ECONNRESET);
 * 2. answer every request still arriving on them with `Connection: close`, so clients hang up
 *    after their response, for up to `graceMs` or until every connection is gone;
 * 3. close the connections still idle, let the in-flight requests finish, run the onClose hooks
 *    (event streams, ...) through `app.close()`.
 */
export async function drainAndClose(app: FastifyInstance, graceMs: number): Promise<void> {
  app.draining = true;
  for (const hook of app.drainHooks) await hook();
  const server = app.server;
  await new Promise<void>((resolve) => {
    net.Server.prototype.close.call(server, () => resolve());
    const deadline = Date.now() + graceMs;
    const poll = setInterval(() => {
      server.getConnections((err, count) => {
        if (err || count === 0 || Date.now() >= deadline) {
          clearInterval(poll);
          resolve();
        }
      });
    }, 50);
    poll.unref();
  });
  server.closeIdleConnections();
  await app.close();
}
