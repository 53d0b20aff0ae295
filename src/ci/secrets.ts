/**
 * CI secrets and variables of a repo or a team (docs/ci.md "Secrets and variables"). A secret's value is
 * write-only: sealed with the server secret (purpose `ci-secret`, src/secrets/columns.ts), given
 * only to the jobs of the repo's (the team's repos') runs that are not from forks, masked in their logs, never in an
 * API answer. A variable's value is readable and given to every job as `vars`.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type RepoRef, requireRepo, requireTeamCiValues } from '../access/index.ts';
import { command, type Target } from '../core/command.ts';
import { decide, onRepo } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';

export const SECRET_PURPOSE = 'ci-secret';
export const MAX_SECRET_BYTES = 48 * 1024;
export type NamedKind = 'secret' | 'variable';
const TABLE = { secret: 'ci_secrets', variable: 'ci_variables' } as const;

/** `[A-Z_][A-Z0-9_]*`, not starting with `WEFT_` or `GITHUB_` (400 otherwise). */
export function checkName(name: string): string {
  if (!/^[A-Z_][A-Z0-9_]{0,99}$/.test(name))
    throw badRequest('The name is upper-case letters, digits and _, not starting with a digit (at most 100).');
  if (/^(WEFT_|GITHUB_)/.test(name)) throw badRequest('A name may not start with WEFT_ or GITHUB_.');
  return name;
}

type Row = { name: string; value: string; created_at: string; updated_at: string };
const show = (kind: NamedKind, r: Row) =>
  kind === 'secret'
    ? { name: r.name, created_at: r.created_at, updated_at: r.updated_at }
    : { name: r.name, value: r.value, created_at: r.created_at, updated_at: r.updated_at };

/** Reading a secret's name needs maintain level; a variable's, read access. */
const readLevel = (kind: NamedKind) => (kind === 'secret' ? 'maintain' : 'read');
const missing = (kind: NamedKind) => notFound(kind === 'secret' ? 'Secret' : 'Variable');

/** Where values live: a repo's or a team's (`scope`, `scope_uuid`). */
type Scope = { scope: 'repo' | 'team'; uuid: string };

const readScope = async (deps: Deps, viewer: Viewer, at: ScopeRef, kind: NamedKind): Promise<Scope> => {
  if (at.kind === 'team') {
    const { team } = await requireTeamCiValues(deps.db, viewer, at.teamSlug, { secret: kind === 'secret', write: false });
    return { scope: 'team', uuid: team.uuid };
  }
  const { repo } = await requireRepo(deps.db, viewer, at.ref, { level: readLevel(kind) });
  return { scope: 'repo', uuid: repo.uuid };
};

/** The write's target: maintain level on the repo, or the team's maintain level (src/access/teams.ts). */
const writeTarget = (at: ScopeRef, kind: NamedKind): Target<Scope> =>
  at.kind === 'team'
    ? decide(async (db, viewer) => {
        const { team } = await requireTeamCiValues(db, viewer, at.teamSlug, { secret: kind === 'secret', write: true });
        return { scope: 'team', uuid: team.uuid };
      })
    : {
        resolve: async (db, viewer) => {
          const { repo } = await onRepo(at.ref, { level: 'maintain', write: true }).resolve(db, viewer);
          return { scope: 'repo', uuid: repo.uuid };
        },
      };

/** A repo's values (`{repo}/secrets`) or a team's (`/teams/{t}/secrets`). */
export type ScopeRef = { kind: 'repo'; ref: RepoRef } | { kind: 'team'; teamSlug: string };

const rowsOf = (db: Kysely<DB>, kind: NamedKind, s: Scope) =>
  db
    .selectFrom(TABLE[kind])
    .select(['uuid', 'name', 'value', 'created_at', 'updated_at'])
    .where('scope', '=', s.scope)
    .where('scope_uuid', '=', s.uuid);

export async function listIn(deps: Deps, viewer: Viewer, at: ScopeRef, kind: NamedKind) {
  const s = await readScope(deps, viewer, at, kind);
  return (await rowsOf(deps.db, kind, s).orderBy('name').execute()).map((r) => show(kind, r));
}

export async function getIn(deps: Deps, viewer: Viewer, at: ScopeRef, kind: NamedKind, name: string) {
  const s = await readScope(deps, viewer, at, kind);
  const row = await rowsOf(deps.db, kind, s).where('name', '=', checkName(name)).executeTakeFirst();
  if (!row) throw missing(kind);
  return show(kind, row);
}

/** PUT: creates or replaces. A secret is sealed before it is written. */
export async function putIn(deps: Deps, viewer: Viewer, at: ScopeRef, kind: NamedKind, name: string, value: string) {
  checkName(name);
  if (Buffer.byteLength(value) > MAX_SECRET_BYTES) throw badRequest('The value is over 48 KiB.');
  const stored = kind === 'secret' ? deps.secret.seal(SECRET_PURPOSE, value) : value;
  return command(deps, viewer, writeTarget(at, kind), async (tx) => {
    const now = nowIso();
    const s = tx.access;
    const existing = await rowsOf(tx.db, kind, s).where('name', '=', name).executeTakeFirst();
    if (existing)
      await tx.db.updateTable(TABLE[kind]).set({ value: stored, updated_at: now }).where('uuid', '=', existing.uuid).execute();
    else
      await tx.db
        .insertInto(TABLE[kind])
        .values({ uuid: randomUUID(), scope: s.scope, scope_uuid: s.uuid, name, value: stored, created_at: now, updated_at: now })
        .execute();
    return show(kind, { name, value, created_at: existing?.created_at ?? now, updated_at: now });
  });
}

export async function deleteIn(deps: Deps, viewer: Viewer, at: ScopeRef, kind: NamedKind, name: string) {
  checkName(name);
  await command(deps, viewer, writeTarget(at, kind), async (tx) => {
    const res = await tx.db
      .deleteFrom(TABLE[kind])
      .where('scope', '=', tx.access.scope)
      .where('scope_uuid', '=', tx.access.uuid)
      .where('name', '=', name)
      .executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw missing(kind);
  });
}

const repoAt = (ref: RepoRef): ScopeRef => ({ kind: 'repo', ref });
const teamAt = (teamSlug: string): ScopeRef => ({ kind: 'team', teamSlug });

// a repo's values (maintain level on the repo; variables readable with read access)
export const listNamed = (deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind) => listIn(deps, viewer, repoAt(ref), kind);
export const getNamed = (deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind, name: string) =>
  getIn(deps, viewer, repoAt(ref), kind, name);
export const putNamed = (deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind, name: string, value: string) =>
  putIn(deps, viewer, repoAt(ref), kind, name, value);
export const deleteNamed = (deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind, name: string) =>
  deleteIn(deps, viewer, repoAt(ref), kind, name);

// a team's values, given to the jobs of every repo of the team (a repo's own of the same name win):
// the team's maintain level (maintainer role or owner); variables readable by any member
export const listTeamSecrets = (deps: Deps, viewer: Viewer, teamSlug: string) => listIn(deps, viewer, teamAt(teamSlug), 'secret');
export const getTeamSecret = (deps: Deps, viewer: Viewer, teamSlug: string, name: string) =>
  getIn(deps, viewer, teamAt(teamSlug), 'secret', name);
export const setTeamSecret = (deps: Deps, viewer: Viewer, teamSlug: string, name: string, value: string) =>
  putIn(deps, viewer, teamAt(teamSlug), 'secret', name, value);
export const deleteTeamSecret = (deps: Deps, viewer: Viewer, teamSlug: string, name: string) =>
  deleteIn(deps, viewer, teamAt(teamSlug), 'secret', name);
export const listTeamVariables = (deps: Deps, viewer: Viewer, teamSlug: string) =>
  listIn(deps, viewer, teamAt(teamSlug), 'variable');
export const getTeamVariable = (deps: Deps, viewer: Viewer, teamSlug: string, name: string) =>
  getIn(deps, viewer, teamAt(teamSlug), 'variable', name);
export const setTeamVariable = (deps: Deps, viewer: Viewer, teamSlug: string, name: string, value: string) =>
  putIn(deps, viewer, teamAt(teamSlug), 'variable', name, value);
export const deleteTeamVariable = (deps: Deps, viewer: Viewer, teamSlug: string, name: string) =>
  deleteIn(deps, viewer, teamAt(teamSlug), 'variable', name);

/**
 * What a job of `repo` gets: its team's values (a team-owned repo), overridden by the repo's
 * own; secrets opened, and none for a run from a fork.
 */
export async function jobValues(
  deps: Deps,
  db: Kysely<DB>,
  repo: { uuid: string; owner_kind: string; owner_uuid: string },
  fork: boolean,
): Promise<{ secrets: Record<string, string>; vars: Record<string, string> }> {
  const scopes: Array<[string, string]> = [
    ...(repo.owner_kind === 'team' ? ([['team', repo.owner_uuid]] as Array<[string, string]>) : []),
    ['repo', repo.uuid],
  ];
  const read = async (kind: NamedKind) => {
    const out: Record<string, string> = {};
    for (const [scope, uuid] of scopes) {
      const rows = await db
        .selectFrom(TABLE[kind])
        .select(['name', 'value'])
        .where('scope', '=', scope)
        .where('scope_uuid', '=', uuid)
        .execute();
      for (const r of rows) out[r.name] = kind === 'secret' ? deps.secret.open(SECRET_PURPOSE, r.value) : r.value;
    }
    return out;
  };
  return { secrets: fork ? {} : await read('secret'), vars: await read('variable') };
}
