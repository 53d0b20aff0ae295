import { randomUUID } from 'node:crypto';
import { seedRepo, seedTeam } from './fixtures.ts';
import { seedCommit } from './git-fixtures.ts';
import type { TestApp } from './helpers.ts';

/**
 * A shared world for the pulls, reviews and merge tests: a team with one user per role, team
 * and user repos (private and public), and a staff user distinct from the bootstrap admin.
 * Protections are seeded straight into the tables (set-up only; their routes are another module).
 */
export type { Person } from './common.ts';
import type { Person } from './common.ts';

export interface World {
  owner: Person;
  maintainer: Person;
  member: Person;
  reader: Person;
  outsider: Person;
  staff: Person;
  /** owns the user repos */
  solo: Person;
  team: { uuid: string; slug: string };
  /** repo base paths under /api/v1 */
  teamPrivate: RepoHandle;
  teamPublic: RepoHandle;
  userPrivate: RepoHandle;
  userPublic: RepoHandle;
}

export interface RepoHandle {
  uuid: string;
  base: string;
}

let counter = 0;
/** A unique suffix so one app can hold several worlds. */
const suffix = () => `${++counter}${randomUUID().slice(0, 4)}`;

export async function buildWorld(t: TestApp): Promise<World> {
  const s = suffix();
  const [owner, maintainer, member, reader, outsider, solo] = await Promise.all(
    ['own', 'mnt', 'mem', 'rdr', 'out', 'solo'].map((r) => t.user(`${r}${s}`)),
  );
  const staff = await t.user(`stf${s}`, { staff: true });
  const team = await seedTeam(t, `team${s}`, [
    { uuid: owner!.uuid, role: 'owner' },
    { uuid: maintainer!.uuid, role: 'maintainer' },
    { uuid: member!.uuid, role: 'member' },
    { uuid: reader!.uuid, role: 'reader' },
  ]);
  const repo = async (kind: 'team' | 'user', visibility: 'public' | 'private'): Promise<RepoHandle> => {
    const slug = `r-${visibility}`;
    const ownerRef = kind === 'team' ? { kind, uuid: team.uuid } : { kind, uuid: solo!.uuid };
    const created = await seedRepo(t, ownerRef, slug, { visibility });
    const base = kind === 'team' ? `/api/v1/teams/${team.slug}/repos/${slug}` : `/api/v1/users/${solo!.username}/repos/${slug}`;
    return { uuid: created.uuid, base };
  };
  return {
    owner: owner!,
    maintainer: maintainer!,
    member: member!,
    reader: reader!,
    outsider: outsider!,
    staff,
    solo: solo!,
    team,
    teamPrivate: await repo('team', 'private'),
    teamPublic: await repo('team', 'public'),
    userPrivate: await repo('user', 'private'),
    userPublic: await repo('user', 'public'),
  };
}

let branchCounter = 0;

/**
 * Opens a pull through the API (as the admin unless a token is given) and returns its JSON. Its
 * source branch first gets a commit (on the target's tip), so merging it lands something; `empty`
 * opens it before any push.
 */
export async function openPull(
  t: TestApp,
  base: string,
  opts: { token?: string; target?: string; title?: string; empty?: boolean } = {},
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely
): Promise<any> {
  const source = `feature/f${++branchCounter}`;
  const target = opts.target ?? 'main';
  if (!opts.empty) {
    const repo = await t.req('GET', base);
    if (repo.status !== 200) throw new Error(`reading ${base}: ${repo.status} ${repo.text}`);
    await seedCommit(t, repo.body.uuid, source, { onto: target });
  }
  const res = await t.req('POST', `${base}/pulls`, {
    token: opts.token,
    body: { title: opts.title ?? 'A change', body: 'Details', source_branch: source, target_branch: target },
  });
  if (res.status !== 201) throw new Error(`opening a pull: ${res.status} ${res.text}`);
  return res.body;
}

/** Seeds a branch protection (and its approvers) directly in the tables. */
export async function seedProtection(
  t: TestApp,
  repoUuid: string,
  branch: string,
  opts: { required?: number; approvers?: string[]; createdAt?: string } = {},
): Promise<string> {
  const uuid = randomUUID();
  const at = opts.createdAt ?? new Date().toISOString();
  await t.deps.db
    .insertInto('protections')
    .values({ uuid, repo_uuid: repoUuid, branch, required_approvals: opts.required ?? 1, created_at: at, updated_at: at })
    .execute();
  for (const userUuid of opts.approvers ?? []) {
    await t.deps.db
      .insertInto('protection_approvers')
      .values({ protection_uuid: uuid, user_uuid: userUuid, created_at: new Date().toISOString() })
      .execute();
  }
  return uuid;
}

export async function setRepoFlags(t: TestApp, repoUuid: string, flags: { is_archived?: 0 | 1 }): Promise<void> {
  await t.deps.db.updateTable('repos').set(flags).where('uuid', '=', repoUuid).execute();
}

export async function setTeamActive(t: TestApp, teamUuid: string, active: boolean): Promise<void> {
  await t.deps.db
    .updateTable('teams')
    .set({ is_active: active ? 1 : 0 })
    .where('uuid', '=', teamUuid)
    .execute();
}

/** Events of a scope as the given caller (the admin by default). */
export { eventsInScope as eventsOf } from './common.ts';

export const PULL_KEYS = [
  'base_sha',
  'head_sha',
  'uuid',
  'repo_uuid',
  'number',
  'title',
  'body',
  'source_branch',
  'source_repo',
  'target_branch',
  'status',
  'author_username',
  'author_uuid',
  'created_at',
  'updated_at',
  'closed_at',
  'merged_at',
  'merged_by_username',
  'merge_commit_sha',
  'merge_strategy',
  'draft',
  'labels',
  'assignees',
  'milestone',
  'requested_reviewers',
  'auto_merge',
].sort();

export const REVIEW_KEYS = [
  'uuid',
  'pull_uuid',
  'pull_number',
  'status',
  'body',
  'author_username',
  'author_uuid',
  'created_at',
  'removed_at',
  'commit_sha',
].sort();
