import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { type Config, loadConfig } from '../src/config.ts';
import { type Database, openDatabase } from '../src/db/index.ts';
import { type Deps, type DepsOverrides, createDeps, startBackground, stopBackground } from '../src/root.ts';
import { bootstrapAdmin } from '../src/users/service.ts';

export type DialectName = 'sqlite' | 'postgres';

/** Every HTTP test runs on SQLite, and again on PostgreSQL when TEST_DATABASE_URL is set. */
export const DIALECTS: DialectName[] = process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];

export const ADMIN_TOKEN = 'weft_test_admin_token_0123456789abcdefghij';

export interface Res {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: test responses are inspected freely
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestApp {
  app: FastifyInstance;
  deps: Deps;
  dialect: DialectName;
  adminToken: string;
  req(method: string, url: string, opts?: RequestOptions): Promise<Res>;
  /** Creates a user through the API and returns its token and record. */
  user(username: string, opts?: { staff?: boolean }): Promise<{ token: string; uuid: string; username: string }>;
  close(): Promise<void>;
}

interface StoreHandle {
  url: string | null;
  dataDir: string;
  schema?: string;
  drop(): Promise<void>;
}

/** A fresh database for one test app: a temp SQLite file, or a new PostgreSQL schema. */
export async function freshStore(dialect: DialectName): Promise<StoreHandle> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-test-'));
  if (dialect === 'sqlite') {
    return { url: null, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const url = process.env.TEST_DATABASE_URL!;
  const schema = `weft_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`create schema ${schema}`);
  await client.end();
  return {
    url,
    dataDir,
    schema,
    drop: async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function testConfig(dataDir: string, overrides: Partial<Config> = {}): Config {
  // Load shedding off: a loaded CI machine must not turn test requests into 503s (test/slow-clients.test.ts turns it on).
  return {
    ...loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
      // CI runs the suite once with WEFT_FAST_PATH=off (src/db/fast-path.ts)
      WEFT_FAST_PATH: process.env.WEFT_FAST_PATH,
      // bench/search.ts's statement profile runs with WEFT_SQLITE_READERS=0 (docs/search.md)
      WEFT_SQLITE_READERS: process.env.WEFT_SQLITE_READERS,
    }),
    bootstrapAdminToken: ADMIN_TOKEN,
    ...overrides,
  };
}

/**
 * Starts an app on a fresh store. Pass `store` to start a second instance on the same
 * database (two servers behaving as one).
 */
export async function startApp(
  dialect: DialectName,
  opts: { store?: StoreHandle; config?: Partial<Config>; deps?: DepsOverrides; logStream?: { write(line: string): void } } = {},
): Promise<TestApp & { store: StoreHandle }> {
  const store = opts.store ?? (await freshStore(dialect));
  const ownsStore = opts.store === undefined;
  const config = testConfig(store.dataDir, { databaseUrl: store.url, ...opts.config });
  const database: Database = await openDatabase({
    url: store.url,
    dataDir: store.dataDir,
    schema: store.schema,
    readers: config.sqliteReaders,
  });
  const deps: Deps = createDeps(config, database, opts.deps);
  await bootstrapAdmin(deps);
  const app = await buildApp(deps, opts.logStream ? { logStream: opts.logStream } : { logger: false });
  await app.ready();
  await startBackground(deps);

  const req = async (method: string, url: string, o: RequestOptions = {}): Promise<Res> => {
    const headers: Record<string, string> = { ...o.headers };
    const token = o.token === undefined ? ADMIN_TOKEN : o.token;
    if (token !== null && headers.authorization === undefined) headers.authorization = `Bearer ${token}`;
    let payload: string | Buffer | undefined;
    if (o.rawBody !== undefined) payload = o.rawBody;
    else if (o.body !== undefined) {
      payload = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(payload === undefined ? {} : { payload }),
    });
    let body: unknown = null;
    if (res.body && String(res.headers['content-type'] ?? '').includes('json')) body = JSON.parse(res.body);
    return { status: res.statusCode, body, headers: res.headers, text: res.body };
  };

  const user = async (username: string, o: { staff?: boolean } = {}) => {
    const created = await req('POST', '/api/v1/users', {
      body: { username, email: `${username}@example.com`, is_staff: o.staff ?? false, password: 'correct horse battery' },
    });
    if (created.status !== 201) throw new Error(`creating ${username}: ${created.status} ${created.text}`);
    const tok = await req('POST', '/api/v1/api-tokens', { body: { name: 'test', username } });
    if (tok.status !== 201) throw new Error(`token for ${username}: ${tok.status} ${tok.text}`);
    return { token: tok.body.token as string, uuid: created.body.uuid as string, username };
  };

  return {
    app,
    deps,
    dialect,
    store,
    adminToken: ADMIN_TOKEN,
    req,
    user,
    close: async () => {
      await app.close();
      await stopBackground(deps);
      await database.close();
      if (ownsStore) await store.drop();
    },
  };
}

/** Asserts the error envelope: exactly {error, detail} (+ conflict_paths). */
export function isErrorBody(body: unknown, code?: string): boolean {
  if (!body || typeof body !== 'object') return false;
  const keys = Object.keys(body);
  const b = body as { error?: unknown; detail?: unknown };
  return (
    typeof b.error === 'string' &&
    typeof b.detail === 'string' &&
    keys.every((k) => ['error', 'detail', 'conflict_paths'].includes(k)) &&
    (code === undefined || b.error === code)
  );
}
