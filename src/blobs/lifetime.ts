import { randomUUID } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Deps } from '../deps.ts';
import { FsBlobStore } from './store.ts';
import { withTransaction } from '../db/tx.ts';
import { nowIso } from '../time.ts';

/**
 * When an upload's blob may be deleted (README "Storage lifetimes and crash recovery"). Blobs
 * are content-addressed, so two uploads of the same bytes share one file; a blob is deleted only
 * when no active upload names it and no *hold* does. A hold is a pending reference written (and
 * committed) just before `put` publishes the bytes at their address, and removed in the
 * transaction that writes the upload rows, or when the upload is refused. Every decision to
 * delete runs in a transaction that takes the blob's lock (a PostgreSQL advisory lock on its
 * hash; SQLite's single writer) and deletes the file inside it, and so does writing a hold: a
 * twin's hold is either seen (the file stays) or written after the file is gone (its own
 * rename then publishes the bytes again). So a refused upload can never delete the bytes of an
 * identical upload about to commit.
 */

/** Namespace of the PostgreSQL advisory locks on blob hashes. */
const BLOB_LOCK_CLASS = 7_401_031;
/** How often the sweep runs. */
const SWEEP_EVERY_MS = 60 * 60 * 1000;
/** A blob file younger than this is never swept (its upload may be committing). */
const SWEEP_GRACE_MS = 10 * 60 * 1000;

type LifetimeDeps = Pick<Deps, 'db' | 'dialect' | 'blobs' | 'config'>;

async function lockBlob(db: Deps['db'], dialect: Deps['dialect'], sha256: string): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(${BLOB_LOCK_CLASS}, hashtext(${sha256}))`.execute(db);
}

/** Writes a hold on `sha256` (before its bytes are published); returns its id. */
export async function holdBlob(deps: LifetimeDeps, sha256: string): Promise<string> {
  const id = randomUUID();
  await withTransaction(deps.db, async ({ trx }) => {
    await lockBlob(trx, deps.dialect, sha256);
    await trx.insertInto('blob_holds').values({ id, sha256, created_at: nowIso() }).execute();
  });
  return id;
}

/**
 * Drops the given holds, then deletes each blob that nothing references any more (no active
 * upload, no hold). Used when an upload is refused, removed, or its repo deleted.
 */
export async function releaseBlobs(deps: LifetimeDeps, blobs: Array<{ sha256: string; hold?: string }>): Promise<void> {
  for (const blob of blobs) {
    await withTransaction(deps.db, async ({ trx }) => {
      await lockBlob(trx, deps.dialect, blob.sha256);
      if (blob.hold) await trx.deleteFrom('blob_holds').where('id', '=', blob.hold).execute();
      const used = await trx
        .selectFrom('uploads')
        .select('uuid')
        .where('sha256', '=', blob.sha256)
        .where('status', '=', 'active')
        .executeTakeFirst();
      if (used) return;
      // Git LFS objects (docs/lfs.md) live in the same store, under their oid
      const lfs = await trx.selectFrom('lfs_objects').select('oid').where('oid', '=', blob.sha256).executeTakeFirst();
      if (lfs) return;
      const asset = await trx.selectFrom('release_assets').select('uuid').where('sha256', '=', blob.sha256).executeTakeFirst();
      if (asset) return;
      const held = await trx.selectFrom('blob_holds').select('id').where('sha256', '=', blob.sha256).executeTakeFirst();
      if (held) return;
      await deps.blobs.delete(blob.sha256);
    });
  }
}

/**
 * Deletes what crashes and removals left: holds older than the longest upload, blob files older
 * than the grace period that nothing references, temporary files older than the longest upload.
 * Returns the number of blob files deleted.
 */
export async function sweepBlobs(deps: LifetimeDeps): Promise<number> {
  if (!(deps.blobs instanceof FsBlobStore)) return 0;
  const root = deps.blobs.root;
  const longest = deps.config.transferTimeoutMs + 60_000;
  const oldHolds = new Date(Date.now() - longest).toISOString();
  await deps.db.deleteFrom('blob_holds').where('created_at', '<', oldHolds).execute();
  if (deps.blobs instanceof FsBlobStore) await deps.blobs.sweepTemporary(longest);
  let deleted = 0;
  const cutoff = Date.now() - SWEEP_GRACE_MS;
  for (const first of await names(root)) {
    if (!/^[0-9a-f]{2}$/.test(first)) continue;
    for (const second of await names(join(root, first))) {
      for (const sha of await names(join(root, first, second))) {
        if (!/^[0-9a-f]{64}$/.test(sha)) continue;
        const info = await stat(join(root, first, second, sha)).catch(() => null);
        if (!info || info.mtimeMs > cutoff) continue;
        await releaseBlobs(deps, [{ sha256: sha }]);
        if ((await deps.blobs.size(sha)) === null) deleted++;
      }
    }
  }
  return deleted;
}

async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

const sweepTimers = new WeakMap<object, NodeJS.Timeout>();

/** Sweeps at start-up (in the background) and then every hour. */
export function startBlobSweep(deps: LifetimeDeps): void {
  const run = () => void sweepBlobs(deps).catch((err) => console.error('weft: sweeping blobs failed:', err));
  run();
  const timer = setInterval(run, SWEEP_EVERY_MS);
  timer.unref();
  sweepTimers.set(deps, timer);
}

export function stopBlobSweep(deps: object): void {
  clearInterval(sweepTimers.get(deps));
  sweepTimers.delete(deps);
}
