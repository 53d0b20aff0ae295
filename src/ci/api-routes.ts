import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { parseRange } from '../http/ranges.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page, PageQuery } from '../http/schemas.ts';
import { approveRun, cancelRunApi, dispatchWorkflow, getJob, getRun, jobLog, listRuns, rerunRun } from './api.ts';
import { Job, Run, RunItem, RunsQuery } from './schemas.ts';

const NumberParam = { number: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) };
const JobParams = { ...NumberParam, job_uuid: Type.String({ format: 'uuid' }) };
type RunPath = RepoParams & { number: number; job_uuid: string; file: string };

const READ = 'Read access (404 without it; a missing run or job is 404 too).';
const WRITE = 'Write access (403 otherwise; 404 without read access); 403 repo_archived / team_inactive.';

/** The runs API (docs/ci.md "API"): runs, jobs, logs, cancel, rerun, approve, dispatch. */
export async function ciApiRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ci'];
  const at = (request: FastifyRequest) => {
    const p = request.params as RunPath;
    return { viewer: requireViewer(request), ref: repoRef(p), p };
  };

  for (const form of REPO_FORMS) {
    r.get(
      `${form.prefix}/runs`,
      {
        schema: {
          tags,
          summary: "A repo's CI runs, newest first",
          description:
            `${READ} Filters: \`workflow\` (the file's name or path), \`branch\`, \`event\`, \`status\` (a status or a ` +
            'conclusion), `head_sha`, `actor` (a username).',
          params: repoParamsSchema(form),
          querystring: Type.Object({ ...PageQuery, ...RunsQuery.properties }),
          response: { 200: Page(RunItem), ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer, ref } = at(request);
        const { page: _p, per_page: _pp, ...q } = request.query;
        const page = pageParams(request.query);
        return pageOf(request, reply, page, await listRuns(deps, viewer, ref, q, page));
      },
    );

    r.get(
      `${form.prefix}/runs/:number`,
      {
        schema: {
          tags,
          summary: 'A CI run with the jobs of its latest attempt',
          description: READ,
          params: repoParamsSchema(form, NumberParam),
          response: { 200: Run, ...errors(400) },
        },
      },
      async (request) => {
        const { viewer, ref, p } = at(request);
        return getRun(deps, viewer, ref, p.number);
      },
    );

    r.get(
      `${form.prefix}/runs/:number/jobs/:job_uuid`,
      {
        schema: {
          tags,
          summary: 'A job of a run (any attempt) with its steps',
          description: READ,
          params: repoParamsSchema(form, JobParams),
          response: { 200: Job, ...errors(400) },
        },
      },
      async (request) => {
        const { viewer, ref, p } = at(request);
        return getJob(deps, viewer, ref, p.number, p.job_uuid);
      },
    );

    r.get(
      `${form.prefix}/runs/:number/jobs/:job_uuid/log`,
      {
        compress: false,
        schema: {
          tags,
          summary: "A job's log (text/plain; each line prefixed with its timestamp)",
          description:
            `${READ} One \`Range: bytes=\` range → 206 with Content-Range (unsatisfiable: 416); the log grows while the ` +
            'job runs, so a client follows it with `Range: bytes={bytes it has}-`. Secrets and the job token appear as `***`.',
          params: repoParamsSchema(form, JobParams),
          response: { 200: Type.String({ description: 'the log' }), ...errors(400, 416) },
        },
      },
      async (request, typed) => {
        const reply = typed as FastifyReply;
        const { viewer, ref, p } = at(request);
        const log = await jobLog(deps, viewer, ref, p.number, p.job_uuid, (size) => parseRange(request.headers.range, size));
        reply.header('accept-ranges', 'bytes');
        reply.header('cache-control', 'private, no-cache');
        if (log.range === 'bad') {
          reply.header('content-range', `bytes */${log.size}`);
          throw new AppError(416, 'range_not_satisfiable', `The range is outside the log (${log.size} bytes).`);
        }
        if (log.range) {
          reply.status(206);
          reply.header('content-range', `bytes ${log.range.start}-${log.range.end}/${log.size}`);
        }
        reply.header('content-type', 'text/plain; charset=utf-8');
        return reply.send(log.data);
      },
    );

    r.post(
      `${form.prefix}/runs/:number/cancel`,
      {
        schema: {
          tags,
          summary: 'Cancel a run',
          description:
            `${WRITE} Its waiting and queued jobs end as cancelled at once; a running job's runner is told at its next ` +
            'poll (at most a few seconds) and kills the step’s process group (TERM, then KILL 2 s later). 409 when the ' +
            'run has completed.',
          params: repoParamsSchema(form, NumberParam),
          response: { 200: Run, ...errors(400, 403, 409) },
        },
      },
      async (request) => {
        const { viewer, ref, p } = at(request);
        return cancelRunApi(deps, viewer, ref, p.number);
      },
    );

    r.post(
      `${form.prefix}/runs/:number/rerun`,
      {
        // the body is optional: none means all jobs
        preValidation: (request, _reply, done) => {
          request.body ??= {};
          done();
        },
        schema: {
          tags,
          summary: 'Run a completed run again (a new attempt)',
          description:
            `${WRITE} All its jobs, or with \`failed_only\` the jobs that did not succeed (a succeeded job is carried over ` +
            'with its outputs). The run’s `attempt` grows by one; a `run-created` event is emitted. 409 when the run has ' +
            'not completed, or failed to start.',
          params: repoParamsSchema(form, NumberParam),
          body: Type.Object({ failed_only: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
          response: { 200: Run, ...errors(400, 403, 409) },
        },
      },
      async (request) => {
        const { viewer, ref, p } = at(request);
        return rerunRun(deps, viewer, ref, p.number, request.body.failed_only === true);
      },
    );

    r.post(
      `${form.prefix}/runs/:number/approve`,
      {
        schema: {
          tags,
          summary: 'Approve a run waiting for approval (a first-time contributor’s pull)',
          description: `${WRITE} 409 when the run is not waiting.`,
          params: repoParamsSchema(form, NumberParam),
          response: { 200: Run, ...errors(400, 403, 409) },
        },
      },
      async (request) => {
        const { viewer, ref, p } = at(request);
        return approveRun(deps, viewer, ref, p.number);
      },
    );

    r.post(
      `${form.prefix}/workflows/:file/dispatches`,
      {
        schema: {
          tags,
          summary: 'Start a workflow by hand (workflow_dispatch)',
          description:
            `${WRITE} \`file\` is the workflow file's name in its folder (\`ci.yml\`) or its path; \`ref\` a branch or ` +
            'tag (default: the default branch). 404 when the file is not there; 400 invalid_workflow when the file has no ' +
            '`workflow_dispatch` trigger or is refused, 400 invalid_inputs when `inputs` do not fit its declarations ' +
            '(unknown, missing required, not a boolean, not one of a choice’s options).',
          params: repoParamsSchema(form, { file: Type.String({ minLength: 1, maxLength: 500 }) }),
          body: Type.Object(
            {
              ref: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
              inputs: Type.Optional(
                Type.Record(Type.String({ maxLength: 100 }), Type.Union([Type.String({ maxLength: 65536 }), Type.Boolean()]), {
                  maxProperties: 50,
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 201: Run, ...errors(400, 403) },
        },
      },
      async (request, reply) => {
        const { viewer, ref, p } = at(request);
        return reply.status(201).send(await dispatchWorkflow(deps, viewer, ref, p.file, request.body));
      },
    );
  }
}
