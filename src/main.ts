import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/index.ts';
import { createDeps, startBackground, stopBackground } from './deps.ts';
import { bootstrapAdmin } from './users/service.ts';

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
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir });
  const deps = createDeps(config, database);
  const app = await buildApp(deps);
  if (await bootstrapAdmin(deps)) app.log.info({ username: config.bootstrapAdminUsername }, 'bootstrap admin created');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const timer = setTimeout(() => process.exit(1), 15_000);
    timer.unref();
    await app.close();
    await stopBackground(deps);
    await database.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await startBackground(deps);
  await app.listen({ port: config.port, host: config.host });
  app.log.info({ dialect: database.dialect, publicUrl: config.publicUrl }, 'weft is serving');
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
