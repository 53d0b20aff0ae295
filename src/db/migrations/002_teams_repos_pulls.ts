import type { Kysely } from 'kysely';

/** Teams, members, repos, forks, branch protections, pulls and reviews. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('teams')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull().unique())
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('team_members')
    .addColumn('team_uuid', 'text', (c) => c.notNull().references('teams.uuid').onDelete('cascade'))
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('team_members_pk', ['team_uuid', 'user_uuid'])
    .execute();
  await db.schema.createIndex('team_members_user_idx').on('team_members').column('user_uuid').execute();

  await db.schema
    .createTable('repos')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('owner_kind', 'text', (c) => c.notNull())
    .addColumn('owner_uuid', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('slug', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('about', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('visibility', 'text', (c) => c.notNull())
    .addColumn('default_branch', 'text', (c) => c.notNull())
    .addColumn('public_repo_pull_policy', 'text', (c) => c.notNull())
    .addColumn('max_disk_bytes', 'bigint', (c) => c.notNull())
    .addColumn('disk_usage_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('is_archived', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('fork_of_uuid', 'text')
    .addColumn('pull_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('thread_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('repos_owner_slug_uq', ['owner_kind', 'owner_uuid', 'slug'])
    .execute();

  await db.schema
    .createTable('forks')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('source_repo_uuid', 'text', (c) => c.notNull())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().unique().references('repos.uuid').onDelete('cascade'))
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('forks_source_idx').on('forks').column('source_repo_uuid').execute();

  await db.schema
    .createTable('protections')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('branch', 'text', (c) => c.notNull())
    .addColumn('required_approvals', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('protections_repo_branch_uq', ['repo_uuid', 'branch'])
    .execute();

  await db.schema
    .createTable('protection_approvers')
    .addColumn('protection_uuid', 'text', (c) => c.notNull().references('protections.uuid').onDelete('cascade'))
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('protection_approvers_pk', ['protection_uuid', 'user_uuid'])
    .execute();

  await db.schema
    .createTable('pulls')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('source_branch', 'text', (c) => c.notNull())
    .addColumn('target_branch', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('author_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('closed_at', 'text')
    .addColumn('merged_at', 'text')
    .addColumn('merged_by_uuid', 'text')
    .addColumn('merge_commit_sha', 'text')
    .addColumn('merge_strategy', 'text')
    .addUniqueConstraint('pulls_repo_number_uq', ['repo_uuid', 'number'])
    .execute();

  await db.schema
    .createTable('reviews')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('pull_uuid', 'text', (c) => c.notNull().references('pulls.uuid').onDelete('cascade'))
    .addColumn('author_uuid', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('removed_at', 'text')
    .execute();
  await db.schema.createIndex('reviews_pull_idx').on('reviews').column('pull_uuid').execute();
}
