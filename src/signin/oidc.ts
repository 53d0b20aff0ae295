import type { Deps } from '../deps.ts';
import type { ExternalProfile } from './identities.ts';
import { client, discover } from './oidc-client.ts';
import type { Source } from './types.ts';

/**
 * The OIDC authorization code flow (docs/signin.md "OIDC"): PKCE S256, `state` and `nonce`
 * kept in a sealed, HttpOnly cookie of the browser that started the flow (so a callback from
 * another browser fails), the ID token checked by openid-client (issuer, audience, signature,
 * expiry, nonce), claims from the ID token completed by the userinfo endpoint.
 */
export const FLOW_COOKIE = 'weft_oidc';
const FLOW_PURPOSE = 'oidc-flow';
export const FLOW_TTL_MS = 10 * 60_000;

export interface Flow {
  source: string;
  verifier: string;
  state: string;
  nonce: string;
  next: string;
  /** set when a signed-in user links this identity from Security settings */
  link: string | null;
  exp: number;
}

/** A sealed value as a cookie value (the cookie alphabet has no dots). */
const toCookie = (sealed: string) => {
  const [, id, data] = sealed.split('.');
  return `${id}${data}`;
};
const fromCookie = (value: string) => `s1.${value.slice(0, 8)}.${value.slice(8)}`;

export const redirectUri = (deps: Deps, source: Source) =>
  `${deps.config.publicUrl.replace(/\/$/, '')}/login/oidc/${encodeURIComponent(source.row.name)}/callback`;

/** Where to send the browser, and the flow cookie's value. */
export async function beginOidc(
  deps: Deps,
  source: Source,
  opts: { next: string; link: string | null },
): Promise<{ url: string; cookie: string }> {
  const config = await discover(source, source.secret());
  const verifier = client.randomPKCECodeVerifier();
  const flow: Flow = {
    source: source.row.uuid,
    verifier,
    state: client.randomState(),
    nonce: client.randomNonce(),
    next: opts.next,
    link: opts.link,
    exp: Date.now() + FLOW_TTL_MS,
  };
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri(deps, source),
    scope: source.oidc!.scopes.join(' '),
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: flow.state,
    nonce: flow.nonce,
  });
  return { url: url.href, cookie: toCookie(deps.secret.seal(FLOW_PURPOSE, JSON.stringify(flow))) };
}

export function readFlow(deps: Deps, value: string | null): Flow | null {
  if (!value) return null;
  try {
    const flow = JSON.parse(deps.secret.open(FLOW_PURPOSE, fromCookie(value))) as Flow;
    return flow.exp > Date.now() ? flow : null;
  } catch {
    return null;
  }
}

const claimText = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

/** Exchanges the code of the callback's URL and reads the user's profile. Throws when any check fails. */
export async function finishOidc(deps: Deps, source: Source, flow: Flow, callbackUrl: URL): Promise<ExternalProfile> {
  const config = await discover(source, source.secret());
  const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
    pkceCodeVerifier: flow.verifier,
    expectedState: flow.state,
    expectedNonce: flow.nonce,
    idTokenExpected: true,
  });
  const idClaims = tokens.claims()!;
  let claims: Record<string, unknown> = { ...idClaims };
  if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
    try {
      const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
      // the ID token's claims win; userinfo fills in what it lacks
      claims = { ...info, ...idClaims };
    } catch {
      // the ID token's claims are enough when userinfo does not answer
    }
  }
  const o = source.oidc!;
  const groupsClaim = claims[o.groups_claim];
  return {
    subject: idClaims.sub,
    username: claimText(claims[o.username_claim]) || claimText(claims.preferred_username) || claimText(claims.email),
    email: claimText(claims[o.email_claim]),
    emailVerified: claims.email_verified !== false,
    displayName: claimText(claims.name),
    groups: Array.isArray(groupsClaim)
      ? groupsClaim.map(claimText).filter(Boolean)
      : typeof groupsClaim === 'string'
        ? [groupsClaim]
        : [],
  };
}
