import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { pagedRepoList } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { CreateForkQuery, Fork, ForkTeamParam, ForkUserParam, ForkUuidParams, ListForksQuery } from './schemas.ts';
import { createFork, getForkByUuid, getForkIn, getOwnFork, listForks } from './service.ts';

export async function forksRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['forks'];

  r.get(
    '/forks/:fork_uuid',
    {
      schema: {
        tags,
        summary: 'Get a fork record; 404 unless the caller can read the fork repo and its source',
        description:
          'A fork record names its source, so it is shown only to callers who can read both repos: a fork made public ' +
          'never reveals a private source (the fork repo itself stays readable).',
        params: ForkUuidParams,
        response: { 200: Fork },
      },
    },
    async (request) => getForkByUuid(deps, requireViewer(request), request.params.fork_uuid),
  );

  for (const form of REPO_FORMS) {
    r.post(
      `${form.prefix}/forks`,
      {
        schema: {
          tags,
          summary: 'Fork the repo (read access); no body',
          description:
            "Forks into the caller's user namespace, or with ?team=slug into a team where the caller is a maintainer or owner " +
            '(the team is 404 to non-members, 403 for lower roles, 403 team_inactive when inactive). The fork keeps the source slug ' +
            '(409 slug_taken when the namespace has it) and copies name, description, about, visibility and default_branch. ' +
            'An archived source can be forked; the fork is not archived.',
          params: repoParamsSchema(form),
          querystring: CreateForkQuery,
          response: { 201: Fork, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        const fork = await createFork(deps, requireViewer(request), repoRef(request.params as RepoParams), request.query.team);
        return reply.status(201).send(fork);
      },
    );

    r.get(
      `${form.prefix}/fork`,
      {
        schema: {
          tags,
          summary: "This repo's own fork record; 404 when it is not a fork",
          description: 'Also 404 when the caller cannot read the source repo (the record would name a private repo).',
          params: repoParamsSchema(form),
          response: { 200: Fork },
        },
      },
      async (request) => getOwnFork(deps, requireViewer(request), repoRef(request.params as RepoParams)),
    );

    r.get(
      `${form.prefix}/forks`,
      {
        schema: {
          tags,
          summary: 'Forks of this repo that the caller can read, oldest first',
          params: repoParamsSchema(form),
          querystring: ListForksQuery,
          response: { 200: Page(Fork) },
        },
      },
      pagedRepoList(({ viewer, ref }, p) => listForks(deps, viewer, ref, p)),
    );

    r.get(
      `${form.prefix}/forks/team/:fork_team_slug`,
      {
        schema: {
          tags,
          summary: "The fork of this repo in a team's namespace, or 404",
          description: 'Also 404 when the fork exists but the caller cannot read it. With several, the oldest.',
          params: repoParamsSchema(form, ForkTeamParam),
          response: { 200: Fork },
        },
      },
      async (request) => {
        const params = request.params as RepoParams & { fork_team_slug: string };
        return getForkIn(deps, requireViewer(request), repoRef(params), 'team', params.fork_team_slug);
      },
    );

    r.get(
      `${form.prefix}/forks/user/:fork_username`,
      {
        schema: {
          tags,
          summary: "The fork of this repo in a user's namespace, or 404",
          description: 'Also 404 when the fork exists but the caller cannot read it. With several, the oldest.',
          params: repoParamsSchema(form, ForkUserParam),
          response: { 200: Fork },
        },
      },
      async (request) => {
        const params = request.params as RepoParams & { fork_username: string };
        return getForkIn(deps, requireViewer(request), repoRef(params), 'user', params.fork_username);
      },
    );
  }
}
