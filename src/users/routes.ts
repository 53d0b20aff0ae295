import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireSecondFactor } from '../signin/two-factor.ts';
import { passwordSignIn } from '../signin/password-signin.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Availability, Page } from '../http/schemas.ts';
import { CreatedToken } from '../tokens/schemas.ts';
import {
  CheckUsernameQuery,
  CreateUserBody,
  ListUsersQuery,
  LoginBody,
  PingBody,
  PingResult,
  UpdateUserBody,
  User,
  UsernameParams,
} from './schemas.ts';
import { pingUser } from './ping.ts';
import { checkUsername, createUser, getUser, listUsers, login, updateUser, userToJson } from './service.ts';

export async function usersRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['users'];

  r.post(
    '/users',
    {
      schema: {
        tags,
        summary: 'Create a user (staff only)',
        description:
          "The username is trimmed and lower-cased; taken (case-insensitively) or reserved names are 409 username_taken. Emits user-created in the new user's scope.",
        body: CreateUserBody,
        response: { 201: User, ...errors(403, 409) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const { user } = await createUser(deps, viewer, request.body);
      return reply.status(201).send(userToJson(user, viewer));
    },
  );

  r.get(
    '/user',
    { config: { twoFactorExempt: true }, schema: { tags, summary: 'The authenticated user', response: { 200: User } } },
    async (request) => {
      const viewer = requireViewer(request);
      return userToJson(request.viewerUser ?? (await getUser(deps, viewer, viewer.username)), viewer);
    },
  );

  r.get(
    '/users',
    {
      schema: {
        tags,
        summary: 'List users (staff only), oldest first',
        description:
          '`search` matches a case-insensitive substring of the username, display name or email (% and _ are literal). Non-staff callers get 403. Users created in the same millisecond are ordered by uuid.',
        querystring: ListUsersQuery,
        response: { 200: Page(User), ...errors(403) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const p = pageParams(request.query);
      const rows = await listUsers(deps, viewer, { search: request.query.search, offset: p.offset, limit: p.limit });
      return pageOf(
        request,
        reply,
        p,
        rows.map((row) => userToJson(row, viewer)),
      );
    },
  );

  r.get(
    '/users/:username',
    { schema: { tags, summary: 'Get a user', params: UsernameParams, response: { 200: User } } },
    async (request) => {
      const viewer = requireViewer(request);
      return userToJson(await getUser(deps, viewer, request.params.username), viewer);
    },
  );

  r.put(
    '/users/:username',
    {
      schema: {
        tags,
        summary: 'Update a user (self or staff; is_staff and is_active by staff only)',
        description:
          "Another user's account is 403 for non-staff. Setting is_staff or is_active without staff is 403, even on oneself and even to the current value. A deactivated user's tokens get 401 and the user is 404 to non-staff. Emits user-updated listing the changed fields (never the password). Setting a password needs a token without scopes or repos (or a web session): a restricted token gets 403 forbidden, since a password logs in to an unrestricted token.",
        params: UsernameParams,
        body: UpdateUserBody,
        response: { 200: User, ...errors(403) },
      },
    },
    async (request) => {
      const viewer = requireViewer(request);
      return userToJson(await updateUser(deps, viewer, request.params.username, request.body), viewer);
    },
  );

  r.get(
    '/check-username',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Is a username available? 200 when free, 409 with a free suggestion when taken or reserved',
        description:
          'Reserved words are never available. The suggestion is the first free name-2, name-3, and so on, trimmed to 39 characters. A missing or malformed name is 400.',
        querystring: CheckUsernameQuery,
        response: { 200: Availability, 409: Availability },
      },
    },
    async (request, reply) => {
      const result = await checkUsername(deps, request.query.username);
      return reply.status(result.available ? 200 : 409).send(result);
    },
  );

  r.post(
    '/auth/login',
    {
      config: { public: true, rateLimit: 'api:login' },
      schema: {
        tags: ['auth'],
        summary: 'Exchange a username and password for a new API token',
        description:
          'A wrong password, an unknown or deactivated user, and a user without a password all get the same 401. An account with a ' +
          'second factor (docs/signin.md "Two-factor") then needs otp, a code of its authenticator app or a recovery code: without ' +
          'it 401 two_factor_required, wrong 401 invalid_two_factor_code; five wrong codes in 15 minutes lock the second step for 15 ' +
          'minutes (429 rate_limited with Retry-After). Tokens made here are not asked for a second factor later.',
        body: LoginBody,
        response: { 201: CreatedToken, ...errors(401, 429) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(
        await login(deps, request.body, async (username, password) => {
          const signed = await passwordSignIn(deps, username, password, (source, err) =>
            request.log.warn({ err, source }, 'LDAP sign-in source failed'),
          );
          // the second factor: checked once the password is right, so only who knows it learns of it
          if (signed.source?.row.satisfies_two_factor !== 1) await requireSecondFactor(deps, signed.user.uuid, request.body.otp);
          return signed.user;
        }),
      ),
  );
  r.post(
    '/users/:username/ping',
    {
      // The stored rate-limit rule for api:ping-user applies here (http/rate-limit.ts).
      config: { rateLimit: 'api:ping-user' },
      schema: {
        tags,
        summary: 'Ping a user: a user-mention event in their user scope; 201 with the rendered payload',
        description:
          'README "User ping". `body` is optional (absent or empty: a bare ping), Markdown of at most 1,000 characters (400 ' +
          'beyond); `body_html` is rendered as reply bodies are (sanitised, @mentions linked). An unknown or inactive user is ' +
          "404. The target's `ping_mentions` may refuse: `disabled` → 403 ping_mentions_disabled; `team_only` → 403 " +
          'ping_mentions_team_only unless caller and target share a team. A caller over the api:ping-user rate limit gets 429.',
        params: UsernameParams,
        body: PingBody,
        response: { 201: PingResult, ...errors(403, 404, 429) },
      },
      // No body at all is a bare ping, as an empty object is.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const result = await pingUser(deps, requireViewer(request), request.params.username, request.body.body ?? '');
      return reply.status(201).send(result);
    },
  );
  void Type;
}
