import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { errors } from '../http/route-schemas.ts';
import {
  AuthSource,
  AuthSourceParams,
  AuthSourceTest,
  CodeBody,
  CreateAuthSourceBody,
  RecoveryCodes,
  TotpEnrolment,
  TeamSlugParams,
  TwoFactorRequirement,
  TwoFactorRequirementBody,
  TwoFactorStatus,
  UpdateAuthSourceBody,
} from './schemas.ts';
import { CreateSyncRuleBody, SyncRule, createSyncRule, deleteSyncRule, listSyncRules } from './sync.ts';
import { getSiteRequirement, getTeamRequirement, setSiteRequirement, setTeamRequirement } from './requirement.ts';
import { confirmTotp, disableTotp, regenerateRecoveryCodes, startTotp, twoFactorStatus } from './two-factor.ts';
import { createSource, deleteSource, getSource, listSources, testSource, updateSource } from './sources.ts';

const STAFF =
  'Staff only (403 to others). Secrets (client_secret, bind_password) are sealed with the server secret and never returned.';

/** Sign-in sources (docs/signin.md). */
export async function signinRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['sign-in'];

  r.get(
    '/admin/auth-sources',
    {
      schema: {
        tags,
        summary: 'Sign-in sources (OIDC and LDAP), in the order LDAP sign-in tries them',
        description: STAFF,
        response: { 200: Type.Array(AuthSource), ...errors(403) },
      },
    },
    async (request) => listSources(deps, requireViewer(request)),
  );
  r.post(
    '/admin/auth-sources',
    {
      schema: {
        tags,
        summary: 'Add a sign-in source',
        description:
          `${STAFF} kind oidc needs oidc settings, kind ldap ldap settings (400 otherwise). A taken name is 409 source_name_taken. ` +
          'Defaults: enabled true, auto_create_users true, satisfies_two_factor false; OIDC scopes ["openid","profile","email","groups"], ' +
          'username_claim preferred_username, email_claim email, groups_claim groups; LDAP user_filter (uid={username}), ' +
          'username_attribute uid, email_attribute mail, group_filter (member={dn}), group_name_attribute cn.',
        body: CreateAuthSourceBody,
        response: { 201: AuthSource, ...errors(403, 409) },
      },
    },
    async (request, reply) => reply.status(201).send(await createSource(deps, requireViewer(request), request.body)),
  );
  r.get(
    '/admin/auth-sources/:uuid',
    {
      schema: {
        tags,
        summary: 'One sign-in source',
        description: STAFF,
        params: AuthSourceParams,
        response: { 200: AuthSource, ...errors(403) },
      },
    },
    async (request) => getSource(deps, requireViewer(request), request.params.uuid),
  );
  r.put(
    '/admin/auth-sources/:uuid',
    {
      schema: {
        tags,
        summary: 'Change a sign-in source; omitted fields keep their values',
        description:
          `${STAFF} The kind cannot change. oidc or ldap, when given, replaces the settings (omitted settings take their defaults); ` +
          'an omitted client_secret or bind_password keeps the stored one, an empty one removes it.',
        params: AuthSourceParams,
        body: UpdateAuthSourceBody,
        response: { 200: AuthSource, ...errors(403, 409) },
      },
    },
    async (request) => updateSource(deps, requireViewer(request), request.params.uuid, request.body),
  );
  r.delete(
    '/admin/auth-sources/:uuid',
    {
      schema: {
        tags,
        summary: 'Remove a sign-in source and the identities linked through it',
        description: `${STAFF} Users it created stay, with the other ways they have to sign in.`,
        params: AuthSourceParams,
        response: { 204: { type: 'null' }, ...errors(403) },
      },
    },
    async (request, reply) => {
      await deleteSource(deps, requireViewer(request), request.params.uuid);
      return reply.status(204).send();
    },
  );
  r.post(
    '/admin/auth-sources/:uuid/test',
    {
      schema: {
        tags,
        summary: 'Test a sign-in source: OIDC discovery, or an LDAP connection, service bind and user base',
        description: `${STAFF} Takes no body. Always 200 for a source that exists: ok says whether it worked, detail what failed.`,
        params: AuthSourceParams,
        response: { 200: AuthSourceTest, ...errors(403) },
      },
    },
    async (request) => testSource(deps, requireViewer(request), request.params.uuid),
  );

  const LOCK =
    'A wrong code is 400 invalid_two_factor_code; five wrong codes in 15 minutes lock the second step for 15 minutes (429 rate_limited ' +
    'with Retry-After), on every path that takes a code. Failed attempts count against the api:login rate limit as failed sign-ins do.';
  r.get(
    '/user/two-factor',
    {
      config: { twoFactorExempt: true },
      schema: {
        tags,
        summary: "The caller's second factors",
        description: 'required_by names the teams that require a second factor of their members.',
        response: { 200: TwoFactorStatus },
      },
    },
    async (request) => twoFactorStatus(deps, requireViewer(request)),
  );
  r.post(
    '/user/two-factor/totp',
    {
      config: { rateLimit: 'api:login', twoFactorExempt: true },
      schema: {
        tags,
        summary: 'Start setting up an authenticator app (TOTP): a new secret, not active until confirmed',
        description:
          'Takes no body. RFC 6238: SHA-1, 6 digits, 30 seconds. Replaces a secret not confirmed yet; 409 totp_enabled when one is ' +
          'confirmed. Failed attempts count against api:login (per address) as failed sign-ins do.',
        response: { 201: TotpEnrolment, ...errors(409, 429) },
      },
    },
    async (request, reply) => reply.status(201).send(await startTotp(deps, requireViewer(request))),
  );
  r.post(
    '/user/two-factor/totp/confirm',
    {
      config: { rateLimit: 'api:login', twoFactorExempt: true },
      schema: {
        tags,
        summary: 'Confirm the authenticator app with a current code: TOTP becomes active; returns ten recovery codes, shown once',
        description: `Recovery codes are stored hashed and each works once. ${LOCK} 409 totp_enabled when already confirmed.`,
        body: CodeBody,
        response: { 200: RecoveryCodes, ...errors(409, 429) },
      },
    },
    async (request) => confirmTotp(deps, requireViewer(request), request.body.code),
  );
  r.delete(
    '/user/two-factor/totp',
    {
      config: { rateLimit: 'api:login' },
      schema: {
        tags,
        summary: 'Remove the authenticator app and the recovery codes; needs a current code or a recovery code',
        description: `${LOCK} 409 totp_not_enabled when none is set up.`,
        body: CodeBody,
        response: { 204: { type: 'null' }, ...errors(409, 429) },
      },
    },
    async (request, reply) => {
      await disableTotp(deps, requireViewer(request), request.body.code);
      return reply.status(204).send();
    },
  );
  r.post(
    '/user/two-factor/recovery-codes',
    {
      config: { rateLimit: 'api:login' },
      schema: {
        tags,
        summary: 'Make a new set of ten recovery codes (the old ones stop working); needs a current code or a recovery code',
        description: `${LOCK} 409 totp_not_enabled when no authenticator app is set up.`,
        body: CodeBody,
        response: { 200: RecoveryCodes, ...errors(409, 429) },
      },
    },
    async (request) => regenerateRecoveryCodes(deps, requireViewer(request), request.body.code),
  );

  const REQUIRE =
    'While on, a member without a second factor (or signed in through a source that does not satisfy it) is refused on the ' +
    "team's repos and pages, API and git over HTTP and SSH, with 403 two_factor_required. affected lists who that is now, so the " +
    'person turning it on sees them first (GET before PUT). Turning it on needs a second factor of your own (403 two_factor_required).';
  r.get(
    '/teams/:team_slug/two-factor-requirement',
    {
      schema: {
        tags,
        summary: "The team's second-factor requirement and the members it affects",
        description: `Team owners and staff. ${REQUIRE}`,
        params: TeamSlugParams,
        response: { 200: TwoFactorRequirement, ...errors(403, 404) },
      },
    },
    async (request) => getTeamRequirement(deps, requireViewer(request), request.params.team_slug),
  );
  r.put(
    '/teams/:team_slug/two-factor-requirement',
    {
      schema: {
        tags,
        summary: "Require a second factor of the team's members, or stop requiring it",
        description: `Team owners and staff. ${REQUIRE}`,
        params: TeamSlugParams,
        body: TwoFactorRequirementBody,
        response: { 200: TwoFactorRequirement, ...errors(403, 404) },
      },
    },
    async (request) => setTeamRequirement(deps, requireViewer(request), request.params.team_slug, request.body.enabled),
  );
  const SITE =
    'Staff only. While on, every signed-in caller without a second factor is refused by the API (except GET /user and the ' +
    'routes that set up an authenticator app) with 403 two_factor_required, and a web session is sent to Settings, Security ' +
    'first; git over HTTP and SSH are refused too. affected lists the active users without a second factor (at most 500 named).';
  r.get(
    '/admin/two-factor-requirement',
    {
      schema: {
        tags,
        summary: 'The site-wide second-factor requirement and the users it affects',
        description: SITE,
        response: { 200: TwoFactorRequirement, ...errors(403) },
      },
    },
    async (request) => getSiteRequirement(deps, requireViewer(request)),
  );
  r.put(
    '/admin/two-factor-requirement',
    {
      schema: {
        tags,
        summary: 'Require a second factor of every user, or stop requiring it',
        description: `${SITE} Turning it on needs a second factor of your own (403 two_factor_required).`,
        body: TwoFactorRequirementBody,
        response: { 200: TwoFactorRequirement, ...errors(403) },
      },
    },
    async (request) => setSiteRequirement(deps, requireViewer(request), request.body.enabled),
  );

  const SYNC =
    'Team owners and staff. At every sign-in through the source, the user joins each team with a rule whose group they are in, ' +
    'at the highest matching role; a membership sync made is lowered or removed when no rule matches any more; memberships added ' +
    'by hand are never touched; the last owner is kept. Changes are the ordinary member events.';
  r.get(
    '/teams/:team_slug/sync-rules',
    {
      schema: {
        tags,
        summary: "The team's group-sync rules",
        description: SYNC,
        params: TeamSlugParams,
        response: { 200: Type.Array(SyncRule), ...errors(403, 404) },
      },
    },
    async (request) => listSyncRules(deps, requireViewer(request), request.params.team_slug),
  );
  r.post(
    '/teams/:team_slug/sync-rules',
    {
      schema: {
        tags,
        summary: 'Add a group-sync rule: members of a group of a sign-in source get a role in the team',
        description: `${SYNC} 400 when the source does not exist or the team has the rule already.`,
        params: TeamSlugParams,
        body: CreateSyncRuleBody,
        response: { 201: SyncRule, ...errors(400, 403, 404) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await createSyncRule(deps, requireViewer(request), request.params.team_slug, request.body)),
  );
  r.delete(
    '/teams/:team_slug/sync-rules/:uuid',
    {
      schema: {
        tags,
        summary: 'Remove a group-sync rule (memberships it made change at their next sign-in)',
        description: SYNC,
        params: Type.Object({ team_slug: Type.String({ minLength: 1, maxLength: 100 }), uuid: Type.String({ maxLength: 100 }) }),
        response: { 204: { type: 'null' }, ...errors(403, 404) },
      },
    },
    async (request, reply) => {
      await deleteSyncRule(deps, requireViewer(request), request.params.team_slug, request.params.uuid);
      return reply.status(204).send();
    },
  );
}
