import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import {
  listRepoRunners,
  listSiteRunners,
  listTeamRunners,
  removeRepoRunner,
  removeSiteRunner,
  removeTeamRunner,
} from './runners.ts';
import {
  appendLog,
  createRepoRegistrationToken,
  createSiteRegistrationToken,
  createTeamRegistrationToken,
  finishFromRunner,
  poll,
  POLL_WAIT_MS,
  registerRunner,
  reportSteps,
} from './protocol.ts';

const RUNNER_AUTH =
  'Runner protocol (docs/ci.md "Runners"): authenticated by the runner secret in `X-Weft-Runner-Secret` only (a user ' +
  'token is not accepted here); 401 when it is missing or unknown (a removed runner).';

const RegistrationToken = Type.Object({ token: Type.String(), expires_at: Type.String({ format: 'date-time' }) });
const Runner = Type.Object(
  {
    uuid: Type.String({ format: 'uuid' }),
    name: Type.String(),
    labels: Type.Array(Type.String()),
    scope: Type.String({ description: 'repo, team or site' }),
    status: Type.Union([Type.Literal('idle'), Type.Literal('busy'), Type.Literal('offline')], {
      description: 'busy while it runs a job; offline when it has not polled for 60 s',
    }),
    last_seen_at: Type.String({ format: 'date-time' }),
    version: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
const JobUuidParam = Type.Object({ job_uuid: Type.String({ format: 'uuid' }) });
const Conclusion = Type.Union(['success', 'failure', 'cancelled', 'timed_out', 'startup_failure'].map((c) => Type.Literal(c)));
const AnyObject = Type.Object({}, { additionalProperties: true });

const secretOf = (request: FastifyRequest) => {
  const h = request.headers['x-weft-runner-secret'];
  return typeof h === 'string' ? h : undefined;
};

export async function ciRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ci'];

  for (const form of REPO_FORMS) {
    r.post(
      `${form.prefix}/runners/registration-token`,
      {
        schema: {
          tags,
          summary: 'A registration token for a runner of this repo',
          description:
            'Maintain level (403 otherwise; 404 without read access). The token registers one runner (`weft runner ' +
            'register --token`) that takes only this repo’s jobs; it works once and for one hour.',
          params: repoParamsSchema(form, {}),
          response: { 201: RegistrationToken, ...errors(403) },
        },
      },
      async (request, reply) =>
        reply
          .status(201)
          .send(await createRepoRegistrationToken(deps, requireViewer(request), repoRef(request.params as RepoParams))),
    );
    r.get(
      `${form.prefix}/runners`,
      {
        schema: {
          tags,
          summary: 'The runners registered for this repo',
          description: 'Maintain level (403 otherwise; 404 without read access). By name.',
          params: repoParamsSchema(form, {}),
          response: { 200: Type.Object({ results: Type.Array(Runner) }), ...errors(403) },
        },
      },
      async (request) => ({
        results: await listRepoRunners(deps, requireViewer(request), repoRef(request.params as RepoParams)),
      }),
    );
    r.delete(
      `${form.prefix}/runners/:runner_uuid`,
      {
        schema: {
          tags,
          summary: 'Remove a runner of this repo',
          description:
            'Maintain level; 404 for a runner of another repo (before 403 repo_archived). Its secret stops working at ' +
            'once; the jobs it runs fail (`runner_removed`, with a notice in their log).',
          params: repoParamsSchema(form, { runner_uuid: Type.String({ format: 'uuid' }) }),
          response: { 204: Type.Null(), ...errors(403) },
        },
      },
      async (request, reply) => {
        const p = request.params as RepoParams & { runner_uuid: string };
        await removeRepoRunner(deps, requireViewer(request), repoRef(p), p.runner_uuid);
        return reply.status(204).send(null);
      },
    );
  }

  // team runners (the jobs of every repo of the team) and site runners (every repo; staff)
  const TEAM = 'The team’s maintain level: the maintainer role or owner, or staff (403 to other members; 404 to others).';
  const SITE = 'Staff only (403 to others).';
  const teamSlug = { team_slug: Type.String({ minLength: 1, maxLength: 100 }) };
  const runnerUuid = { runner_uuid: Type.String({ format: 'uuid' }) };
  const scopes = [
    {
      prefix: '/teams/:team_slug',
      who: TEAM,
      what: 'this team',
      takes: 'the jobs of every repo of the team',
      params: Type.Object(teamSlug),
      uuidParams: Type.Object({ ...teamSlug, ...runnerUuid }),
      token: (req: FastifyRequest) =>
        createTeamRegistrationToken(deps, requireViewer(req), (req.params as { team_slug: string }).team_slug),
      list: (req: FastifyRequest) => listTeamRunners(deps, requireViewer(req), (req.params as { team_slug: string }).team_slug),
      remove: (req: FastifyRequest) => {
        const p = req.params as { team_slug: string; runner_uuid: string };
        return removeTeamRunner(deps, requireViewer(req), p.team_slug, p.runner_uuid);
      },
    },
    {
      prefix: '',
      who: SITE,
      what: 'the site',
      takes: 'the jobs of every repo of the site',
      params: undefined,
      uuidParams: Type.Object(runnerUuid),
      token: (req: FastifyRequest) => createSiteRegistrationToken(deps, requireViewer(req)),
      list: (req: FastifyRequest) => listSiteRunners(deps, requireViewer(req)),
      remove: (req: FastifyRequest) => {
        const p = req.params as { runner_uuid: string };
        return removeSiteRunner(deps, requireViewer(req), p.runner_uuid);
      },
    },
  ];
  for (const sc of scopes) {
    r.post(
      `${sc.prefix}/runners/registration-token`,
      {
        schema: {
          tags,
          summary: `A registration token for a runner of ${sc.what}`,
          description:
            `${sc.who} The token registers one runner (\`weft runner register --token\`) that takes ${sc.takes}; it ` +
            'works once and for one hour.',
          ...(sc.params ? { params: sc.params } : {}),
          response: { 201: RegistrationToken, ...errors(403) },
        },
      },
      async (request, reply) => reply.status(201).send(await sc.token(request)),
    );
    r.get(
      `${sc.prefix}/runners`,
      {
        schema: {
          tags,
          summary: `The runners registered for ${sc.what}`,
          description: `${sc.who} By name.`,
          ...(sc.params ? { params: sc.params } : {}),
          response: { 200: Type.Object({ results: Type.Array(Runner) }), ...errors(403) },
        },
      },
      async (request) => ({ results: await sc.list(request) }),
    );
    r.delete(
      `${sc.prefix}/runners/:runner_uuid`,
      {
        schema: {
          tags,
          summary: `Remove a runner of ${sc.what}`,
          description:
            `${sc.who} 404 for a runner of another scope. Its secret stops working at once; the jobs it runs fail ` +
            '(`runner_removed`, with a notice in their log).',
          params: sc.uuidParams,
          response: { 204: Type.Null(), ...errors(403) },
        },
      },
      async (request, reply) => {
        await sc.remove(request);
        return reply.status(204).send(null);
      },
    );
  }

  r.post(
    '/runner/register',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Register a runner with a registration token',
        description:
          'Public: the single-use registration token in the body authenticates (401 when invalid, expired or used). ' +
          'Answers the runner’s own secret, once; the runner stores it in its config file.',
        body: Type.Object(
          {
            token: Type.String({ minLength: 1, maxLength: 200 }),
            name: Type.String({ minLength: 1, maxLength: 100 }),
            labels: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50 }),
            version: Type.Optional(Type.String({ maxLength: 50 })),
            capacity: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            uuid: Type.String(),
            name: Type.String(),
            labels: Type.Array(Type.String()),
            scope: Type.String(),
            secret: Type.String(),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (request, reply) => reply.status(201).send(await registerRunner(deps, request.body)),
  );

  r.post(
    '/runner/poll',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Long-poll for jobs (and heartbeat)',
        description:
          `${RUNNER_AUTH} \`free\` is how many more jobs the runner takes; \`running\` its running jobs. Answers at ` +
          'once with jobs it claimed for the runner or running jobs to stop (`cancel`), else after at most 20 s with ' +
          'none. Every poll counts as the runner’s heartbeat: a runner silent for 60 s loses its jobs (`runner_lost`).',
        body: Type.Object(
          {
            free: Type.Integer({ minimum: 0, maximum: 64 }),
            running: Type.Array(Type.String({ format: 'uuid' }), { maxItems: 64 }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ jobs: Type.Array(AnyObject), cancel: Type.Array(Type.String()) }), ...errors(400, 401) },
      },
    },
    async (request, reply) => {
      // the runner hung up before its answer (it is stopping): stop waiting, claim nothing
      const gone = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableEnded) gone.abort();
      });
      return poll(deps, secretOf(request), request.body, POLL_WAIT_MS, gone.signal);
    },
  );

  r.post(
    '/runner/jobs/:job_uuid/log',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Append a chunk of a job’s log at a byte offset',
        description:
          `${RUNNER_AUTH} Idempotent by offset: a chunk the server already holds is ignored, one past the end is 409 ` +
          '(the detail names the offset to send from). Lines are sent prefixed with their timestamp.',
        params: JobUuidParam,
        body: Type.Object(
          { offset: Type.Integer({ minimum: 0, maximum: 2 ** 40 }), data: Type.String({ maxLength: 256 * 1024 }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ offset: Type.Integer(), truncated: Type.Optional(Type.Boolean()) }),
          ...errors(400, 401, 409),
        },
      },
    },
    async (request) => appendLog(deps, secretOf(request), request.params.job_uuid, request.body.offset, request.body.data),
  );

  r.post(
    '/runner/jobs/:job_uuid/steps',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Report the state of a job’s steps',
        description: RUNNER_AUTH,
        params: JobUuidParam,
        body: Type.Object(
          {
            steps: Type.Array(
              Type.Object(
                {
                  number: Type.Integer({ minimum: 1 }),
                  status: Type.Union([Type.Literal('in_progress'), Type.Literal('completed')]),
                  conclusion: Type.Optional(Type.Union([Type.String(), Type.Null()])),
                  started_at: Type.Optional(Type.Union([Type.String(), Type.Null()])),
                  completed_at: Type.Optional(Type.Union([Type.String(), Type.Null()])),
                },
                { additionalProperties: false },
              ),
              { maxItems: 1000 },
            ),
          },
          { additionalProperties: false },
        ),
        response: { 204: Type.Null(), ...errors(400, 401) },
      },
    },
    async (request, reply) => {
      await reportSteps(deps, secretOf(request), request.params.job_uuid, request.body.steps);
      return reply.status(204).send(null);
    },
  );

  r.post(
    '/runner/jobs/:job_uuid/finish',
    {
      config: { public: true },
      schema: {
        tags,
        summary: 'Finish a job',
        description: `${RUNNER_AUTH} Records the conclusion and outputs; the job's token ends; the run moves on.`,
        params: JobUuidParam,
        body: Type.Object(
          { conclusion: Conclusion, outputs: Type.Optional(Type.Record(Type.String(), Type.String())) },
          { additionalProperties: false },
        ),
        response: { 204: Type.Null(), ...errors(400, 401) },
      },
    },
    async (request, reply) => {
      await finishFromRunner(deps, secretOf(request), request.params.job_uuid, request.body as never);
      return reply.status(204).send(null);
    },
  );
}
