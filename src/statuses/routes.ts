import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page, PageQuery } from '../http/schemas.ts';
import { CombinedStatus, CommitStatus, CreateStatusBody, RefParam, ShaParam } from './schemas.ts';
import { combinedStatus, createStatus, listStatuses } from './service.ts';

const CREATE_RULES =
  'Write access (403 otherwise; 404 without read access); 403 repo_archived / team_inactive. `sha` must be 40 hex ' +
  'digits (400) and a commit of the repo (404): for a pull from a fork, its head is one once the pull exists (the ' +
  "pull's kept head, refs/pull/{number}/head). Statuses are never changed or deleted: a new status of the same context " +
  'supersedes the earlier one. Emits `status-created` (repo scope) with `{repo_uuid, status, branches}`, `branches` ' +
  'being the branches whose tip is that sha (a webhook branch_filter matches them).';

const REF_RULES =
  'Read access. `{ref}` is a branch, a tag or a commit sha (full, or a unique prefix of 7+ hex digits), resolved as by ' +
  'the code-reading routes; a ref holding `/` is sent percent-encoded (`feature%2Fx`). An unknown ref is 404.';

type StatusPath = RepoParams & { sha: string; ref: string };

export async function statusesRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['statuses'];
  const at = (request: FastifyRequest) => {
    const p = request.params as StatusPath;
    return { viewer: requireViewer(request), ref: repoRef(p), p };
  };

  for (const form of REPO_FORMS) {
    r.post(
      `${form.prefix}/statuses/:sha`,
      {
        schema: {
          tags,
          summary: 'Report a status on a commit (CI results)',
          description: CREATE_RULES,
          params: repoParamsSchema(form, ShaParam),
          body: CreateStatusBody,
          response: { 201: CommitStatus, ...errors(400, 403) },
        },
      },
      async (request, reply) => {
        const { viewer, ref, p } = at(request);
        return reply.status(201).send(await createStatus(deps, viewer, ref, p.sha, request.body));
      },
    );

    r.get(
      `${form.prefix}/commits/:ref/statuses`,
      {
        schema: {
          tags,
          summary: "A commit's statuses, newest first",
          description: REF_RULES,
          params: repoParamsSchema(form, RefParam),
          querystring: Type.Object(PageQuery),
          response: { 200: Page(CommitStatus), ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer, ref, p } = at(request);
        const page = pageParams(request.query);
        return pageOf(request, reply, page, await listStatuses(deps, viewer, ref, p.ref, page));
      },
    );

    r.get(
      `${form.prefix}/commits/:ref/status`,
      {
        schema: {
          tags,
          summary: "A commit's combined status: the latest status of each context",
          description:
            `${REF_RULES} \`state\` is \`failure\` if any latest status is failure or error, else \`pending\` if any is ` +
            'pending or there is none, else `success`. One indexed statement, however many statuses the commit has.',
          params: repoParamsSchema(form, RefParam),
          response: { 200: CombinedStatus, ...errors(400) },
        },
      },
      async (request) => {
        const { viewer, ref, p } = at(request);
        return combinedStatus(deps, viewer, ref, p.ref);
      },
    );
  }
}
