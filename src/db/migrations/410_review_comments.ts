import type { Kysely } from 'kysely';

/**
 * Code review on lines (README "Code review"): comments anchored to a pull's diff, collected by a
 * pending review until it is submitted. A comment keeps the commit and line it was made on
 * (`commit_sha`, `original_line`, `original_start_line`) and the text of its hunk (`hunk`); `line`,
 * `start_line` and `position_outdated` follow the pull's head, computed for `anchored_head`.
 * The first comment of a conversation (`in_reply_to` null) carries its resolution. `pending` is 1
 * while the comment's review is pending (visible to its author only).
 * Reviews gain the head they were made on (`commit_sha`: "changes since your last review"); pulls
 * the head and target tip they were merged from (their diff after merge); protections
 * `require_conversation_resolution`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('review_comments')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('pull_uuid', 'text', (c) => c.notNull().references('pulls.uuid').onDelete('cascade'))
    .addColumn('review_uuid', 'text', (c) => c.references('reviews.uuid').onDelete('cascade'))
    .addColumn('author_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('side', 'text', (c) => c.notNull())
    .addColumn('line', 'integer', (c) => c.notNull())
    .addColumn('start_line', 'integer')
    .addColumn('start_side', 'text')
    .addColumn('original_line', 'integer', (c) => c.notNull())
    .addColumn('original_start_line', 'integer')
    .addColumn('commit_sha', 'text', (c) => c.notNull())
    .addColumn('hunk', 'text', (c) => c.notNull())
    .addColumn('anchored_head', 'text', (c) => c.notNull())
    .addColumn('position_outdated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('in_reply_to', 'text')
    .addColumn('thread_uuid', 'text', (c) => c.notNull())
    .addColumn('resolved', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('resolved_by_uuid', 'text', (c) => c.references('users.uuid'))
    .addColumn('pending', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('review_comments_pull_idx')
    .on('review_comments')
    .columns(['pull_uuid', 'path', 'line', 'created_at', 'uuid'])
    .execute();
  await db.schema
    .createIndex('review_comments_thread_idx')
    .on('review_comments')
    .columns(['thread_uuid', 'created_at'])
    .execute();
  await db.schema.createIndex('review_comments_review_idx').on('review_comments').column('review_uuid').execute();
  await db.schema.alterTable('reviews').addColumn('commit_sha', 'text').execute();
  await db.schema.alterTable('pulls').addColumn('merged_head_sha', 'text').execute();
  await db.schema.alterTable('pulls').addColumn('merged_base_sha', 'text').execute();
  await db.schema
    .alterTable('protections')
    .addColumn('require_conversation_resolution', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
