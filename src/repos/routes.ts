import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { repoAt } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { Availability, Page } from '../http/schemas.ts';
import {
  CheckRepoSlugQuery,
  CreateRepoBody,
  ListReposQuery,
  Repo,
  TeamOwnerParams,
  UpdateRepoBody,
  UserOwnerParams,
} from './schemas.ts';
import { checkRepoSlug, createRepo, deleteRepo, getRepo, getRepoByUuid, listRepos, setArchived, updateRepo } from './service.ts';

const OWNER_FORMS = [
  {
    kind: 'team' as const,
    prefix: '/teams/:team_slug',
    params: TeamOwnerParams,
    name: (p: { team_slug?: string; username?: string }) => p.team_slug ?? '',
    createWho:
      'a maintainer or owner of the team, or staff (the team is 404 to non-members; 403 team_inactive when it is inactive)',
    checkWho: 'members of the team and staff (404 to anyone else)',
    listWho: 'The team is resolved without a membership check: an outsider sees its public repos only.',
  },
  {
    kind: 'user' as const,
    prefix: '/users/:username',
    params: UserOwnerParams,
    name: (p: { team_slug?: string; username?: string }) => p.username ?? '',
    createWho: 'that user, or staff (403 for anyone else)',
    checkWho: 'that user and staff (403 for another user)',
    listWho: "Others see the user's public repos only.",
  },
];

export async function reposRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['repos'];

  for (const form of OWNER_FORMS) {
    r.post(
      `${form.prefix}/repos`,
      {
        config: { rateLimit: 'api:create-repo' },
        schema: {
          tags,
          summary: `Create a ${form.kind} repo`,
          description:
            `Allowed for ${form.createWho}. The slug is lower-cased; a slug taken in the namespace is 409 slug_taken. ` +
            'Defaults: visibility private, default_branch main, about "", public_repo_pull_policy any, max_disk_bytes from the server setting.',
          params: form.params,
          body: CreateRepoBody,
          response: { 201: Repo, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        const viewer = requireViewer(request);
        const repo = await createRepo(deps, viewer, form.kind, form.name(request.params), request.body);
        return reply.status(201).send(repo);
      },
    );

    r.get(
      `${form.prefix}/repos`,
      {
        schema: {
          tags,
          summary: `List a ${form.kind}'s repos that the caller may read, oldest first`,
          description: form.listWho,
          params: form.params,
          querystring: ListReposQuery,
          response: { 200: Page(Repo) },
        },
      },
      async (request, reply) => {
        const viewer = requireViewer(request);
        const p = pageParams(request.query);
        const rows = await listRepos(deps, viewer, form.kind, form.name(request.params), p);
        return pageOf(request, reply, p, rows);
      },
    );

    r.get(
      `${form.prefix}/check-repo-slug`,
      {
        schema: {
          tags,
          summary: 'Is a repo slug available in this namespace? 200 when free, 409 with a free suggestion when taken',
          description: `For ${form.checkWho}. A missing or malformed slug is 400. A token restricted to repos (README "Scoped tokens") creates no repos and gets 403 forbidden here.`,
          params: form.params,
          querystring: CheckRepoSlugQuery,
          response: { 200: Availability, 409: Availability, ...errors(403) },
        },
      },
      async (request, reply) => {
        const viewer = requireViewer(request);
        const result = await checkRepoSlug(deps, viewer, form.kind, form.name(request.params), request.query.slug);
        return reply.status(result.available ? 200 : 409).send(result);
      },
    );
  }

  r.get(
    '/repos/:repo_uuid',
    {
      schema: {
        tags,
        summary: 'Get a repo by its uuid (read access; 404 when there is none or the caller may not read it)',
        description: 'The same answer as by its names; an event names its repo by uuid (`repo.uuid`).',
        params: Type.Object({ repo_uuid: Type.String({ maxLength: 100 }) }),
        response: { 200: Repo },
      },
    },
    async (request) => getRepoByUuid(deps, requireViewer(request), request.params.repo_uuid),
  );

  for (const form of REPO_FORMS) {
    const params = repoParamsSchema(form);

    r.get(
      form.prefix,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'Get a repo (read access; a private repo is 404 to outsiders)',
          params,
          response: { 200: Repo },
        },
      },
      async (request) => getRepo(deps, requireViewer(request), repoAt(request)),
    );

    r.put(
      form.prefix,
      {
        schema: {
          tags,
          summary: 'Update a repo (maintain level)',
          description:
            'Every field is optional, name and slug included (slug in both owner forms). ' +
            'max_disk_bytes is staff only: a non-staff body that contains it is 403 even when the value is unchanged. ' +
            'public_repo_pull_policy "team" is 409 invalid_pull_policy on a user repo and on a team repo that is (or becomes) private; ' +
            'making a repo private later keeps a stored "team" policy (on a private team repo it admits the same people as "any"). ' +
            'A slug taken in the namespace is 409 slug_taken. An archived repo is 403 repo_archived; unarchive it first.',
          params,
          body: UpdateRepoBody,
          response: { 200: Repo, ...errors(403, 409) },
        },
      },
      async (request) => updateRepo(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body),
    );

    r.delete(
      form.prefix,
      {
        schema: {
          tags,
          summary: 'Delete a repo (team owner, user owner, staff)',
          description:
            'Its protections, pulls and reviews are deleted with it. Forks of it are kept as standalone repos: their ' +
            'fork_of_uuid becomes null and their fork records go away (as Gitea does); each gets a repo-updated event ' +
            '(action fork_source_deleted) whose source_repo_uuid only staff see (README "Event privacy"). Emits ' +
            "repo-deleted in the former owner's scope, recording the repo's is_active: for an is_active=false team " +
            "repo it is shown to the team's maintainers and owners only. Allowed on an archived repo.",
          params,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        await deleteRepo(deps, requireViewer(request), repoRef(request.params as RepoParams));
        return reply.status(204).send();
      },
    );

    r.put(
      `${form.prefix}/archive`,
      {
        schema: {
          tags,
          summary: 'Archive a repo: it becomes read-only (maintain level; idempotent)',
          params,
          response: { 200: Repo, ...errors(403) },
        },
      },
      async (request) => setArchived(deps, requireViewer(request), repoRef(request.params as RepoParams), true),
    );

    r.delete(
      `${form.prefix}/archive`,
      {
        schema: {
          tags,
          summary: 'Unarchive a repo (maintain level; idempotent)',
          params,
          response: { 200: Repo, ...errors(403) },
        },
      },
      async (request) => setArchived(deps, requireViewer(request), repoRef(request.params as RepoParams), false),
    );
  }
}
