import { randomUUID } from 'node:crypto';
import type { TestApp } from './helpers.ts';

/**
 * Direct database seeding for test set-up only (the behaviour under test always goes through
 * HTTP). Lets a domain's tests build teams and repos without depending on other routes.
 */
const now = () => new Date().toISOString();

export async function seedTeam(
  t: TestApp,
  slug: string,
  members: Array<{ uuid: string; role: 'owner' | 'maintainer' | 'member' | 'reader' }> = [],
  opts: { is_active?: boolean } = {},
): Promise<{ uuid: string; slug: string }> {
  const uuid = randomUUID();
  await t.deps.db
    .insertInto('teams')
    .values({ uuid, name: slug, slug, is_active: opts.is_active === false ? 0 : 1, created_at: now(), updated_at: now() })
    .execute();
  for (const m of members) {
    await t.deps.db
      .insertInto('team_members')
      .values({ team_uuid: uuid, user_uuid: m.uuid, role: m.role, created_at: now() })
      .execute();
  }
  return { uuid, slug };
}

export async function seedRepo(
  t: TestApp,
  owner: { kind: 'team' | 'user'; uuid: string },
  slug: string,
  opts: { visibility?: 'public' | 'private'; is_archived?: boolean; public_repo_pull_policy?: string; created_by?: string } = {},
): Promise<{ uuid: string; slug: string }> {
  const uuid = randomUUID();
  await t.deps.db
    .insertInto('repos')
    .values({
      uuid,
      owner_kind: owner.kind,
      owner_uuid: owner.uuid,
      name: slug,
      slug,
      description: null,
      about: '',
      visibility: opts.visibility ?? 'private',
      default_branch: 'main',
      public_repo_pull_policy: opts.public_repo_pull_policy ?? 'any',
      max_disk_bytes: 1024 ** 3,
      disk_usage_bytes: 0,
      is_active: 1,
      is_archived: opts.is_archived ? 1 : 0,
      fork_of_uuid: null,
      pull_seq: 0,
      thread_seq: 0,
      created_by_uuid: opts.created_by ?? owner.uuid,
      created_at: now(),
      updated_at: now(),
    })
    .execute();
  return { uuid, slug };
}
