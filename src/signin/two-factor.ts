import { randomBytes, randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { Secret, TOTP } from 'otpauth';
import { command } from '../core/command.ts';
import { anyUser } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, conflict } from '../errors.ts';
import { nowIso } from '../time.ts';
import { hashSecret } from '../tokens/secret.ts';
import type { Viewer } from '../viewer.ts';
import { hasPasskey } from './passkeys.ts';
import type { RecoveryCodes, TotpEnrolment, TwoFactorStatus } from './schemas.ts';

/**
 * The second factor (docs/signin.md "Two-factor"): TOTP per RFC 6238 (SHA-1, 6 digits, 30 s,
 * one step either side) with ten single-use recovery codes. A code is accepted once: the step
 * of the last accepted code is kept and a code of that step or an earlier one is refused. Five
 * wrong codes in 15 minutes lock the second step of that user for 15 minutes (429 with
 * Retry-After), whichever path the codes came through.
 */
export const TOTP_SECRET_PURPOSE = 'totp-secret';
const PERIOD = 30;
const LOCK_SCOPE = 'two-factor';
const LOCK_FAILURES = 5;
const LOCK_WINDOW_MS = 15 * 60_000;
const RECOVERY_CODES = 10;

const totpOf = (secretBase32: string, label: string) =>
  new TOTP({ issuer: 'Weft', label, algorithm: 'SHA1', digits: 6, period: PERIOD, secret: Secret.fromBase32(secretBase32) });

export const wrongCode = () =>
  new AppError(
    400,
    'invalid_two_factor_code',
    'That code is not right: use the current code of your authenticator app or an unused recovery code.',
  );

/** Whether a user has a confirmed authenticator app (TOTP). */
async function hasTotp(deps: Deps, userUuid: string): Promise<boolean> {
  const row = await deps.db
    .selectFrom('user_totp')
    .select('user_uuid')
    .where('user_uuid', '=', userUuid)
    .where('confirmed_at', 'is not', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether a user has a second factor: a confirmed authenticator app or a passkey. */
export async function hasSecondFactor(deps: Deps, userUuid: string): Promise<boolean> {
  return (await hasTotp(deps, userUuid)) || (await hasPasskey(deps, userUuid));
}

/** 429 while the user's second step is locked (five wrong codes in 15 minutes). */
async function assertNotLocked(deps: Deps, userUuid: string): Promise<void> {
  const now = deps.clock.now().getTime();
  const recent = await deps.db
    .selectFrom('rate_limit_hits')
    .select('at_ms')
    .where('scope', '=', LOCK_SCOPE)
    .where('caller', '=', userUuid)
    .where('at_ms', '>', now - LOCK_WINDOW_MS)
    .orderBy('at_ms', 'desc')
    .limit(LOCK_FAILURES)
    .execute();
  if (recent.length < LOCK_FAILURES) return;
  const until = Number(recent[0]!.at_ms) + LOCK_WINDOW_MS;
  const seconds = Math.max(1, Math.ceil((until - now) / 1000));
  throw new AppError(
    429,
    'rate_limited',
    `Too many wrong codes: the second step is locked for ${Math.ceil(seconds / 60)} more minute(s).`,
    undefined,
    { 'retry-after': String(seconds) },
  );
}

async function recordFailure(deps: Deps, userUuid: string): Promise<void> {
  await deps.db
    .insertInto('rate_limit_hits')
    .values({ scope: LOCK_SCOPE, caller: userUuid, at_ms: deps.clock.now().getTime() })
    .execute();
}

/** The time step a TOTP code belongs to (within one step of now), or null. */
function totpStep(deps: Deps, secretBase32: string, code: string): number | null {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return null;
  const timestamp = deps.clock.now().getTime();
  const delta = TOTP.validate({
    token,
    secret: Secret.fromBase32(secretBase32),
    algorithm: 'SHA1',
    digits: 6,
    period: PERIOD,
    timestamp,
    window: 1,
  });
  if (delta === null) return null;
  return Math.floor(timestamp / 1000 / PERIOD) + delta;
}

const normalRecovery = (code: string) => code.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * Checks a second-factor code of a user: a TOTP code of the confirmed secret (or, with
 * `pending`, of the secret being confirmed), or an unused recovery code. A wrong code counts
 * toward the lock; a replayed TOTP code is wrong. Throws 429 while locked, `onWrong()` when wrong.
 * Runs outside any transaction so a failure is counted even though the request then fails.
 */
export async function checkSecondFactor(
  deps: Deps,
  userUuid: string,
  code: string,
  opts: { pending?: boolean; recovery?: boolean; onWrong?: () => AppError } = {},
): Promise<'totp' | 'recovery'> {
  await assertNotLocked(deps, userUuid);
  const onWrong = opts.onWrong ?? wrongCode;
  const totp = await deps.db.selectFrom('user_totp').selectAll().where('user_uuid', '=', userUuid).executeTakeFirst();
  if (totp && (opts.pending ? totp.confirmed_at === null : totp.confirmed_at !== null)) {
    const step = totpStep(deps, deps.secret.open(TOTP_SECRET_PURPOSE, totp.secret), code);
    if (step !== null) {
      // accepted once: the step moves forward only, so a replay (or an earlier code) is refused
      const moved = await deps.db
        .updateTable('user_totp')
        .set({ last_step: step })
        .where('user_uuid', '=', userUuid)
        .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) === 1) return 'totp';
    }
  }
  if (opts.recovery !== false && !opts.pending) {
    const normal = normalRecovery(code);
    if (normal.length === 10) {
      const used = await deps.db
        .updateTable('recovery_codes')
        .set({ used_at: nowIso() })
        .where('user_uuid', '=', userUuid)
        .where('code_hash', '=', hashSecret(normal))
        .where('used_at', 'is', null)
        .executeTakeFirst();
      if (Number(used.numUpdatedRows) === 1) return 'recovery';
    }
  }
  await recordFailure(deps, userUuid);
  throw onWrong();
}

function newRecoveryCode(): string {
  // 10 characters of a-z0-9 (about 50 bits), shown as xxxxx-xxxxx
  const alphabet = 'abcdefghijkmnpqrstuvwxyz23456789';
  const bytes = randomBytes(10);
  let s = '';
  for (const b of bytes) s += alphabet[b % alphabet.length];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}

async function replaceRecoveryCodes(tx: { db: Deps['db'] }, userUuid: string): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  const now = nowIso();
  await tx.db.deleteFrom('recovery_codes').where('user_uuid', '=', userUuid).execute();
  await tx.db
    .insertInto('recovery_codes')
    .values(
      codes.map((c) => ({
        uuid: randomUUID(),
        user_uuid: userUuid,
        code_hash: hashSecret(normalRecovery(c)),
        used_at: null,
        created_at: now,
      })),
    )
    .execute();
  return codes;
}

/** `POST /user/two-factor/totp`: a new secret to confirm (replaces one not confirmed yet). */
export async function startTotp(deps: Deps, viewer: Viewer): Promise<Static<typeof TotpEnrolment>> {
  return command(deps, viewer, anyUser, async (tx) => {
    const row = await tx.db
      .selectFrom('user_totp')
      .select('confirmed_at')
      .where('user_uuid', '=', viewer.uuid)
      .executeTakeFirst();
    if (row?.confirmed_at)
      throw conflict('totp_enabled', 'An authenticator app is already set up: remove it first to set up another.');
    const secret = new Secret({ size: 20 }).base32;
    const sealed = deps.secret.seal(TOTP_SECRET_PURPOSE, secret);
    await tx.db.deleteFrom('user_totp').where('user_uuid', '=', viewer.uuid).execute();
    await tx.db
      .insertInto('user_totp')
      .values({ user_uuid: viewer.uuid, secret: sealed, confirmed_at: null, last_step: null, created_at: nowIso() })
      .execute();
    return { secret, otpauth_url: totpOf(secret, viewer.username).toString() };
  });
}

/** `POST /user/two-factor/totp/confirm`: the first code makes TOTP active and gives ten recovery codes. */
export async function confirmTotp(deps: Deps, viewer: Viewer, code: string): Promise<Static<typeof RecoveryCodes>> {
  const row = await deps.db
    .selectFrom('user_totp')
    .select('confirmed_at')
    .where('user_uuid', '=', viewer.uuid)
    .executeTakeFirst();
  if (!row) throw badRequest('Set up an authenticator app first (POST /user/two-factor/totp).');
  if (row.confirmed_at) throw conflict('totp_enabled', 'The authenticator app is already confirmed.');
  await checkSecondFactor(deps, viewer.uuid, code, { pending: true });
  return command(deps, viewer, anyUser, async (tx) => {
    await tx.db.updateTable('user_totp').set({ confirmed_at: nowIso() }).where('user_uuid', '=', viewer.uuid).execute();
    await tx.db.updateTable('users').set({ has_two_factor: 1 }).where('uuid', '=', viewer.uuid).execute();
    return { recovery_codes: await replaceRecoveryCodes(tx, viewer.uuid) };
  });
}

/** `DELETE /user/two-factor/totp {code}`: removes TOTP and the recovery codes. */
export async function disableTotp(deps: Deps, viewer: Viewer, code: string): Promise<void> {
  if (!(await hasTotp(deps, viewer.uuid))) throw conflict('totp_not_enabled', 'No authenticator app is set up.');
  await checkSecondFactor(deps, viewer.uuid, code);
  await command(deps, viewer, anyUser, async (tx) => {
    await tx.db.deleteFrom('user_totp').where('user_uuid', '=', viewer.uuid).execute();
    await tx.db.deleteFrom('recovery_codes').where('user_uuid', '=', viewer.uuid).execute();
    const passkey = await tx.db.selectFrom('passkeys').select('uuid').where('user_uuid', '=', viewer.uuid).executeTakeFirst();
    if (!passkey) await tx.db.updateTable('users').set({ has_two_factor: 0 }).where('uuid', '=', viewer.uuid).execute();
  });
}

/** `POST /user/two-factor/recovery-codes {code}`: a new set of ten; the old ones stop working. */
export async function regenerateRecoveryCodes(deps: Deps, viewer: Viewer, code: string): Promise<Static<typeof RecoveryCodes>> {
  if (!(await hasTotp(deps, viewer.uuid))) throw conflict('totp_not_enabled', 'Set up an authenticator app first.');
  await checkSecondFactor(deps, viewer.uuid, code);
  return command(deps, viewer, anyUser, async (tx) => ({ recovery_codes: await replaceRecoveryCodes(tx, viewer.uuid) }));
}

/** `GET /user/two-factor`. */
export async function twoFactorStatus(deps: Deps, viewer: Viewer): Promise<Static<typeof TwoFactorStatus>> {
  const totp = await hasTotp(deps, viewer.uuid);
  const passkeys = await deps.db
    .selectFrom('passkeys')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_uuid', '=', viewer.uuid)
    .executeTakeFirstOrThrow();
  const left = await deps.db
    .selectFrom('recovery_codes')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_uuid', '=', viewer.uuid)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  const teams = await deps.db
    .selectFrom('team_members as m')
    .innerJoin('teams as t', 't.uuid', 'm.team_uuid')
    .select('t.slug')
    .where('m.user_uuid', '=', viewer.uuid)
    .where('t.require_two_factor', '=', 1)
    .orderBy('t.slug')
    .execute();
  return { totp, passkeys: Number(passkeys.n), recovery_codes_left: Number(left.n), required_by: teams.map((t) => t.slug) };
}

/**
 * The second step of a password sign-in (`POST /auth/login`): a user with a second factor must
 * send `otp` (401 two_factor_required without it, 401 invalid_two_factor_code when wrong).
 */
export async function requireSecondFactor(deps: Deps, userUuid: string, otp: string | undefined): Promise<void> {
  if (!(await hasSecondFactor(deps, userUuid))) return;
  if (!otp) {
    throw new AppError(
      401,
      'two_factor_required',
      'This account has a second factor: send otp (a code of the authenticator app or a recovery code; an account with passkeys only signs in on the web or uses a token).',
    );
  }
  await checkSecondFactor(deps, userUuid, otp, {
    onWrong: () => new AppError(401, 'invalid_two_factor_code', 'That code is not right.'),
  });
}

/** The secret being set up (not confirmed yet), to show again on the Security page; null when none. */
export async function pendingTotp(deps: Deps, viewer: Viewer): Promise<Static<typeof TotpEnrolment> | null> {
  const row = await deps.db.selectFrom('user_totp').selectAll().where('user_uuid', '=', viewer.uuid).executeTakeFirst();
  if (!row || row.confirmed_at !== null) return null;
  const secret = deps.secret.open(TOTP_SECRET_PURPOSE, row.secret);
  return { secret, otpauth_url: totpOf(secret, viewer.username).toString() };
}
