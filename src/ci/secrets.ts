/**
 * CI secrets and variables of a repo (docs/ci.md "Secrets and variables"). A secret's value is
 * write-only: sealed with the server secret (purpose `ci-secret`, src/secrets/columns.ts), given
 * only to the jobs of the repo's runs that are not from forks, masked in their logs, never in an
 * API answer. A variable's value is readable and given to every job as `vars`.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type RepoRef, requireRepo } from '../access/index.ts';
import { command } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
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

export async function listNamed(deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind) {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: readLevel(kind) });
  const rows = await deps.db
    .selectFrom(TABLE[kind])
    .select(['name', 'value', 'created_at', 'updated_at'])
    .where('scope', '=', 'repo')
    .where('scope_uuid', '=', repo.uuid)
    .orderBy('name')
    .execute();
  return rows.map((r) => show(kind, r));
}

export async function getNamed(deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind, name: string) {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: readLevel(kind) });
  const row = await deps.db
    .selectFrom(TABLE[kind])
    .select(['name', 'value', 'created_at', 'updated_at'])
    .where('scope', '=', 'repo')
    .where('scope_uuid', '=', repo.uuid)
    .where('name', '=', checkName(name))
    .executeTakeFirst();
  if (!row) throw notFound(kind === 'secret' ? 'Secret' : 'Variable');
  return show(kind, row);
}

/** PUT: creates or replaces (maintain level). A secret is sealed before it is written. */
export async function putNamed(deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind, name: string, value: string) {
  checkName(name);
  if (Buffer.byteLength(value) > MAX_SECRET_BYTES) throw badRequest('The value is over 48 KiB.');
  const stored = kind === 'secret' ? deps.secret.seal(SECRET_PURPOSE, value) : value;
  return command(deps, viewer, onRepo(ref, { level: 'maintain', write: true }), async (tx) => {
    const now = nowIso();
    const scopeUuid = tx.access.repo.uuid;
    const existing = await tx.db
      .selectFrom(TABLE[kind])
      .select(['uuid', 'created_at'])
      .where('scope', '=', 'repo')
      .where('scope_uuid', '=', scopeUuid)
      .where('name', '=', name)
      .executeTakeFirst();
    if (existing)
      await tx.db.updateTable(TABLE[kind]).set({ value: stored, updated_at: now }).where('uuid', '=', existing.uuid).execute();
    else
      await tx.db
        .insertInto(TABLE[kind])
        .values({
          uuid: randomUUID(),
          scope: 'repo',
          scope_uuid: scopeUuid,
          name,
          value: stored,
          created_at: now,
          updated_at: now,
        })
        .execute();
    return show(kind, { name, value, created_at: existing?.created_at ?? now, updated_at: now });
  });
}

export async function deleteNamed(deps: Deps, viewer: Viewer, ref: RepoRef, kind: NamedKind, name: string) {
  checkName(name);
  await command(deps, viewer, onRepo(ref, { level: 'maintain', write: true }), async (tx) => {
    const res = await tx.db
      .deleteFrom(TABLE[kind])
      .where('scope', '=', 'repo')
      .where('scope_uuid', '=', tx.access.repo.uuid)
      .where('name', '=', name)
      .executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw notFound(kind === 'secret' ? 'Secret' : 'Variable');
  });
}

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
