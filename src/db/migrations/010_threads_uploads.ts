import type { Kysely } from 'kysely';

/** Threads, replies with their versions, uploads, upload groups and attachments. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('threads')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('author_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('reply_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('removed_at', 'text')
    .addUniqueConstraint('threads_repo_number_uq', ['repo_uuid', 'number'])
    .execute();

  await db.schema
    .createTable('replies')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('thread_uuid', 'text', (c) => c.notNull().references('threads.uuid').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('author_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('links', 'text', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('removed_at', 'text')
    .addUniqueConstraint('replies_thread_number_uq', ['thread_uuid', 'number'])
    .execute();

  await db.schema
    .createTable('reply_versions')
    .addColumn('reply_uuid', 'text', (c) => c.notNull().references('replies.uuid').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('links', 'text', (c) => c.notNull())
    .addColumn('editor_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('reply_versions_pk', ['reply_uuid', 'version'])
    .execute();

  await db.schema
    .createTable('upload_groups')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('name', 'text')
    .addColumn('created_by_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('removed_at', 'text')
    .execute();

  await db.schema
    .createTable('uploads')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('group_uuid', 'text', (c) => c.references('upload_groups.uuid').onDelete('set null'))
    .addColumn('filename', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_by_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('removed_at', 'text')
    .execute();
  await db.schema.createIndex('uploads_repo_idx').on('uploads').columns(['repo_uuid', 'created_at']).execute();
  await db.schema.createIndex('uploads_group_idx').on('uploads').column('group_uuid').execute();
  await db.schema.createIndex('uploads_sha_idx').on('uploads').column('sha256').execute();

  await db.schema
    .createTable('attachments')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('upload_uuid', 'text', (c) => c.notNull().references('uploads.uuid').onDelete('cascade'))
    .addColumn('group_uuid', 'text')
    .addColumn('target_kind', 'text', (c) => c.notNull())
    .addColumn('target_uuid', 'text', (c) => c.notNull())
    .addColumn('created_by_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('attachments_target_upload_uq', ['target_kind', 'target_uuid', 'upload_uuid'])
    .execute();
}
