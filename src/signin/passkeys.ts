import { randomUUID } from 'node:crypto';
import {
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { command } from '../core/command.ts';
import { anyUser } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { AppError, notFound } from '../errors.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';

/**
 * Passkeys (docs/signin.md "Passkeys"): WebAuthn credentials registered from Security settings,
 * used as a second factor after the password and for a sign-in without a username. The relying
 * party is `PUBLIC_URL` (its host is the RP ID, its origin the one origin accepted). Every
 * challenge is stored here, bound to its purpose (and user, or sign-in form), and taken once
 * before it expires; a signature counter that does not move forward is refused.
 */
const CHALLENGE_TTL_MS = 5 * 60_000;
type Purpose = 'register' | 'sign-in' | 'second-step';

export interface PasskeyJson {
  uuid: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

function relyingParty(deps: Deps): { rpID: string; origin: string } {
  const url = new URL(deps.config.publicUrl);
  return { rpID: url.hostname, origin: url.origin };
}

/** A refusal of a passkey answer; the detail never says whether an account or a passkey exists. */
const refused = (detail: string) => new AppError(400, 'passkey_refused', detail);

async function storeChallenge(deps: Deps, challenge: string, purpose: Purpose, userUuid: string | null, bound: string | null) {
  const now = deps.clock.now();
  // forget the expired ones as new ones come
  await deps.db.deleteFrom('webauthn_challenges').where('expires_at', '<', now.toISOString()).execute();
  await deps.db
    .insertInto('webauthn_challenges')
    .values({
      challenge,
      purpose,
      user_uuid: userUuid,
      bound,
      expires_at: new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString(),
    })
    .execute();
}

/** The browser's answer (a JSON string from the form), with its client data read. */
function parseAnswer<T extends { id: string; response: { clientDataJSON: string } }>(
  deps: Deps,
  raw: string,
): { answer: T; challenge: string } {
  let answer: T;
  let client: { challenge?: unknown; origin?: unknown };
  try {
    answer = JSON.parse(raw) as T;
    client = JSON.parse(Buffer.from(answer.response.clientDataJSON, 'base64url').toString('utf8')) as typeof client;
  } catch {
    throw refused('The passkey answer could not be read: try again.');
  }
  if (typeof answer.id !== 'string' || typeof client.challenge !== 'string')
    throw refused('The passkey answer could not be read.');
  if (client.origin !== relyingParty(deps).origin) throw refused('This passkey answer was made for another site.');
  return { answer, challenge: client.challenge };
}

/** Takes a challenge once: true when it was handed out for this purpose (user, form) and has not expired. */
async function takeChallenge(
  deps: Deps,
  challenge: string,
  purpose: Purpose,
  userUuid: string | null,
  bound: string | null,
): Promise<void> {
  let q = deps.db
    .deleteFrom('webauthn_challenges')
    .where('challenge', '=', challenge)
    .where('purpose', '=', purpose)
    .where('expires_at', '>', deps.clock.now().toISOString());
  q = userUuid === null ? q.where('user_uuid', 'is', null) : q.where('user_uuid', '=', userUuid);
  q = bound === null ? q.where('bound', 'is', null) : q.where('bound', '=', bound);
  const taken = await q.executeTakeFirst();
  if (Number(taken.numDeletedRows) !== 1) throw refused('This passkey request has expired or was already used: try again.');
}

const transportsOf = (json: string): AuthenticatorTransport[] => {
  try {
    const list = JSON.parse(json) as unknown;
    return Array.isArray(list) ? (list.filter((t) => typeof t === 'string') as AuthenticatorTransport[]) : [];
  } catch {
    return [];
  }
};

async function credentialsOf(deps: Deps, userUuid: string) {
  return deps.db.selectFrom('passkeys').selectAll().where('user_uuid', '=', userUuid).orderBy('created_at').execute();
}

export async function hasPasskey(deps: Deps, userUuid: string): Promise<boolean> {
  const row = await deps.db.selectFrom('passkeys').select('uuid').where('user_uuid', '=', userUuid).executeTakeFirst();
  return row !== undefined;
}

export async function listPasskeys(deps: Deps, viewer: Viewer): Promise<PasskeyJson[]> {
  return (await credentialsOf(deps, viewer.uuid)).map((p) => ({
    uuid: p.uuid,
    name: p.name,
    created_at: p.created_at,
    last_used_at: p.last_used_at,
  }));
}

/** The options for `navigator.credentials.create()`: a discoverable credential, no attestation. */
export async function passkeyRegistrationOptions(deps: Deps, viewer: Viewer): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const { rpID } = relyingParty(deps);
  const existing = await credentialsOf(deps, viewer.uuid);
  const options = await generateRegistrationOptions({
    rpName: 'Weft',
    rpID,
    userName: viewer.username,
    userID: new TextEncoder().encode(viewer.uuid),
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: transportsOf(p.transports) })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  await storeChallenge(deps, options.challenge, 'register', viewer.uuid, null);
  return options;
}

/** Registers the passkey the browser made; it is a second factor from now on. */
export async function registerPasskey(deps: Deps, viewer: Viewer, raw: string, name: string): Promise<PasskeyJson> {
  const { answer, challenge } = parseAnswer<RegistrationResponseJSON>(deps, raw);
  await takeChallenge(deps, challenge, 'register', viewer.uuid, null);
  const { rpID, origin } = relyingParty(deps);
  let info;
  try {
    const result = await verifyRegistrationResponse({
      response: answer,
      expectedChallenge: challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: false,
    });
    if (!result.verified) throw new Error('not verified');
    info = result.registrationInfo;
  } catch {
    throw refused('The passkey could not be checked: try again.');
  }
  const label = name.trim().slice(0, 100) || 'Passkey';
  return command(deps, viewer, anyUser, async (tx) => {
    const row = {
      uuid: randomUUID(),
      user_uuid: viewer.uuid,
      credential_id: info.credential.id,
      public_key: Buffer.from(info.credential.publicKey).toString('base64url'),
      counter: info.credential.counter,
      transports: JSON.stringify(info.credential.transports ?? []),
      name: label,
      created_at: nowIso(),
      last_used_at: null,
    };
    const taken = await tx.db
      .selectFrom('passkeys')
      .select('uuid')
      .where('credential_id', '=', row.credential_id)
      .executeTakeFirst();
    if (taken) throw refused('This passkey is registered already.');
    await tx.db.insertInto('passkeys').values(row).execute();
    await tx.db.updateTable('users').set({ has_two_factor: 1 }).where('uuid', '=', viewer.uuid).execute();
    return { uuid: row.uuid, name: row.name, created_at: row.created_at, last_used_at: null };
  });
}

/** Removes a passkey of the viewer; the account keeps a second factor while TOTP or another passkey is left. */
export async function deletePasskey(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  await command(deps, viewer, anyUser, async (tx) => {
    const gone = await tx.db
      .deleteFrom('passkeys')
      .where('uuid', '=', uuid)
      .where('user_uuid', '=', viewer.uuid)
      .executeTakeFirst();
    if (Number(gone.numDeletedRows) !== 1) throw notFound('Passkey');
    const left = await tx.db.selectFrom('passkeys').select('uuid').where('user_uuid', '=', viewer.uuid).executeTakeFirst();
    const totp = await tx.db
      .selectFrom('user_totp')
      .select('user_uuid')
      .where('user_uuid', '=', viewer.uuid)
      .where('confirmed_at', 'is not', null)
      .executeTakeFirst();
    if (!left && !totp) await tx.db.updateTable('users').set({ has_two_factor: 0 }).where('uuid', '=', viewer.uuid).execute();
  });
}

/**
 * The options for `navigator.credentials.get()`, bound to the sign-in form's cookie: for the
 * second step, the passkeys of the user who gave the password; without a user (a passkey
 * sign-in), none are named and the authenticator offers its own (nothing says who exists).
 */
export async function passkeySignInOptions(
  deps: Deps,
  bound: string,
  userUuid: string | null,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const { rpID } = relyingParty(deps);
  const allow = userUuid ? await credentialsOf(deps, userUuid) : [];
  const options = await generateAuthenticationOptions({
    rpID,
    userVerification: userUuid ? 'preferred' : 'required',
    allowCredentials: allow.map((p) => ({ id: p.credential_id, transports: transportsOf(p.transports) })),
  });
  await storeChallenge(deps, options.challenge, userUuid ? 'second-step' : 'sign-in', userUuid, bound);
  return options;
}

/**
 * Checks a passkey answer of a sign-in (userUuid null) or of the second step of `userUuid`:
 * the challenge (once), origin, RP ID, signature, user verification for a sign-in without a
 * password, and the counter. Returns the user's uuid; any refusal is 400 passkey_refused.
 */
export async function verifyPasskeySignIn(deps: Deps, raw: string, bound: string, userUuid: string | null): Promise<string> {
  const { answer, challenge } = parseAnswer<AuthenticationResponseJSON>(deps, raw);
  await takeChallenge(deps, challenge, userUuid ? 'second-step' : 'sign-in', userUuid, bound);
  const row = await deps.db.selectFrom('passkeys').selectAll().where('credential_id', '=', answer.id).executeTakeFirst();
  if (!row || (userUuid !== null && row.user_uuid !== userUuid)) throw refused('This passkey is not known here.');
  const { rpID, origin } = relyingParty(deps);
  let newCounter: number;
  try {
    const result = await verifyAuthenticationResponse({
      response: answer,
      expectedChallenge: challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      credential: {
        id: row.credential_id,
        publicKey: new Uint8Array(Buffer.from(row.public_key, 'base64url')),
        counter: Number(row.counter),
        transports: transportsOf(row.transports),
      },
      requireUserVerification: userUuid === null,
    });
    if (!result.verified) throw new Error('not verified');
    newCounter = result.authenticationInfo.newCounter;
  } catch {
    throw refused('The passkey could not be checked.');
  }
  // the counter moves forward only (a cloned authenticator repeats or goes back); 0 means "no counter"
  const moved = await deps.db
    .updateTable('passkeys')
    .set({ counter: newCounter, last_used_at: nowIso() })
    .where('uuid', '=', row.uuid)
    .where((eb) => (newCounter === 0 ? eb('counter', '=', 0) : eb('counter', '<', newCounter)))
    .executeTakeFirst();
  if (Number(moved.numUpdatedRows) !== 1) throw refused('This passkey repeated an old signature counter.');
  return row.user_uuid;
}
