/**
 * References and closing keywords (README "Issue tracker"). `recordReferences` turns the
 * references in a source's text (src/references/parse.ts) into `thread-referenced` /
 * `pull-referenced` events, once per (source, target); `closeByKeywords` closes the threads a
 * merged pull or a pushed commit names with a closing keyword. Both run inside the write's
 * transaction. A reference event is about its source (events/kinds.ts), so a reader who cannot
 * read the source never sees it: not in the timeline, not through events.
 */
import type { Kysely } from 'kysely';
import { levelAtLeast, type RepoRow, storedUserRepoLevel } from '../access/index.ts';
import type { TxContext } from '../core/command.ts';
import type { DB } from '../db/types.ts';
import { actorOf } from '../events/service.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import { closingReferences, findReferences, type Reference } from './parse.ts';

export interface ReferenceSource {
  kind: 'thread' | 'pull' | 'reply' | 'review' | 'commit';
  /** unique per source: the thread's, pull's, reply's or review's uuid, or `<repo uuid>:<sha>` */
  key: string;
  repo: RepoRow;
  /** the thread's or pull's number (a reply's thread, a review's pull), or null for a commit */
  number: number | null;
  sha?: string;
  title: string;
  /** the thread or pull the text belongs to: never its own reference */
  selfUuid?: string;
}

type Target = { kind: 'thread' | 'pull'; repo: RepoRow; uuid: string; number: number };

async function fullName(db: Kysely<DB>, repo: RepoRow): Promise<string> {
  const owner =
    repo.owner_kind === 'team'
      ? await db.selectFrom('teams').select('slug as name').where('uuid', '=', repo.owner_uuid).executeTakeFirst()
      : await db.selectFrom('users').select('username as name').where('uuid', '=', repo.owner_uuid).executeTakeFirst();
  return `${owner?.name ?? '-'}/${repo.slug}`;
}

/** The repo a reference names (its own repo when it names none); null when there is none. */
async function targetRepo(db: Kysely<DB>, from: RepoRow, ref: Reference): Promise<RepoRow | null> {
  if (ref.owner === null) return from;
  const team = await db.selectFrom('teams').select('uuid').where('slug', '=', ref.owner).executeTakeFirst();
  const owner = team
    ? { kind: 'team', uuid: team.uuid }
    : await db
        .selectFrom('users')
        .select('uuid')
        .where('username', '=', ref.owner)
        .executeTakeFirst()
        .then((u) => (u ? { kind: 'user', uuid: u.uuid } : null));
  if (!owner) return null;
  const repo = await db
    .selectFrom('repos')
    .selectAll()
    .where('owner_kind', '=', owner.kind)
    .where('owner_uuid', '=', owner.uuid)
    .where('slug', '=', ref.slug!)
    .executeTakeFirst();
  return repo ?? null;
}

async function resolveTarget(db: Kysely<DB>, from: RepoRow, ref: Reference): Promise<Target | null> {
  const repo = await targetRepo(db, from, ref);
  if (!repo) return null;
  const table = ref.kind === 'thread' ? 'threads' : 'pulls';
  const row = await db
    .selectFrom(table)
    .select('uuid')
    .where('repo_uuid', '=', repo.uuid)
    .where('number', '=', ref.number)
    .executeTakeFirst();
  return row ? { kind: ref.kind, repo, uuid: row.uuid, number: ref.number } : null;
}

/** Records the references of `text` from `source` (each target once per source) as events. */
export async function recordReferences(
  tx: TxContext,
  actor: { uuid: string; username: string },
  source: ReferenceSource,
  text: string,
): Promise<void> {
  const refs = findReferences(text);
  if (refs.length === 0) return;
  const sourceName = await fullName(tx.db, source.repo);
  for (const ref of refs) {
    const target = await resolveTarget(tx.db, source.repo, ref);
    if (!target || target.uuid === source.selfUuid) continue;
    const res = await tx.db
      .insertInto('item_references')
      .values({ source_key: `${source.kind}:${source.key}`, target_uuid: target.uuid, created_at: nowIso() })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0) === 0) continue;
    const scopes = [...repoScopes(target.repo), `${target.kind}:${target.uuid}`];
    if (source.repo.uuid !== target.repo.uuid) scopes.push(`repo:${source.repo.uuid}`);
    await tx.emit({
      kind: target.kind === 'thread' ? 'thread-referenced' : 'pull-referenced',
      scopes,
      actor: actorOf(actor),
      payload: {
        repo_uuid: target.repo.uuid,
        [`${target.kind}_uuid`]: target.uuid,
        number: target.number,
        source: {
          kind: source.kind,
          repo: sourceName,
          repo_uuid: source.repo.uuid,
          ...(source.kind === 'commit' ? { sha: source.sha } : { number: source.number }),
          title: source.title,
        },
      },
    });
  }
}

/**
 * Closes the threads `text` names with a closing keyword (`state_reason: completed`), as `closer`
 * (the merger or pusher) with `via` (the pull number or the commit sha). A thread of another repo
 * closes only when the closer has write access there.
 */
export async function closeByKeywords(
  tx: TxContext,
  closer: { uuid: string; username: string },
  from: RepoRow,
  text: string,
  via: { pull_number?: number; commit_sha?: string },
  close: (
    tx: TxContext,
    scopes: string[],
    thread: { uuid: string; repo_uuid: string; number: number; title: string },
    closer: object,
  ) => Promise<boolean>,
): Promise<void> {
  const user = await tx.db
    .selectFrom('users')
    .select(['uuid', 'username', 'is_staff', 'is_active'])
    .where('uuid', '=', closer.uuid)
    .executeTakeFirst();
  if (!user) return;
  for (const ref of closingReferences(text)) {
    const repo = await targetRepo(tx.db, from, ref);
    if (!repo) continue;
    if (repo.uuid !== from.uuid && !levelAtLeast(await storedUserRepoLevel(tx.db, user, repo), 'write')) continue;
    const thread = await tx.db
      .selectFrom('threads')
      .selectAll()
      .where('repo_uuid', '=', repo.uuid)
      .where('number', '=', ref.number)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (!thread || thread.state !== 'open') continue;
    await close(tx, [...repoScopes(repo), `thread:${thread.uuid}`], thread, { ...closer, ...via });
  }
}
