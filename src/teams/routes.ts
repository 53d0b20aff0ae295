import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Availability, Page } from '../http/schemas.ts';
import { membersRoutes } from './members-routes.ts';
import {
  CheckTeamSlugQuery,
  CreateTeamBody,
  ListTeamsQuery,
  SuggestUsersQuery,
  SuggestedUsers,
  Team,
  TeamParams,
  UpdateTeamBody,
} from './schemas.ts';
import { checkTeamSlug, createTeam, getTeam, listTeams, teamToJson, updateTeam } from './service.ts';
import { suggestUsers } from './suggest.ts';

export async function teamsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['teams'];

  r.post(
    '/teams',
    {
      schema: {
        tags,
        summary: 'Create a team; the caller becomes its owner',
        description:
          'Any authenticated user may create a team. The slug follows the username rules and is lower-cased; ' +
          'a taken or reserved slug is 409 slug_taken.',
        body: CreateTeamBody,
        response: { 201: Team, ...errors(409) },
      },
    },
    async (request, reply) => reply.status(201).send(teamToJson(await createTeam(deps, requireViewer(request), request.body))),
  );

  r.get(
    '/teams',
    {
      schema: {
        tags,
        summary: "The caller's teams (any role), oldest first; all=true lists every team (staff only)",
        description: 'Inactive teams are listed too (see is_active). all=true by a non-staff caller is 403.',
        querystring: ListTeamsQuery,
        response: { 200: Page(Team), ...errors(403) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const p = pageParams(request.query);
      const rows = await listTeams(deps, viewer, { all: request.query.all, offset: p.offset, limit: p.limit });
      return pageOf(request, reply, p, rows.map(teamToJson));
    },
  );

  r.get(
    '/teams/:team_slug',
    {
      schema: {
        tags,
        summary: 'Get a team (members and staff; 404 to anyone else)',
        params: TeamParams,
        response: { 200: Team },
      },
    },
    async (request) => teamToJson(await getTeam(deps, requireViewer(request), request.params.team_slug)),
  );

  r.put(
    '/teams/:team_slug',
    {
      schema: {
        tags,
        summary: 'Update a team (team owner or staff; is_active by staff only)',
        description:
          'name and slug are required; is_active, when present at all, needs staff (403 otherwise). Outsiders get 404, ' +
          'members below owner 403. A taken or reserved new slug is 409 slug_taken. An inactive team refuses changes by ' +
          'non-staff with 403 team_inactive; staff may still change it and reactivate it.',
        params: TeamParams,
        body: UpdateTeamBody,
        response: { 200: Team, ...errors(403, 409) },
      },
    },
    async (request) => teamToJson(await updateTeam(deps, requireViewer(request), request.params.team_slug, request.body)),
  );

  r.get(
    '/check-team-slug',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Is a team slug available? 200 when free, 409 with a free suggestion when taken or reserved',
        description: 'The slug follows the username rules (lower-cased first); a missing or malformed slug is 400.',
        querystring: CheckTeamSlugQuery,
        response: { 200: Availability, 409: Availability },
      },
    },
    async (request, reply) => {
      const result = await checkTeamSlug(deps, request.query.slug);
      return reply.status(result.available ? 200 : 409).send(result);
    },
  );

  r.get(
    '/suggest-users',
    {
      config: { public: true },
      schema: {
        tags: ['users'],
        summary: 'Suggest up to 10 active users by name prefix or exact email',
        description:
          'Users whose username or display name starts with `name` (case-insensitive), or whose email equals `email` ' +
          '(whole address, case-insensitive); both may be given (either matches). Ordered by username. Emails are never ' +
          'returned. Neither `name` nor `email` given: 400. With `team_slug`, only members of that team; the team must ' +
          'be visible to the caller (its members and staff), otherwise 404 as for an unknown team (anonymous callers ' +
          'included), so team membership never leaks.',
        querystring: SuggestUsersQuery,
        response: { 200: SuggestedUsers },
      },
    },
    async (request) => ({ results: await suggestUsers(deps, request.viewer, request.query) }),
  );

  await membersRoutes(r, deps);
}
