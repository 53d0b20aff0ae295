import { randomUUID } from 'node:crypto';
import type { TestApp } from './helpers.ts';

/**
 * Direct database seeding for test set-up only (the behaviour under test always goes through
 * HTTP). Lets a domain's tests build teams and repos without depending on other routes.
 */
let last = 0;
/**
 * A distinct, increasing timestamp for each seeded row (never before the real time), so
 * oldest-first lists follow the seeding order without sleeping between seeds.
 */
export function distinctNow(): string {
  last = Math.max(Date.now(), last + 1);
  return new Date(last).toISOString();
}

export async function seedTeam(
  t: TestApp,
  slug: string,
  members: Array<{ uuid: string; role: 'owner' | 'maintainer' | 'member' | 'reader' }> = [],
  opts: { is_active?: boolean; createdAt?: string } = {},
): Promise<{ uuid: string; slug: string }> {
  const uuid = randomUUID();
  const createdAt = opts.createdAt ?? distinctNow();
  await t.deps.db
    .insertInto('teams')
    .values({ uuid, name: slug, slug, is_active: opts.is_active === false ? 0 : 1, created_at: createdAt, updated_at: createdAt })
    .execute();
  for (const m of members) {
    await t.deps.db
      .insertInto('team_members')
      .values({ team_uuid: uuid, user_uuid: m.uuid, role: m.role, created_at: distinctNow(), team_created_at: createdAt })
      .execute();
  }
  return { uuid, slug };
}

export async function seedRepo(
  t: TestApp,
  owner: { kind: 'team' | 'user'; uuid: string },
  slug: string,
  opts: {
    visibility?: 'public' | 'private';
    is_archived?: boolean;
    public_repo_pull_policy?: string;
    created_by?: string;
    /** distinct and increasing by default (see distinctNow) */
    createdAt?: string;
  } = {},
): Promise<{ uuid: string; slug: string }> {
  const uuid = randomUUID();
  const createdAt = opts.createdAt ?? distinctNow();
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
      created_at: createdAt,
      updated_at: createdAt,
    })
    .execute();
  return { uuid, slug };
}
