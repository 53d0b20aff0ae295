import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdtemp, open, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { weftVersion } from '../version.ts';
import { encryptStream } from './crypto.ts';
import { type Snapshot, withSnapshot } from './database.ts';

/**
 * `weft backup`: one gzip'd tar (encrypted when a passphrase is given) of
 *   format.json                     version, dialect, migrations, table order
 *   db/<table>/<n>.ndjson           the database snapshot's rows, in parts of at most 4 MiB
 *   git/<uuid>.git/...              every repository, copied after the snapshot
 *   blobs/<ab>/<cd>/<sha256>        the blobs the snapshot references (columns named sha256)
 *   files/...                       the rest of DATA_DIR worth keeping (SSH host keys, secrets)
 *   manifest.json                   size and SHA-256 of every entry above (last)
 * written to FILE.partial and renamed into place when complete.
 */
export const FORMAT = 1;
const PART_BYTES = 4 * 1024 * 1024;
/** small files are read whole (refs, keys); larger ones are streamed with the size they had when opened */
const SMALL_FILE = 1024 * 1024;
/** DATA_DIR entries that are not copied as files: the database, git and blobs (handled apart), spools */
const SKIPPED_TOP = new Set([
  'weft.sqlite',
  'weft.sqlite-wal',
  'weft.sqlite-shm',
  'weft.sqlite-journal',
  'git',
  'blobs',
  'git-pushes',
  'git-hooks',
]);

export interface ManifestEntry {
  size: number;
  sha256: string;
}

export interface BackupFormat {
  format: number;
  weft_version: string;
  created_at: string;
  dialect: string;
  migrations: string[];
  tables: string[];
  encrypted: boolean;
}

export interface BackupSummary {
  entries: number;
  bytes: number;
  repos: number;
  blobs: number;
  rows: number;
}

class ArchiveWriter {
  readonly pack = tar.pack();
  readonly manifest: Record<string, ManifestEntry> = {};
  bytes = 0;

  /** Adds one entry of `size` bytes read from `body`; the hash is checked as the bytes pass. */
  async add(name: string, size: number, body: Readable | Buffer, mode = 0o600): Promise<void> {
    const hash = createHash('sha256');
    let seen = 0;
    const entry = this.pack.entry({ name, size, mode, mtime: new Date(0) });
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        const room = size - seen;
        const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
        seen += part.length;
        hash.update(part);
        cb(null, part);
      },
    });
    await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, meter, entry);
    if (seen !== size) throw new Error(`${name} changed size while being read (${seen} of ${size} bytes)`);
    this.manifest[name] = { size, sha256: hash.digest('hex') };
    this.bytes += size;
  }

  async addBuffer(name: string, body: Buffer, mode = 0o600): Promise<void> {
    await this.add(name, body.length, body, mode);
  }

  /** A file as it is now: read whole when small, else streamed up to the size it had when opened. */
  async addFile(name: string, path: string): Promise<boolean> {
    let handle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // gone meanwhile (a ref deleted, a loose object packed)
      throw err;
    }
    try {
      const st = await handle.stat();
      if (!st.isFile()) return false;
      const mode = st.mode & 0o777;
      if (st.size <= SMALL_FILE) {
        await this.addBuffer(name, await handle.readFile(), mode);
      } else {
        await this.add(name, st.size, createReadStream('', { fd: handle, autoClose: false, start: 0, end: st.size - 1 }), mode);
      }
      return true;
    } finally {
      await handle.close();
    }
  }
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
}

/** Every file under `dir` (relative paths), depth first, sorted; `skip` filters names. */
async function* walk(dir: string, rel = '', skip: (name: string, rel: string) => boolean = () => false): AsyncGenerator<string> {
  for (const name of await listDir(join(dir, rel))) {
    const r = rel ? `${rel}/${name}` : name;
    if (skip(name, r)) continue;
    let st;
    try {
      st = await lstat(join(dir, r));
    } catch {
      continue;
    }
    if (st.isDirectory()) yield* walk(dir, r, skip);
    else if (st.isFile()) yield r;
  }
}

const gitSkip = (name: string): boolean =>
  name.endsWith('.lock') || name.startsWith('incoming-') || name.startsWith('tmp_') || name.startsWith('tmp-');

/**
 * One repository, copied so that every ref copied has its objects: loose refs first, then
 * packed-refs (pack-refs writes it before deleting the loose refs), the rest of the metadata, then
 * loose objects, then packs (a repack writes its pack before deleting the loose objects it holds).
 */
async function addRepo(w: ArchiveWriter, root: string, name: string): Promise<void> {
  const dir = join(root, name);
  const put = (rel: string) => w.addFile(`git/${name}/${rel}`, join(dir, rel));
  for await (const rel of walk(dir, 'refs', gitSkip)) await put(rel);
  await put('packed-refs');
  for (const top of await listDir(dir)) {
    if (top === 'refs' || top === 'objects' || top === 'packed-refs' || gitSkip(top)) continue;
    for await (const rel of (await lstat(join(dir, top))).isDirectory() ? walk(dir, top, gitSkip) : [top]) await put(rel);
  }
  const objects = await listDir(join(dir, 'objects'));
  for (const sub of objects.filter((n) => /^[0-9a-f]{2}$/.test(n))) {
    for await (const rel of walk(dir, `objects/${sub}`, gitSkip)) await put(rel);
  }
  // .idx after its .pack: a reader never meets an index without its pack
  const packs = (await listDir(join(dir, 'objects', 'pack'))).filter((n) => !gitSkip(n));
  const rank = (n: string) => (n.endsWith('.pack') ? 0 : n.endsWith('.idx') ? 2 : 1);
  for (const n of packs.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))) await put(`objects/pack/${n}`);
  for (const sub of objects.filter((n) => !/^[0-9a-f]{2}$/.test(n) && n !== 'pack' && !gitSkip(n))) {
    const st = await lstat(join(dir, 'objects', sub)).catch(() => null);
    if (st?.isDirectory()) for await (const rel of walk(dir, `objects/${sub}`, gitSkip)) await put(rel);
    else if (st?.isFile()) await put(`objects/${sub}`);
  }
}

async function addDatabase(w: ArchiveWriter, snap: Snapshot, blobs: Set<string>): Promise<number> {
  let rows = 0;
  for (const table of snap.tables) {
    let part = 0;
    let chunks: Buffer[] = [];
    let bytes = 0;
    const flush = async () => {
      if (chunks.length === 0) return;
      part++;
      await w.addBuffer(`db/${table}/${String(part).padStart(6, '0')}.ndjson`, Buffer.concat(chunks));
      chunks = [];
      bytes = 0;
    };
    for await (const batch of snap.rows(table)) {
      for (const row of batch) {
        const sha = row.sha256;
        if (typeof sha === 'string' && /^[0-9a-f]{64}$/.test(sha)) blobs.add(sha);
        const line = Buffer.from(`${JSON.stringify(row)}\n`);
        chunks.push(line);
        bytes += line.length;
        rows++;
      }
      if (bytes >= PART_BYTES) await flush();
    }
    await flush();
  }
  return rows;
}

export interface BackupOptions {
  databaseUrl: string | null;
  dataDir: string;
  out: string;
  passphrase?: string;
}

export async function createBackup(opts: BackupOptions): Promise<BackupSummary> {
  const partial = `${opts.out}.partial`;
  const tmp = await mkdtemp(join(dirname(opts.out), '.weft-backup-'));
  const w = new ArchiveWriter();
  const stages: NodeJS.ReadWriteStream[] = [createGzip({ level: 1 })];
  if (opts.passphrase) stages.push(encryptStream(opts.passphrase));
  const written = pipeline(w.pack, ...(stages as [Transform]), createWriteStream(partial, { mode: 0o600 }));
  written.catch(() => undefined);
  const summary: BackupSummary = { entries: 0, bytes: 0, repos: 0, blobs: 0, rows: 0 };
  try {
    const blobs = new Set<string>();
    await withSnapshot(
      opts.databaseUrl,
      opts.dataDir,
      join(tmp, `snapshot-${randomBytes(4).toString('hex')}.sqlite`),
      async (snap) => {
        const format: BackupFormat = {
          format: FORMAT,
          weft_version: weftVersion(),
          created_at: new Date().toISOString(),
          dialect: snap.dialect,
          migrations: snap.migrations,
          tables: snap.tables,
          encrypted: Boolean(opts.passphrase),
        };
        await w.addBuffer('format.json', Buffer.from(`${JSON.stringify(format, null, 2)}\n`));
        summary.rows = await addDatabase(w, snap, blobs);
      },
    );
    // after the snapshot: every repo, with refs at least as new as the database's
    const gitRoot = join(opts.dataDir, 'git');
    for (const name of await listDir(gitRoot)) {
      if (!name.endsWith('.git')) continue;
      await addRepo(w, gitRoot, name);
      summary.repos++;
    }
    for (const sha of [...blobs].sort()) {
      const rel = `${sha.slice(0, 2)}/${sha.slice(2, 4)}/${sha}`;
      if (await w.addFile(`blobs/${rel}`, join(opts.dataDir, 'blobs', rel))) summary.blobs++;
    }
    for await (const rel of walk(
      opts.dataDir,
      '',
      (name, r) => (r === name && SKIPPED_TOP.has(name)) || name.startsWith('.weft-backup-'),
    )) {
      await w.addFile(`files/${rel}`, join(opts.dataDir, rel));
    }
    summary.entries = Object.keys(w.manifest).length;
    summary.bytes = w.bytes;
    await w.addBuffer('manifest.json', Buffer.from(`${JSON.stringify({ format: FORMAT, entries: w.manifest })}\n`));
    w.pack.finalize();
    await written;
    await rename(partial, opts.out);
    return summary;
  } catch (err) {
    w.pack.destroy();
    await written.catch(() => undefined);
    await rm(partial, { force: true });
    throw err;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
