import { randomUUID } from 'node:crypto';
import { type Kysely, type Selectable, sql } from 'kysely';
import { assertCanCreateUsers, assertCanEditUser, assertCanListUsers, assertUserVisible, canSeeEmail } from '../access/index.ts';
import { containsText } from '../db/like.ts';
import type { DB, UsersTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, conflict, notFound, unauthorized } from '../errors.ts';
import { command } from '../core/command.ts';
import { anyUser, decide } from '../core/targets.ts';
import { currentTransaction, isUniqueViolation } from '../db/tx.ts';
import { isReserved, nameRuleError, normalizeName, suggestName } from '../names.ts';
import { nowIso } from '../time.ts';
import { type CreatedToken, createTokenFor } from '../tokens/service.ts';
import type { Viewer } from '../viewer.ts';
import { dummyPasswordHash, hashPassword, verifyPassword } from './password.ts';

export type UserRow = Selectable<UsersTable>;

export interface UserJson {
  uuid: string;
  username: string;
  display_name: string;
  email: string | null;
  is_staff: boolean;
  is_active: boolean;
  ping_mentions: 'everyone' | 'team_only' | 'disabled';
  created_at: string;
}

export function userToJson(row: Omit<UserRow, 'password_hash' | 'has_two_factor'>, viewer: Viewer | null): UserJson {
  const seesEmail = canSeeEmail(viewer, row.uuid);
  return {
    uuid: row.uuid,
    username: row.username,
    display_name: row.display_name,
    email: seesEmail ? row.email : null,
    is_staff: row.is_staff === 1,
    is_active: row.is_active === 1,
    ping_mentions: row.ping_mentions as UserJson['ping_mentions'],
    created_at: row.created_at,
  };
}

export async function findUserByUsername(db: Kysely<DB>, username: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('username', '=', username.toLowerCase()).executeTakeFirst();
}

export async function findUserByUuid(db: Kysely<DB>, uuid: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('uuid', '=', uuid).executeTakeFirst();
}

/** An active user by name, or 404: inactive users are hidden from everyone but staff. */
export async function requireActiveUser(db: Kysely<DB>, username: string): Promise<UserRow> {
  const row = await findUserByUsername(db, username);
  if (row?.is_active !== 1) throw notFound('User');
  return row;
}

export async function isUsernameTaken(db: Kysely<DB>, username: string): Promise<boolean> {
  if (isReserved('username', username)) return true;
  const row = await db.selectFrom('users').select('uuid').where('username', '=', username).executeTakeFirst();
  return row !== undefined;
}

export interface CreateUserInput {
  username: string;
  email: string;
  display_name?: string;
  is_staff?: boolean;
  password?: string;
}

/**
 * Creates a user. `actor` null means the system (bootstrap, CLI, signup); otherwise it must be
 * staff. Returns the row; callers needing a token make one in the same transaction via `withToken`.
 */
const emailTaken = () => conflict('email_taken', 'That email address is already used by another account.');

/** 409 email_taken when another user (not `except`) has this email, compared case-insensitively. */
async function assertEmailFree(db: Kysely<DB>, email: string, except?: string): Promise<void> {
  let q = db
    .selectFrom('users')
    .select('uuid')
    .where(sql<string>`lower(email)`, '=', email.toLowerCase());
  if (except !== undefined) q = q.where('uuid', '!=', except);
  if (await q.executeTakeFirst()) throw emailTaken();
}

/** A unique violation of users_email_lower_idx (migration 181) is a taken email. */
const isEmailViolation = (err: unknown) =>
  isUniqueViolation(err) && String((err as Error).message).includes('users_email_lower_idx');

export async function createUser(
  deps: Deps,
  actor: Viewer | null,
  input: CreateUserInput,
  withToken?: { name: string; secret?: string },
  opts: { allowReserved?: boolean } = {},
): Promise<{ user: UserRow; token: CreatedToken | null }> {
  assertCanCreateUsers(actor);
  const username = normalizeName('username', input.username);
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
  return command(
    deps,
    actor,
    decide((_db, v: Viewer | null) => Promise.resolve(assertCanCreateUsers(v))),
    async (tx) => {
      const reserved = isReserved('username', username) && !opts.allowReserved;
      const exists = await tx.db.selectFrom('users').select('uuid').where('username', '=', username).executeTakeFirst();
      if (reserved || exists) {
        throw conflict('username_taken', `The username "${username}" is not available.`);
      }
      await assertEmailFree(tx.db, input.email.trim());
      const now = nowIso();
      const row: UserRow = {
        uuid: randomUUID(),
        username,
        display_name: (input.display_name ?? '').trim(),
        email: input.email.trim(),
        is_staff: input.is_staff ? 1 : 0,
        is_active: 1,
        ping_mentions: 'everyone',
        password_hash: passwordHash,
        created_at: now,
        updated_at: now,
        has_two_factor: 0,
      };
      try {
        await tx.db.insertInto('users').values(row).execute();
      } catch (err) {
        if (isEmailViolation(err)) throw emailTaken();
        if (isUniqueViolation(err)) throw conflict('username_taken', `The username "${username}" is not available.`);
        throw err;
      }
      await tx.emit({
        kind: 'user-created',
        scopes: [`user:${row.uuid}`],
        actor: actor ? { uuid: actor.uuid, username: actor.username } : null,
        payload: { user_uuid: row.uuid, username },
      });
      const token = withToken ? await createTokenFor(tx, row, { name: withToken.name, secret: withToken.secret }, actor) : null;
      return { user: row, token };
    },
  );
}

export async function listUsers(
  deps: Deps,
  viewer: Viewer,
  opts: { search?: string; offset: number; limit: number },
): Promise<UserRow[]> {
  assertCanListUsers(viewer);
  // The page's keys from users_list_idx, then their rows (README "Performance"). Without
  // `search` the keys are index entries only; `search` matches a substring of username,
  // display_name or email, which no index serves: it still walks users_list_idx in order and
  // reads each user row until the page is full.
  let keys = deps.db.selectFrom('users').select('uuid');
  if (opts.search) {
    const s = opts.search;
    // The LIKE expressions are used as conditions themselves: comparing them with `true`
    // would bind a JS boolean, which better-sqlite3 refuses.
    keys = keys.where((eb) => eb.or([containsText('username', s), containsText('display_name', s), containsText('email', s)]));
  }
  keys = keys.orderBy('created_at').orderBy('uuid').offset(opts.offset).limit(opts.limit);
  return deps.db.selectFrom('users').selectAll().where('uuid', 'in', keys).orderBy('created_at').orderBy('uuid').execute();
}

export async function getUser(deps: Deps, viewer: Viewer, username: string): Promise<UserRow> {
  return assertUserVisible(viewer, await findUserByUsername(currentTransaction(deps.db) ?? deps.db, username));
}

/** The user named `username` as the viewer may see them (404 otherwise), read through `db`. */
async function readUser(db: Kysely<DB>, viewer: Viewer, username: string): Promise<UserRow> {
  return assertUserVisible(viewer, await findUserByUsername(db, username));
}

export interface UpdateUserInput {
  display_name?: string;
  email?: string;
  ping_mentions?: string;
  password?: string;
  is_staff?: boolean;
  is_active?: boolean;
}

export async function updateUser(deps: Deps, viewer: Viewer, username: string, input: UpdateUserInput): Promise<UserRow> {
  // Refused early, before the costly hashing; checked again with the transaction below.
  assertCanEditUser(viewer, (await getUser(deps, viewer, username)).uuid, input);
  const passwordHash = input.password === undefined ? undefined : await hashPassword(input.password);
  const editing = decide(async (db, v: Viewer) => {
    const row = await readUser(db, v, username);
    assertCanEditUser(v, row.uuid, input);
    return row;
  });
  return command(deps, viewer, editing, async (tx) => {
    const row = tx.access;
    // An empty update changes nothing: no write, no event.
    if (Object.values(input).every((v) => v === undefined)) return row;
    const changes: Partial<UserRow> = { updated_at: nowIso() };
    if (input.display_name !== undefined) changes.display_name = input.display_name.trim();
    if (input.email !== undefined) changes.email = input.email.trim();
    if (input.ping_mentions !== undefined) changes.ping_mentions = input.ping_mentions;
    if (passwordHash !== undefined) changes.password_hash = passwordHash;
    if (input.is_staff !== undefined) changes.is_staff = input.is_staff ? 1 : 0;
    if (input.is_active !== undefined) changes.is_active = input.is_active ? 1 : 0;
    if (changes.email !== undefined) await assertEmailFree(tx.db, changes.email, row.uuid);
    try {
      await tx.db.updateTable('users').set(changes).where('uuid', '=', row.uuid).execute();
    } catch (err) {
      throw isEmailViolation(err) ? emailTaken() : err;
    }
    const updated = (await findUserByUuid(tx.db, row.uuid))!;
    await tx.emit({
      kind: 'user-updated',
      scopes: [`user:${row.uuid}`],
      actor: { uuid: viewer.uuid, username: viewer.username },
      payload: { user_uuid: row.uuid, username: row.username, fields: Object.keys(input).filter((k) => k !== 'password') },
    });
    return updated;
  });
}

export async function checkUsername(deps: Deps, raw: string): Promise<{ available: boolean; suggestion: string | null }> {
  const username = raw.trim().toLowerCase();
  const problem = nameRuleError('username', username);
  if (problem) throw badRequest(problem);
  if (!(await isUsernameTaken(deps.db, username))) return { available: true, suggestion: null };
  return { available: false, suggestion: await suggestName('username', username, (c) => isUsernameTaken(deps.db, c)) };
}

/** The user a username and password name; 401 for a wrong pair (the API's login and the sign-in page). */
export async function checkCredentials(deps: Deps, username: string, password: string): Promise<UserRow> {
  const row = await findUserByUsername(deps.db, username.trim().toLowerCase());
  const usable = row?.password_hash && row.is_active === 1 ? row.password_hash : null;
  // Unknown users, users without a password and inactive users cost one scrypt too, so the
  // response time does not tell which usernames exist.
  const ok = await verifyPassword(password, usable ?? (await dummyPasswordHash()));
  if (!row || !usable || !ok) throw unauthorized('Wrong username or password.');
  return row;
}

export async function login(
  deps: Deps,
  input: { username: string; password: string; token_name: string; otp?: string },
  // src/signin passes its own: the local password, then LDAP sources, then the second factor
  verify: (username: string, password: string) => Promise<UserRow> = (u, p) => checkCredentials(deps, u, p),
): Promise<CreatedToken> {
  const row = await verify(input.username, input.password);
  const name = input.token_name.trim();
  if (!name) throw badRequest('token_name must not be blank.');
  // the password decided who the caller is; the token is theirs
  const caller = { uuid: row.uuid, username: row.username, isStaff: row.is_staff === 1, tokenUuid: '' };
  return command(deps, caller, anyUser, (tx) => createTokenFor(tx, row, { name }, caller));
}

/** BOOTSTRAP_ADMIN_TOKEN: create the staff user with that exact secret when it does not exist. */
export async function bootstrapAdmin(deps: Deps): Promise<boolean> {
  const { bootstrapAdminToken: secret, bootstrapAdminUsername: username } = deps.config;
  if (!secret) return false;
  if (await findUserByUsername(deps.db, username)) return false;
  try {
    await createUser(
      deps,
      null,
      { username, email: `${username}@localhost`, is_staff: true },
      { name: 'bootstrap', secret },
      { allowReserved: true },
    );
  } catch (err) {
    // Another instance bootstrapped at the same moment.
    if (err instanceof AppError && err.code === 'username_taken') return false;
    throw err;
  }
  return true;
}
