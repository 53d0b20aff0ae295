/** SSH key access (README "Git over SSH"): keys live under /user, so each is its owner's alone. */
import type { Kysely, Selectable } from 'kysely';
import { type RowLock, withRowLock } from '../db/tx.ts';
import type { DB, SshKeysTable } from '../db/types.ts';
import { notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** One of the viewer's own keys; anyone else's (staff included) is 404. With `lock`, the row is locked. */
export async function requireOwnSshKey(
  db: Kysely<DB>,
  viewer: Viewer,
  uuid: string,
  lock?: RowLock,
): Promise<Selectable<SshKeysTable>> {
  const query = db.selectFrom('ssh_keys').selectAll().where('uuid', '=', uuid).where('user_uuid', '=', viewer.uuid);
  const row = await withRowLock(db, query, lock).executeTakeFirst();
  if (!row) throw notFound('SSH key');
  return row;
}
