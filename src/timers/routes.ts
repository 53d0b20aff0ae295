import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type TObject, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { TimerScopeRef } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { CreateTimerBody, ListTimersQuery, Timer, TimerParam, UpdateTimerBody } from './schemas.ts';
import { createTimer, deleteTimer, getTimer, listTimers, updateTimer } from './service.ts';

const Name = Type.String({ minLength: 1, maxLength: 100 });

interface ScopeForm {
  prefix: string;
  params: TObject;
  who: string;
  ref(params: Record<string, string>): TimerScopeRef;
}

const SCOPE_FORMS: ScopeForm[] = [
  {
    prefix: '/users/:username',
    params: Type.Object({ username: Name }),
    who: "A user's timers are private: only that user sees or changes them (404 to everyone else, staff included).",
    ref: (p) => ({ kind: 'user', username: p.username! }),
  },
  {
    prefix: '/teams/:team_slug',
    params: Type.Object({ team_slug: Name }),
    who: "A team's timers are for its owners and staff: other members get 403, outsiders 404. Changes under an inactive team are 403 team_inactive (staff excepted).",
    ref: (p) => ({ kind: 'team', teamSlug: p.team_slug! }),
  },
  ...REPO_FORMS.map((form): ScopeForm => ({
    prefix: form.prefix,
    params: repoParamsSchema(form),
    who: "A repo's timers are listed and read with read access and changed at maintain level; an archived repo refuses changes with 403 repo_archived.",
    ref: (p) => ({ kind: 'repo', repo: repoRef(p as unknown as RepoParams) }),
  })),
];

const SCHEDULE_DOC =
  'Exactly one schedule form, else 400: once — `run_in` (a duration: `90s`, `15m`, `2h`, `1d`, `1h30m`, `PT1H30M`; 1 s to 10 years) or `run_at` ' +
  '(a future timestamp); interval — `every_seconds` (≥ 60) with an optional future first `run_at`; weekly — `time_of_day` (HH:MM) and ' +
  '`days_of_week` (non-empty, unique, Mon…Sun). `timezone` (IANA, default UTC) goes with any form; weekly runs follow its wall clock across ' +
  'daylight-saving changes (a skipped time runs when the clocks jump, a repeated one runs once, at its first occurrence). The message is ' +
  'trimmed and 1–4,000 characters.';

export async function timersRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['timers'];

  for (const form of SCOPE_FORMS) {
    const base = `${form.prefix}/timers`;
    const one = Type.Object({ ...form.params.properties, ...TimerParam });
    const refOf = (params: unknown) => form.ref(params as Record<string, string>);

    r.get(
      base,
      {
        schema: {
          tags,
          summary: 'Timers of this owner, oldest first; `status` filters',
          description: form.who,
          params: form.params,
          querystring: ListTimersQuery,
          response: { 200: Page(Timer), ...errors(403) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        const rows = await listTimers(deps, requireViewer(request), refOf(request.params), request.query.status, p);
        return pageOf(request, reply, p, rows);
      },
    );

    r.post(
      base,
      {
        schema: {
          tags,
          summary: 'Create a timer; status active (default) or paused',
          description: `${form.who} ${SCHEDULE_DOC} Emits timer-created; each occurrence later emits timer-fired in the timer's and the owner's scope, shown (like every timer event) only to those who may read the timer: a team timer's to the team's owners.`,
          params: form.params,
          body: CreateTimerBody,
          response: { 201: Timer, ...errors(403) },
        },
      },
      async (request, reply) => {
        const row = await createTimer(deps, requireViewer(request), refOf(request.params), request.body);
        return reply.status(201).send(row);
      },
    );

    r.get(
      `${base}/:timer_uuid`,
      {
        schema: {
          tags,
          summary: 'Get a timer (404 through any scope but its own)',
          description: form.who,
          params: one,
          response: { 200: Timer, ...errors(403) },
        },
      },
      async (request) =>
        getTimer(deps, requireViewer(request), refOf(request.params), (request.params as { timer_uuid: string }).timer_uuid),
    );

    r.patch(
      `${base}/:timer_uuid`,
      {
        schema: {
          tags,
          summary: 'Change a timer: message, status (active, paused, cancelled) or a replacement schedule',
          description:
            `${form.who} Transitions: active ↔ paused, active or paused → cancelled. Completed and cancelled timers are final: ` +
            'any change is 409 timer_finished. Resuming recomputes next_run_at to the next future occurrence (a once timer that fell due ' +
            `while paused fires at once). A replacement schedule is a complete form, as on create. ${SCHEDULE_DOC}`,
          params: one,
          body: UpdateTimerBody,
          response: { 200: Timer, ...errors(403, 409) },
        },
      },
      async (request) =>
        updateTimer(
          deps,
          requireViewer(request),
          refOf(request.params),
          (request.params as { timer_uuid: string }).timer_uuid,
          request.body,
        ),
    );

    r.delete(
      `${base}/:timer_uuid`,
      {
        schema: {
          tags,
          summary: 'Delete a timer (also a completed or cancelled one)',
          description: form.who,
          params: one,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        await deleteTimer(
          deps,
          requireViewer(request),
          refOf(request.params),
          (request.params as { timer_uuid: string }).timer_uuid,
        );
        return reply.status(204).send();
      },
    );
  }
}
