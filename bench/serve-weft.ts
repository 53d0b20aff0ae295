import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { Database } from '../src/db/index.ts';
import type { Deps } from '../src/root.ts';

/**
 * The server side of a benchmark child: Weft built in-process with buildApp on a fresh temp
 * SQLite database (or, with BENCH_DATABASE_URL=postgres://…, a PostgreSQL schema of its own),
 * a bootstrap admin token and logging off, listening on a free loopback port. `stop` closes it
 * and removes the database. The app modules are imported here, so the parent process (the load
 * generator) never loads them. `prepare` runs before the app listens (bench/run.ts seeds there);
 * what it returns comes back as `prepared` (it also gets the app's `deps`). `env` adds settings
 * (as environment variables) to the defaults.
 */
export async function serveWeft<T = undefined>(
  token: string,
  prepare?: (app: FastifyInstance, database: Database, deps: Deps) => Promise<T>,
  env: Record<string, string> = {},
): Promise<{ port: number; dialect: string; database: Database; prepared: T; stop(): Promise<void> }> {
  const { buildApp } = await import('../src/app.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { openDatabase } = await import('../src/db/index.ts');
  const { createDeps } = await import('../src/root.ts');
  const { bootstrapAdmin } = await import('../src/users/service.ts');
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-'));
  const pgUrl = process.env.BENCH_DATABASE_URL || null;
  const schema = pgUrl ? `weft_bench_${randomBytes(6).toString('hex')}` : undefined;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: pgUrl! });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  if (schema) await admin(`create schema ${schema}`);
  const config = {
    ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env }),
    databaseUrl: pgUrl,
    bootstrapAdminToken: token,
  };
  const database = await openDatabase({ url: pgUrl, dataDir, schema });
  const deps = createDeps(config, database);
  await bootstrapAdmin(deps);
  const app = await buildApp(deps, { logger: false });
  const prepared = (prepare ? await prepare(app, database, deps) : undefined) as T;
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    port: (app.server.address() as AddressInfo).port,
    dialect: database.dialect,
    database,
    prepared,
    async stop() {
      await app.close();
      await database.close();
      if (schema) await admin(`drop schema ${schema} cascade`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
