import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { addMember, getMember, listMembers, removeMember, updateMember } from './members-service.ts';
import { AddMemberBody, Member, MemberParams, PagedQuery, TeamParams, UpdateMemberBody } from './schemas.ts';

export async function membersRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['teams'];

  r.get(
    '/teams/:team_slug/members',
    {
      schema: {
        tags,
        summary: "A team's members, oldest membership first (members and staff; 404 to anyone else)",
        description: 'Members whose accounts were deactivated are still listed, so owners can see and remove them.',
        params: TeamParams,
        querystring: PagedQuery,
        response: { 200: Page(Member) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const p = pageParams(request.query);
      const rows = await listMembers(deps, viewer, request.params.team_slug, p);
      return pageOf(request, reply, p, rows);
    },
  );

  r.post(
    '/teams/:team_slug/members',
    {
      schema: {
        tags,
        summary: 'Add a member (team owner or staff)',
        description:
          'role is owner, maintainer, member or reader (anything else 400). An unknown or inactive username is 404; ' +
          'an existing member 409 already_member. An inactive team refuses non-staff with 403 team_inactive.',
        params: TeamParams,
        body: AddMemberBody,
        response: { 201: Member, ...errors(403, 409) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await addMember(deps, requireViewer(request), request.params.team_slug, request.body)),
  );

  r.get(
    '/teams/:team_slug/members/:username',
    {
      schema: {
        tags,
        summary: 'One member (members and staff; 404 when not a member)',
        params: MemberParams,
        response: { 200: Member },
      },
    },
    async (request) => getMember(deps, requireViewer(request), request.params.team_slug, request.params.username),
  );

  r.put(
    '/teams/:team_slug/members/:username',
    {
      schema: {
        tags,
        summary: "Change a member's role (team owner or staff)",
        description:
          'Demoting the last owner is 409 last_owner. Setting the role a member already has is a no-op 200. ' +
          'An inactive team refuses non-staff with 403 team_inactive.',
        params: MemberParams,
        body: UpdateMemberBody,
        response: { 200: Member, ...errors(403, 409) },
      },
    },
    async (request) =>
      updateMember(deps, requireViewer(request), request.params.team_slug, request.params.username, request.body),
  );

  r.delete(
    '/teams/:team_slug/members/:username',
    {
      schema: {
        tags,
        summary: 'Remove a member (team owner or staff), or leave the team (any member, for themself)',
        description:
          'As on GitHub, a member of any role may remove themself (leave), also from an inactive team. Removing ' +
          'someone else needs the owner role or staff, and an inactive team refuses that to non-staff with 403 ' +
          'team_inactive. Removing the last owner is 409 last_owner.',
        params: MemberParams,
        response: { 204: { type: 'null' }, ...errors(403, 409) },
      },
    },
    async (request, reply) => {
      await removeMember(deps, requireViewer(request), request.params.team_slug, request.params.username);
      return reply.status(204).send();
    },
  );
}
