import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import {
  CreateInviteBody,
  InviteParams,
  ListInvitesQuery,
  SignupBody,
  SignupInvite,
  SignupResult,
  UpdateInviteBody,
} from './schemas.ts';
import { createInvite, deleteInvite, getInvite, listInvites, updateInvite } from './service.ts';
import { signup } from './signup.ts';

const WHO =
  'Staff see and manage every invite; other users only the invites they created (others are 404). Only a pending invite ' +
  'can be changed or deleted (409 invite_not_pending).';

export async function invitesRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['signup-invites'];

  r.get(
    '/signup-invites',
    {
      schema: {
        tags,
        summary: 'Signup invites, oldest first unless sorted',
        description: `${WHO} status is derived from accepted_at and the clock.`,
        querystring: ListInvitesQuery,
        response: { 200: Page(SignupInvite) },
      },
    },
    async (request, reply) => {
      const p = pageParams(request.query);
      return pageOf(request, reply, p, await listInvites(deps, requireViewer(request), request.query, p));
    },
  );

  r.post(
    '/signup-invites',
    {
      config: { rateLimit: 'api:create-invite' },
      schema: {
        tags,
        summary: 'Create a signup invite',
        description:
          'Staff always; with the site setting signup_invite_creators = users, also any active user whose account is at least ' +
          'signup_invite_min_account_age old (403 otherwise). A non-staff creator may create at most signup_invite_max_per_24h ' +
          'invites in any 24 hours (deleted ones count); beyond it 429 rate_limited with Retry-After. expires_at in the past is 400. ' +
          'Rate-limited as api:create-invite.',
        body: CreateInviteBody,
        response: { 201: SignupInvite, ...errors(403, 429) },
      },
    },
    async (request, reply) => reply.status(201).send(await createInvite(deps, requireViewer(request), request.body)),
  );

  r.get(
    '/signup-invites/:uuid',
    { schema: { tags, summary: 'Get a signup invite', description: WHO, params: InviteParams, response: { 200: SignupInvite } } },
    async (request) => getInvite(deps, requireViewer(request), request.params.uuid),
  );

  r.put(
    '/signup-invites/:uuid',
    {
      schema: {
        tags,
        summary: 'Change a pending signup invite; omitted fields keep their values',
        description: `${WHO} expires_at in the past is 400.`,
        params: InviteParams,
        body: UpdateInviteBody,
        response: { 200: SignupInvite, ...errors(409) },
      },
    },
    async (request) => updateInvite(deps, requireViewer(request), request.params.uuid, request.body),
  );

  r.delete(
    '/signup-invites/:uuid',
    {
      schema: {
        tags,
        summary: 'Delete a pending signup invite',
        description: WHO,
        params: InviteParams,
        response: { 204: { type: 'null' }, ...errors(409) },
      },
    },
    async (request, reply) => {
      await deleteInvite(deps, requireViewer(request), request.params.uuid);
      return reply.status(204).send();
    },
  );

  r.post(
    '/signup',
    {
      config: { public: true, rateLimit: 'api:signup' },
      schema: {
        tags: ['auth'],
        summary: 'Create an account (public); returns the user and a new API token',
        description:
          'Governed by the site settings: signups_enabled false is 403 signups_disabled; signups_require_invite true without ' +
          'invite_uuid is 403 invite_required. With an invite: unknown 404, another email 403 invite_email_mismatch (emails ' +
          'compare case-insensitively), expired 409 invite_expired, used 409 invite_used. A taken username is 409 username_taken. ' +
          'The invite becomes accepted in the same transaction: of two signups racing for one invite, one succeeds and the other ' +
          'is 409. Rate-limited as api:signup (per client IP).',
        body: SignupBody,
        response: { 201: SignupResult, ...errors(403, 409) },
      },
    },
    async (request, reply) => reply.status(201).send(await signup(deps, request.body)),
  );
}
