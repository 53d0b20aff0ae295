import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { CreateTokenBody, CreatedToken, ListTokensQuery, Token, TokenParams } from './schemas.ts';
import { createToken, deleteToken, getToken, listTokens, revokeToken } from './service.ts';

export async function tokensRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['api-tokens'];

  r.get(
    '/api-tokens',
    {
      schema: {
        tags,
        summary: "List the caller's API tokens (staff: anyone's with username)",
        description:
          'A non-staff caller naming another user gets 403 (whether or not that user exists); staff naming an unknown user get 404. `name` filters on the exact name. `ordering` must be one of the six values (anything else is 400); tokens never used sort last in both last_used_at directions.',
        querystring: ListTokensQuery,
        response: { 200: Page(Token), ...errors(403) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const p = pageParams(request.query);
      const rows = await listTokens(deps, viewer, { ...request.query, offset: p.offset, limit: p.limit });
      return pageOf(request, reply, p, rows);
    },
  );

  r.post(
    '/api-tokens',
    {
      config: { rateLimit: 'api:create-token' },
      schema: {
        tags,
        summary: 'Create an API token; the secret is in `token`, shown only in this response',
        description:
          "The secret is weft_ followed by 40 base62 characters and is stored only as its SHA-256. `expires_at` is returned in canonical UTC form; a past or malformed value is 400. `username` other than the caller's needs staff (403, even when no such user exists). Emits token-created in the owner's user scope.",
        body: CreateTokenBody,
        response: { 201: CreatedToken, ...errors(403) },
      },
    },
    async (request, reply) => reply.status(201).send(await createToken(deps, requireViewer(request), request.body)),
  );

  r.get(
    '/api-tokens/self',
    { schema: { tags, summary: 'The token used for this request', response: { 200: Token } } },
    async (request) => {
      const viewer = requireViewer(request);
      return getToken(deps, viewer, viewer.tokenUuid);
    },
  );

  r.get(
    '/api-tokens/:uuid',
    {
      schema: {
        tags,
        summary: 'Get one of your tokens (staff: any)',
        description: "Another user's token is 404 to non-staff callers.",
        params: TokenParams,
        response: { 200: Token },
      },
    },
    async (request) => getToken(deps, requireViewer(request), request.params.uuid),
  );

  r.delete(
    '/api-tokens/:uuid',
    {
      schema: {
        tags,
        summary: 'Delete a token; it stops working at once',
        description:
          "Takes no body (an empty JSON object is accepted). Another user's token is 404 to non-staff callers. Emits token-deleted in the owner's user scope.",
        params: TokenParams,
        response: { 204: { type: 'null' } },
      },
    },
    async (request, reply) => {
      await deleteToken(deps, requireViewer(request), request.params.uuid);
      return reply.status(204).send();
    },
  );

  r.put(
    '/api-tokens/:uuid/revoke',
    {
      schema: {
        tags,
        summary: 'Revoke a token; it stops working at once. Idempotent.',
        description:
          "Takes no body (an empty JSON object is accepted). Another user's token is 404 to non-staff callers. Revoking a revoked token returns it unchanged and emits nothing; otherwise emits token-revoked in the owner's user scope.",
        params: TokenParams,
        response: { 200: Token },
      },
    },
    async (request) => revokeToken(deps, requireViewer(request), request.params.uuid),
  );
}
