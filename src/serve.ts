/** The server process (started by main.ts, after it has set up the start-up's heap limits). */
import { startupDone } from './startup-heap.ts';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/index.ts';
import type { FastifyBaseLogger } from 'fastify';
import { type Deps, createDeps, startBackground, stopBackground } from './root.ts';
import { startMetricsServer } from './http/metrics.ts';
import { drainAndClose } from './http/shutdown.ts';
import type { SshServer } from './ssh/server.ts';
import { firstRunCode, isFirstRun } from './web/first-run-state.ts';
import { bootstrapAdmin } from './users/service.ts';

/** DATA_DIR must be a directory the server can create and write; else one clear line, exit 2. */
function assertDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    console.error(
      `weft: configuration error: DATA_DIR ${dir} is not a directory this process can create and write (${code}); ` +
        'create it with write access for this user, or set DATA_DIR to one',
    );
    process.exit(2);
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`weft: configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  assertDataDir(config.dataDir);
  const database = await openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    readers: config.sqliteReaders,
    hotConnections: config.pgHotConnections,
  });
  const deps = createDeps(config, database);
  // /readyz answers 503 until the background work runs (started once the server listens)
  const readiness = { ready: false };
  const app = await buildApp(deps, { readiness });
  if (await bootstrapAdmin(deps)) app.log.info({ username: config.bootstrapAdminUsername }, 'bootstrap admin created');
  await firstRunHint(deps, app.log);
  const metricsServer = typeof config.metrics === 'number' ? await startMetricsServer(config.metricsHost, config.metrics) : null;

  // Graceful shutdown: stop accepting, let in-flight requests finish (their responses carry
  // `Connection: close`, see app.ts), close event streams (onClose hooks) and the background
  // workers, then the database. Past SHUTDOWN_TIMEOUT_MS the remaining connections are cut.
  let sshServer: SshServer | null = null;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => {
      app.log.warn({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out: closing the remaining connections');
      app.server.closeAllConnections();
      setTimeout(() => process.exit(1), 500).unref();
    }, config.shutdownTimeoutMs);
    timer.unref();
    try {
      metricsServer?.close();
      await sshServer?.close();
      await drainAndClose(app, Math.min(2000, config.shutdownTimeoutMs / 2));
      await stopBackground(deps);
      await database.close();
    } catch (err) {
      app.log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  // Listen first, so /healthz answers as soon as the routes are ready; the job workers, timers,
  // event listeners and crash recovery start right after, and /readyz says ready once they run.
  await app.listen({ port: config.port, host: config.host });
  startupDone();
  await startBackground(deps);
  // git over SSH (README "Git over SSH"); SSH_PORT=0 turns it off. Its module (and ssh2) loads here,
  // before /readyz says ready, so a host key that cannot be used fails the start, not a later one.
  if (config.sshPort !== 0 && !stopping) {
    const { startSshServer } = await import('./ssh/server.ts');
    sshServer = await startSshServer(deps);
    app.log.info({ sshPort: sshServer.port }, 'git over SSH is serving');
  }
  readiness.ready = !stopping;
  app.log.info({ dialect: database.dialect, publicUrl: config.publicUrl }, 'weft is serving');
}

/** First run: no staff user yet, so say how to make one (and get a token). */
async function firstRunHint(deps: Deps, log: FastifyBaseLogger): Promise<void> {
  const staff = await deps.db.selectFrom('users').select('uuid').where('is_staff', '=', 1).limit(1).executeTakeFirst();
  if (staff) {
    // a staff user without a password (the bootstrap admin): the pages' one-time set-up link
    if (await isFirstRun(deps)) {
      log.warn(
        { setupUrl: `${deps.config.publicUrl}/setup?code=${firstRunCode()}` },
        'no staff user can sign in to the pages yet: open setupUrl (one use, this process only) or /setup with the console token',
      );
    }
    return;
  }
  log.warn(
    'no staff user exists yet: create one, which prints its API token, with `npx weft create-user admin --email admin@example.com --staff` (or start once with BOOTSTRAP_ADMIN_TOKEN set)',
  );
}

main().catch((err) => {
  // A clear one-line reason (database unreachable, DATA_DIR not writable, port in use...);
  // the stack only when asked for with LOG_LEVEL=debug or trace.
  const verbose = ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '');
  const code = (err as { code?: string })?.code;
  console.error(`weft: failed to start: ${err instanceof Error ? err.message : String(err)}${code ? ` (${code})` : ''}`);
  if (verbose) console.error(err);
  process.exit(1);
});
