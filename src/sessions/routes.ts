import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { ListSessionsQuery, Session, SessionParams } from './schemas.ts';
import { getSession, listSessions, revokeSession } from './service.ts';

/** Web sessions beside API tokens (README "Web interface"): listed and revoked through the API. */
export async function sessionsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['api-tokens'];
  r.get(
    '/sessions',
    {
      schema: {
        tags,
        summary: "List the caller's web sessions, newest first (staff: anyone's with username)",
        description:
          'A web session is a browser signed in at `POST /login` (README "Web interface"): its cookie secret is stored only as a ' +
          'SHA-256, and it expires 30 days after its last use. Revoked and expired sessions stay listed with their dates. ' +
          'A non-staff caller naming another user gets 403; staff naming an unknown user 404.',
        querystring: ListSessionsQuery,
        response: { 200: Page(Session), ...errors(403) },
      },
    },
    async (request, reply) => {
      const p = pageParams(request.query);
      const rows = await listSessions(deps, requireViewer(request), { ...request.query, offset: p.offset, limit: p.limit });
      return pageOf(request, reply, p, rows);
    },
  );
  r.get(
    '/sessions/:uuid',
    {
      schema: {
        tags,
        summary: 'One web session',
        description: "Another user's session is 404 to non-staff callers.",
        params: SessionParams,
        response: { 200: Session },
      },
    },
    async (request) => getSession(deps, requireViewer(request), request.params.uuid),
  );
  r.put(
    '/sessions/:uuid/revoke',
    {
      schema: {
        tags,
        summary: 'Revoke a web session: its cookie stops working at once, and its live streams end within seconds',
        description:
          "Takes no body. Another user's session is 404 to non-staff callers. Revoking a revoked session returns it unchanged.",
        params: SessionParams,
        response: { 200: Session },
      },
    },
    async (request) => revokeSession(deps, requireViewer(request), request.params.uuid),
  );
}
