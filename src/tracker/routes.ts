import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, repoParamsSchema } from '../http/repo-paths.ts';
import { repoRequest } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { createLabel, deleteLabel, getLabel, listLabels, updateLabel } from './labels.ts';
import { createMilestone, deleteMilestone, getMilestone, listMilestones, updateMilestone } from './milestones.ts';
import {
  CreateLabelBody,
  CreateMilestoneBody,
  Label,
  LabelListQuery,
  LabelParam,
  Milestone,
  MilestoneListQuery,
  MilestoneParam,
  UpdateLabelBody,
  UpdateMilestoneBody,
} from './schemas.ts';

const TeamParams = Type.Object({ team_slug: Type.String({ maxLength: 200 }) });
const TeamLabelParams = Type.Object({ team_slug: Type.String({ maxLength: 200 }), ...LabelParam });

/** Labels (repo and team) and milestones (README "Issue tracker"). */
export async function trackerRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['tracker'];
  const labelWrite =
    'Maintain level (a team owner for team labels). A name a team label of the repo\u2019s team holds (or, for a team label, ' +
    'a label of one of the team\u2019s repos) is 409 conflict.';

  // ---------------------------------------------------------------- labels, in both repo forms and under a team
  type Where = { repo: ReturnType<typeof repoRequest>['ref'] } | { team: string };
  const routesFor = (
    base: string,
    params: ReturnType<typeof repoParamsSchema> | typeof TeamParams,
    labelParams: unknown,
    where: (req: never) => Where,
    scope: string,
  ) => {
    r.get(
      `${base}/labels`,
      {
        schema: {
          tags,
          summary: `The ${scope}'s labels by name${scope === 'repo' ? " (the repo's and its team's; read access)" : ' (team members)'}`,
          params,
          querystring: LabelListQuery,
          response: { 200: Page(Label) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        return pageOf(request, reply, p, await listLabels(deps, requireViewer(request), where(request as never), p));
      },
    );
    r.post(
      `${base}/labels`,
      {
        schema: {
          tags,
          summary: `Create a ${scope} label`,
          description: labelWrite,
          params,
          body: CreateLabelBody,
          response: { 201: Label, ...errors(403, 409) },
        },
      },
      async (request, reply) =>
        reply.status(201).send(await createLabel(deps, requireViewer(request), where(request as never), request.body)),
    );
    r.get(
      `${base}/labels/:name`,
      {
        schema: {
          tags,
          summary: `Get a ${scope} label by name (case-insensitive)`,
          params: labelParams as typeof TeamLabelParams,
          response: { 200: Label },
        },
      },
      async (request) =>
        getLabel(deps, requireViewer(request), where(request as never), (request.params as { name: string }).name),
    );
    r.patch(
      `${base}/labels/:name`,
      {
        schema: {
          tags,
          summary: `Change a ${scope} label; renaming keeps it on every thread and pull`,
          description: labelWrite,
          params: labelParams as typeof TeamLabelParams,
          body: UpdateLabelBody,
          response: { 200: Label, ...errors(403, 409) },
        },
      },
      async (request) =>
        updateLabel(
          deps,
          requireViewer(request),
          where(request as never),
          (request.params as { name: string }).name,
          request.body,
        ),
    );
    r.delete(
      `${base}/labels/:name`,
      {
        schema: {
          tags,
          summary: `Delete a ${scope} label: it leaves every thread and pull`,
          description: labelWrite,
          params: labelParams as typeof TeamLabelParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        await deleteLabel(deps, requireViewer(request), where(request as never), (request.params as { name: string }).name);
        return reply.status(204).send();
      },
    );
  };
  for (const form of REPO_FORMS) {
    routesFor(
      form.prefix,
      repoParamsSchema(form),
      repoParamsSchema(form, LabelParam),
      (req) => ({ repo: repoRequest(req).ref }),
      'repo',
    );
  }
  routesFor(
    '/teams/:team_slug',
    TeamParams,
    TeamLabelParams,
    (req: { params: { team_slug: string } }) => ({ team: req.params.team_slug }),
    'team',
  );

  // ---------------------------------------------------------------- milestones
  const msWrite = 'Write access. A title another milestone of the repo has (case-insensitively) is 409 conflict.';
  for (const form of REPO_FORMS) {
    const base = `${form.prefix}/milestones`;
    const params = repoParamsSchema(form);
    const one = repoParamsSchema(form, MilestoneParam);
    r.get(
      base,
      {
        schema: {
          tags,
          summary: "The repo's milestones with live counts (state open by default; sort due_on or title; read access)",
          params,
          querystring: MilestoneListQuery,
          response: { 200: Page(Milestone) },
        },
      },
      async (request, reply) => {
        const { viewer, ref } = repoRequest(request);
        const p = pageParams(request.query);
        const rows = await listMilestones(deps, viewer, ref, { ...p, state: request.query.state, sort: request.query.sort });
        return pageOf(request, reply, p, rows);
      },
    );
    r.post(
      base,
      {
        schema: {
          tags,
          summary: 'Create a milestone; it gets the next per-repo number',
          description: msWrite,
          params,
          body: CreateMilestoneBody,
          response: { 201: Milestone, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        const { viewer, ref } = repoRequest(request);
        return reply.status(201).send(await createMilestone(deps, viewer, ref, request.body));
      },
    );
    r.get(
      `${base}/:number`,
      { schema: { tags, summary: 'Get a milestone with its counts', params: one, response: { 200: Milestone } } },
      async (request) => {
        const { viewer, ref } = repoRequest(request);
        return getMilestone(deps, viewer, ref, (request.params as { number: number }).number);
      },
    );
    r.patch(
      `${base}/:number`,
      {
        schema: {
          tags,
          summary: 'Change a milestone (closing it emits milestone-closed)',
          description: msWrite,
          params: one,
          body: UpdateMilestoneBody,
          response: { 200: Milestone, ...errors(403, 409) },
        },
      },
      async (request) => {
        const { viewer, ref } = repoRequest(request);
        return updateMilestone(deps, viewer, ref, (request.params as { number: number }).number, request.body);
      },
    );
    r.delete(
      `${base}/:number`,
      {
        schema: {
          tags,
          summary: 'Delete a milestone: it is cleared from its threads and pulls',
          description: 'Write access.',
          params: one,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const { viewer, ref } = repoRequest(request);
        await deleteMilestone(deps, viewer, ref, (request.params as { number: number }).number);
        return reply.status(204).send();
      },
    );
  }
}
