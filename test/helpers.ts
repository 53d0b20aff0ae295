import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
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

/*
 * Migrated templates. Every test app starts on a migrated store; running the migrations from
 * scratch took 0.3–0.5 s an app on SQLite and 1.2–4 s on PostgreSQL (a few hundred apps a run).
 * So the migrations run once per version of src/db (its files' hash), into a template kept under
 * the system temp directory and shared by the test processes: a SQLite file that each store
 * copies, and for PostgreSQL the `pg_dump` of a migrated schema that each store replays under its
 * own schema name. The app still runs `migrateToLatest` on it, which finds every migration
 * applied. Without `pg_dump` each PostgreSQL store is migrated from scratch, as before. Stores
 * made without `migrated` (test/jobs.test.ts, test/seams.test.ts, the servers the crash and
 * two-process tests spawn) are still migrated from scratch, on both databases.
 */
const TEMPLATES = join(tmpdir(), 'weft-test-templates');
const SCHEMA_MARK = '__weft_template_schema__';

let templateKeyMemo: string | null = null;
function templateKey(): string {
  if (templateKeyMemo) return templateKeyMemo;
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else hash.update(`${path}\0`).update(readFileSync(path)).update('\0');
    }
  };
  walk(join(import.meta.dirname, '..', 'src', 'db'));
  templateKeyMemo = hash.digest('hex').slice(0, 16);
  return templateKeyMemo;
}

/** Writes a template file whole or not at all (test processes race to make the same one). */
function keep(file: string, write: (tmp: string) => void): void {
  mkdirSync(TEMPLATES, { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  write(tmp);
  renameSync(tmp, file);
}

let sqliteTemplate: Promise<string> | null = null;
function sqliteTemplateFile(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const file = join(TEMPLATES, `${templateKey()}.sqlite`);
    if (existsSync(file)) return file;
    const dir = mkdtempSync(join(tmpdir(), 'weft-template-'));
    try {
      const database = await openDatabase({ url: null, dataDir: dir, readers: 0 });
      await database.close();
      // one self-contained file, whatever the closed connections left in the WAL
      const handle = new SQLite(join(dir, 'weft.sqlite'));
      keep(file, (tmp) => handle.prepare('vacuum into ?').run(tmp));
      handle.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return file;
  })();
  return sqliteTemplate;
}

let pgTemplate: Promise<string | null> | null = null;
/** The replayable dump of a migrated schema, with SCHEMA_MARK for its name; null without pg_dump. */
function pgTemplateScript(url: string): Promise<string | null> {
  pgTemplate ??= (async () => {
    const file = join(TEMPLATES, `${templateKey()}.pg.sql`);
    if (existsSync(file)) return readFileSync(file, 'utf8');
    const schema = `weft_tpl_${randomBytes(6).toString('hex')}`;
    const dir = mkdtempSync(join(tmpdir(), 'weft-template-'));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`create schema ${schema}`);
      const database = await openDatabase({ url, dataDir: dir, schema });
      await database.close();
      let dump: string;
      try {
        dump = execFileSync('pg_dump', ['--no-owner', '--no-privileges', '--inserts', '--schema', schema, `--dbname=${url}`], {
          encoding: 'utf8',
          maxBuffer: 64 * 1024 * 1024,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
      } catch {
        return null;
      }
      // psql's meta-commands (`\restrict`) are not SQL
      const script = dump
        .split('\n')
        .filter((l) => !l.startsWith('\\'))
        .join('\n')
        .replaceAll(schema, SCHEMA_MARK);
      if (!script.includes(`CREATE SCHEMA ${SCHEMA_MARK};`)) return null;
      keep(file, (tmp) => writeFileSync(tmp, script));
      return script;
    } finally {
      await client.query(`drop schema if exists ${schema} cascade`);
      await client.end();
      rmSync(dir, { recursive: true, force: true });
    }
  })();
  return pgTemplate;
}

/**
 * A fresh database for one test app: a temp SQLite file, or a new PostgreSQL schema. Empty, or
 * with `migrated`, a copy of the migrated template (the store every test app starts on).
 */
export async function freshStore(dialect: DialectName, opts: { migrated?: boolean } = {}): Promise<StoreHandle> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-test-'));
  if (dialect === 'sqlite') {
    if (opts.migrated) {
      const file = join(dataDir, 'weft.sqlite');
      copyFileSync(await sqliteTemplateFile(), file);
      chmodSync(file, 0o600);
    }
    return { url: null, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const url = process.env.TEST_DATABASE_URL!;
  const schema = `weft_t_${randomBytes(6).toString('hex')}`;
  const script = opts.migrated ? await pgTemplateScript(url) : null;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(script ? script.replaceAll(SCHEMA_MARK, schema) : `create schema ${schema}`);
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
  const store = opts.store ?? (await freshStore(dialect, { migrated: true }));
  const ownsStore = opts.store === undefined;
  const config = testConfig(store.dataDir, { databaseUrl: store.url, ...opts.config });
  const database: Database = await openDatabase({
    url: store.url,
    dataDir: store.dataDir,
    schema: store.schema,
    readers: config.sqliteReaders,
    hotConnections: config.pgHotConnections,
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
