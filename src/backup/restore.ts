import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, open, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import tar from 'tar-stream';
import { openDatabase } from '../db/index.ts';
import { type BackupFormat, FORMAT, type ManifestEntry } from './backup.ts';
import { ENCRYPTED_MAGIC, decryptStream } from './crypto.ts';
import { sqliteFileOf } from './database.ts';

/** A backup that cannot be read: damaged, cut short, the wrong passphrase (exit 1). */
export class BackupInvalidError extends Error {}
/** A restore refused before anything was written: a non-empty target (exit 2). */
export class RestoreRefusedError extends Error {}

/** An error of the entry's consumer, not of the archive. */
class UseError extends Error {
  constructor(override readonly cause: unknown) {
    super('entry consumer failed');
  }
}

interface Entry {
  name: string;
  size: number;
  mode: number;
  body: Readable;
}

async function isEncrypted(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(ENCRYPTED_MAGIC.length);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return bytesRead === head.length && head.equals(ENCRYPTED_MAGIC);
  } finally {
    await handle.close();
  }
}

/** Every entry of the archive, in order; `use` must consume each body. */
async function readArchive(file: string, passphrase: string | undefined, use: (e: Entry) => Promise<void>): Promise<void> {
  if (!existsSync(file)) throw new BackupInvalidError(`no such file: ${file}`);
  const encrypted = await isEncrypted(file);
  if (encrypted && !passphrase) throw new BackupInvalidError('the archive is encrypted: set WEFT_BACKUP_PASSPHRASE');
  const extract = tar.extract();
  const stages: NodeJS.ReadWriteStream[] = [];
  if (encrypted) stages.push(decryptStream(passphrase!));
  stages.push(createGunzip());
  const feeding = pipeline(createReadStream(file), ...(stages as [Transform]), extract);
  feeding.catch(() => undefined);
  try {
    for await (const entry of extract) {
      const h = entry.header;
      if (h.type !== 'file') {
        entry.resume();
        continue;
      }
      try {
        await use({ name: h.name, size: h.size ?? 0, mode: h.mode ?? 0o600, body: entry as unknown as Readable });
      } catch (err) {
        throw new UseError(err);
      }
    }
    await feeding;
  } catch (err) {
    if (err instanceof UseError) {
      feeding.catch(() => undefined);
      extract.destroy();
      throw err.cause;
    }
    const feedErr = await feeding.then(
      () => null,
      (e: unknown) => e,
    );
    const cause = (feedErr ?? err) as Error;
    if (cause instanceof BackupInvalidError || cause instanceof RestoreRefusedError) throw cause;
    if (err instanceof Error && !(feedErr instanceof Error) && !/tar|gzip|header|unexpected end|incorrect/i.test(err.message))
      throw err;
    throw new BackupInvalidError(`the archive is damaged: ${cause.message}`);
  }
}

async function hashOf(body: Readable): Promise<{ size: number; sha256: string; data?: Buffer }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of body) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

export interface VerifyResult {
  format: BackupFormat;
  entries: number;
  bytes: number;
}

/** Reads the whole archive and checks every entry against the manifest (and the manifest's completeness). */
export async function verifyBackup(file: string, passphrase?: string): Promise<VerifyResult> {
  const seen = new Map<string, ManifestEntry>();
  let format: BackupFormat | null = null;
  let manifest: { format: number; entries: Record<string, ManifestEntry> } | null = null;
  await readArchive(file, passphrase, async (e) => {
    if (manifest) throw new BackupInvalidError(`an entry after the manifest: ${e.name}`);
    if (e.name === 'manifest.json' || e.name === 'format.json') {
      const chunks: Buffer[] = [];
      for await (const c of e.body) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks);
      try {
        if (e.name === 'format.json') {
          format = JSON.parse(text.toString('utf8')) as BackupFormat;
          seen.set(e.name, { size: text.length, sha256: createHash('sha256').update(text).digest('hex') });
        } else manifest = JSON.parse(text.toString('utf8'));
      } catch {
        throw new BackupInvalidError(`${e.name} is not JSON`);
      }
      return;
    }
    if (seen.has(e.name)) throw new BackupInvalidError(`a duplicate entry: ${e.name}`);
    seen.set(e.name, await hashOf(e.body));
  });
  const m = manifest as { format: number; entries: Record<string, ManifestEntry> } | null;
  const f = format as BackupFormat | null;
  if (!f) throw new BackupInvalidError('the archive has no format.json: not a Weft backup');
  if (!m) throw new BackupInvalidError('the archive has no manifest: it is cut short');
  if (f.format !== FORMAT || m.format !== FORMAT) throw new BackupInvalidError(`unknown backup format ${f.format}`);
  let bytes = 0;
  for (const [name, want] of Object.entries(m.entries)) {
    const got = seen.get(name);
    if (!got) throw new BackupInvalidError(`missing from the archive: ${name}`);
    if (got.size !== want.size || got.sha256 !== want.sha256) throw new BackupInvalidError(`checksum mismatch: ${name}`);
    bytes += got.size;
  }
  for (const name of seen.keys()) if (!m.entries[name]) throw new BackupInvalidError(`not in the manifest: ${name}`);
  return { format: f, entries: seen.size, bytes };
}

function safePath(name: string): string {
  const parts = name.split('/');
  if (name.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..')) {
    throw new BackupInvalidError(`an unsafe path in the archive: ${name}`);
  }
  return name;
}

async function assertEmptyTargets(databaseUrl: string | null, dataDir: string): Promise<void> {
  if (existsSync(dataDir) && (!statSync(dataDir).isDirectory() || readdirSync(dataDir).length > 0)) {
    throw new RestoreRefusedError(`DATA_DIR ${dataDir} is not empty: restore fills an empty data directory only`);
  }
  const file = sqliteFileOf(databaseUrl, dataDir);
  if (file !== null) {
    if (existsSync(file) && statSync(file).size > 0) {
      throw new RestoreRefusedError(`the database ${file} is not empty: restore fills an empty database only`);
    }
    return;
  }
  const client = new pg.Client({ connectionString: databaseUrl!, application_name: 'weft-restore' });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      `select count(*) as n from information_schema.tables where table_schema = current_schema()`,
    );
    if (Number(rows[0]?.n ?? 0) > 0) {
      throw new RestoreRefusedError(
        'the database (DATABASE_URL) is not empty: restore fills an empty database only (no tables in its schema)',
      );
    }
  } finally {
    await client.end();
  }
}

export interface RestoreOptions {
  file: string;
  passphrase?: string;
  databaseUrl: string | null;
  dataDir: string;
}

export interface RestoreSummary {
  rows: number;
  files: number;
  format: BackupFormat;
}

type AnyDb = Kysely<Record<string, Record<string, unknown>>>;

/**
 * Fills an empty DATA_DIR and an empty database (either dialect) from an archive: checks it
 * whole first (verifyBackup), then creates the schema (migrations) and inserts the rows table by
 * table in one transaction, and writes the repos, blobs and files.
 */
export async function restoreBackup(opts: RestoreOptions): Promise<RestoreSummary> {
  await assertEmptyTargets(opts.databaseUrl, opts.dataDir);
  const checked = await verifyBackup(opts.file, opts.passphrase);
  try {
    return await restoreChecked(opts, checked.format);
  } catch (err) {
    // the targets were empty: leave them so, and a second attempt is not refused
    const entries = existsSync(opts.dataDir) ? await readdir(opts.dataDir) : [];
    for (const name of entries) await rm(join(opts.dataDir, name), { recursive: true, force: true });
    if (sqliteFileOf(opts.databaseUrl, opts.dataDir) === null && err instanceof Error) {
      err.message += ' (the tables created in the database must be dropped before another attempt)';
    }
    throw err;
  }
}

async function restoreChecked(opts: RestoreOptions, format: BackupFormat): Promise<RestoreSummary> {
  const database = await openDatabase({ url: opts.databaseUrl, dataDir: opts.dataDir });
  const db = database.db as unknown as AnyDb;
  let rows = 0;
  let files = 0;
  try {
    const known = new Set((await sql<{ name: string }>`select name from weft_migrations`.execute(db)).rows.map((r) => r.name));
    const unknown = format.migrations.filter((m) => !known.has(m));
    if (unknown.length)
      throw new BackupInvalidError(
        `the backup comes from a newer Weft (migrations ${unknown.join(', ')}): restore it with that version`,
      );
    const columns = new Map<string, Set<string>>();
    for (const t of await database.db.introspection.getTables()) columns.set(t.name, new Set(t.columns.map((c) => c.name)));
    if (database.sqlite) database.sqlite.pragma('foreign_keys = OFF');
    const cleared = new Set<string>();
    await db.transaction().execute(async (trx) => {
      if (database.dialect === 'postgres') {
        const su = await sql<{ su: boolean }>`select rolsuper as su from pg_roles where rolname = current_user`.execute(trx);
        if (su.rows[0]?.su) await sql`set local session_replication_role = replica`.execute(trx);
      }
      await readArchive(opts.file, opts.passphrase, async (e) => {
        const name = safePath(e.name);
        if (name.startsWith('db/')) {
          const table = name.split('/')[1]!;
          const chunks: Buffer[] = [];
          for await (const c of e.body) chunks.push(c as Buffer);
          const cols = columns.get(table);
          if (!cols || table === 'weft_migrations') return;
          // the migrations seed a few rows (settings, counters): the backup's replace them
          if (!cleared.has(table)) {
            cleared.add(table);
            await trx.deleteFrom(table).execute();
          }
          const parsed = Buffer.concat(chunks)
            .toString('utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => {
              const row = JSON.parse(line) as Record<string, unknown>;
              for (const k of Object.keys(row)) if (!cols.has(k)) delete row[k];
              return row;
            });
          if (parsed.length === 0) return;
          const per = Math.max(1, Math.min(500, Math.floor(30_000 / Math.max(1, Object.keys(parsed[0]!).length))));
          for (let i = 0; i < parsed.length; i += per) {
            await trx
              .insertInto(table)
              .values(parsed.slice(i, i + per))
              .execute();
          }
          rows += parsed.length;
          return;
        }
        let target: string | null = null;
        if (name.startsWith('git/') || name.startsWith('blobs/')) target = join(opts.dataDir, name);
        else if (name.startsWith('files/')) target = join(opts.dataDir, name.slice('files/'.length));
        if (target === null) {
          e.body.resume();
          await new Promise((r) => e.body.once('end', r));
          return;
        }
        await mkdir(dirname(target), { recursive: true, mode: 0o700 });
        const out = await open(target, 'wx', e.mode & 0o777 || 0o600);
        try {
          for await (const chunk of e.body) await out.write(chunk as Buffer);
        } finally {
          await out.close();
        }
        files++;
      });
      if (database.dialect === 'postgres') {
        const serials = await sql<{ table_name: string; column_name: string }>`
          select table_name, column_name from information_schema.columns
           where table_schema = current_schema() and column_default like 'nextval%'`.execute(trx);
        for (const s of serials.rows) {
          const t = `"${s.table_name.replace(/"/g, '""')}"`;
          const c = `"${s.column_name.replace(/"/g, '""')}"`;
          await sql
            .raw(
              `select setval(pg_get_serial_sequence('${t}', '${s.column_name.replace(/'/g, "''")}'), coalesce((select max(${c}) from ${t}), 0) + 1, false)`,
            )
            .execute(trx);
        }
      }
    });
    if (database.sqlite) database.sqlite.pragma('foreign_keys = ON');
  } finally {
    await database.close();
  }
  await relinkAlternates(join(opts.dataDir, 'git'));
  return { rows, files, format };
}

/**
 * Makes each restored repo whole: the empty directories git needs, and forks' alternates (they
 * borrow their source's objects by absolute path) pointed at the restored DATA_DIR.
 */
async function relinkAlternates(gitRoot: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(gitRoot);
  } catch {
    return;
  }
  for (const name of names) {
    // a tar holds files only: the directories git needs, empty in a new repo
    for (const sub of ['refs/heads', 'refs/tags', 'objects/info', 'objects/pack']) {
      await mkdir(join(gitRoot, name, sub), { recursive: true, mode: 0o755 });
    }
    const file = join(gitRoot, name, 'objects', 'info', 'alternates');
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      continue;
    }
    const lines = text
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const m = /([0-9a-f-]{36}\.git)\/objects\/?$/.exec(line);
        return m ? join(gitRoot, m[1]!, 'objects') : line;
      });
    await writeFile(file, `${lines.join('\n')}\n`);
  }
}
