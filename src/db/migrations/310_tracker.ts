import type { Kysely } from 'kysely';

/**
 * The issue tracker (README "Issue tracker"): a thread's state, lock and milestone; a pull's draft
 * flag and milestone; labels of a repo or a team; milestones; the labels and assignees of threads
 * and pulls (one row each, so adding one never overwrites a concurrent addition); review requests.
 * Each list filter reads an index in the list's own order (README "Performance").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('milestones')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('title_key', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('due_on', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('closed_at', 'text')
    .addUniqueConstraint('milestones_repo_number_uq', ['repo_uuid', 'number'])
    .addUniqueConstraint('milestones_repo_title_uq', ['repo_uuid', 'title_key'])
    .execute();

  await db.schema
    .alterTable('threads')
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('open'))
    .execute();
  for (const [name, type] of [
    ['state_reason', 'text'],
    ['closed_at', 'text'],
    ['closed_by_uuid', 'text'],
    ['closed_by_pull_number', 'integer'],
    ['closed_by_commit_sha', 'text'],
  ] as const) {
    await db.schema.alterTable('threads').addColumn(name, type).execute();
  }
  await db.schema
    .alterTable('threads')
    .addColumn('locked', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('threads')
    .addColumn('milestone_uuid', 'text', (c) => c.references('milestones.uuid').onDelete('set null'))
    .execute();
  await db.schema
    .alterTable('pulls')
    .addColumn('draft', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('pulls')
    .addColumn('milestone_uuid', 'text', (c) => c.references('milestones.uuid').onDelete('set null'))
    .execute();

  await db.schema
    .createTable('labels')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.references('repos.uuid').onDelete('cascade'))
    .addColumn('team_uuid', 'text', (c) => c.references('teams.uuid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('name_key', 'text', (c) => c.notNull())
    .addColumn('color', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('labels_repo_name_uq').unique().on('labels').columns(['repo_uuid', 'name_key']).execute();
  await db.schema.createIndex('labels_team_name_uq').unique().on('labels').columns(['team_uuid', 'name_key']).execute();

  // item: a thread's or a pull's uuid
  await db.schema
    .createTable('item_labels')
    .addColumn('item_uuid', 'text', (c) => c.notNull())
    .addColumn('label_uuid', 'text', (c) => c.notNull().references('labels.uuid').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('item_labels_pk', ['item_uuid', 'label_uuid'])
    .execute();
  await db.schema.createIndex('item_labels_label_idx').on('item_labels').columns(['label_uuid', 'item_uuid']).execute();
  await db.schema
    .createTable('item_assignees')
    .addColumn('item_uuid', 'text', (c) => c.notNull())
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('item_assignees_pk', ['item_uuid', 'user_uuid'])
    .execute();
  await db.schema.createIndex('item_assignees_user_idx').on('item_assignees').columns(['user_uuid', 'item_uuid']).execute();
  await db.schema
    .createTable('review_requests')
    .addColumn('pull_uuid', 'text', (c) => c.notNull().references('pulls.uuid').onDelete('cascade'))
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('review_requests_pk', ['pull_uuid', 'user_uuid'])
    .execute();
  await db.schema.createIndex('review_requests_user_idx').on('review_requests').columns(['user_uuid', 'pull_uuid']).execute();

  const INDEXES: Array<[string, string, string[]]> = [
    ['threads_state_created_idx', 'threads', ['repo_uuid', 'state', 'created_at', 'number']],
    ['threads_state_updated_idx', 'threads', ['repo_uuid', 'state', 'updated_at', 'number']],
    ['threads_created_idx', 'threads', ['repo_uuid', 'created_at', 'number']],
    ['threads_author_idx', 'threads', ['repo_uuid', 'author_uuid', 'state', 'created_at', 'number']],
    ['threads_milestone_idx', 'threads', ['milestone_uuid', 'state', 'created_at', 'number']],
    ['pulls_created_idx', 'pulls', ['repo_uuid', 'created_at', 'number']],
    ['pulls_status_created_idx', 'pulls', ['repo_uuid', 'status', 'created_at', 'number']],
    ['pulls_author_idx', 'pulls', ['repo_uuid', 'author_uuid', 'created_at', 'number']],
    ['pulls_milestone_idx', 'pulls', ['milestone_uuid', 'status', 'created_at', 'number']],
  ];
  for (const [name, table, columns] of INDEXES) await db.schema.createIndex(name).on(table).columns(columns).execute();
}
