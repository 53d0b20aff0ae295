import type { Kysely } from 'kysely';

/**
 * A repo's pulls page (README "Performance") reads its page's keys (pull uuids, by number, with
 * or without a status) from an index, skipping `offset` entries. The unique (repo_uuid, number)
 * index and (repo_uuid, status, number) did not hold the uuid, so on PostgreSQL every skipped
 * entry was also a heap fetch (an index scan, not an index-only one). These hold it.
 */
const INDEXES: Array<[name: string, columns: string[]]> = [
  ['pulls_repo_keys_idx', ['repo_uuid', 'number', 'uuid']],
  ['pulls_repo_status_keys_idx', ['repo_uuid', 'status', 'number', 'uuid']],
];

/** Superseded: a prefix of one above (the unique (repo_uuid, number) constraint stays). */
const DROPPED = ['pulls_repo_status_idx'];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, columns] of INDEXES) await db.schema.createIndex(name).on('pulls').columns(columns).execute();
  for (const name of DROPPED) await db.schema.dropIndex(name).execute();
}
