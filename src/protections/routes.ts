import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { type RepoRequest, pagedRepoList } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import {
  AddApproverBody,
  Approver,
  ApproverParam,
  CreateProtectionBody,
  ListQuery,
  Protection,
  ProtectionParam,
  UpdateProtectionBody,
} from './schemas.ts';
import {
  addApprover,
  createProtection,
  deleteProtection,
  getProtection,
  listApprovers,
  listProtections,
  removeApprover,
  updateProtection,
} from './service.ts';

type ProtectionParams = RepoParams & { protection_uuid: string };
type ApproverParams = ProtectionParams & { user_uuid: string };

export async function protectionsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['protections'];
  const manage = 'Maintain level; 403 repo_archived on an archived repo, 403 team_inactive under an inactive team.';

  for (const form of REPO_FORMS) {
    const base = `${form.prefix}/protections`;
    const repoParams = repoParamsSchema(form);
    const protectionParams = repoParamsSchema(form, ProtectionParam);
    const approverParams = repoParamsSchema(form, { ...ProtectionParam, ...ApproverParam });

    r.get(
      base,
      {
        schema: {
          tags,
          summary: "The repo's branch protections, oldest first (read access)",
          params: repoParams,
          querystring: ListQuery,
          response: { 200: Page(Protection) },
        },
      },
      pagedRepoList(({ viewer, ref }, p) => listProtections(deps, viewer, ref, p)),
    );

    r.post(
      base,
      {
        schema: {
          tags,
          summary: 'Protect a branch or a branch glob',
          description: `${manage} A branch pattern the repo already protects is 409 conflict.`,
          params: repoParams,
          body: CreateProtectionBody,
          response: { 201: Protection, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        const row = await createProtection(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body);
        return reply.status(201).send(row);
      },
    );

    r.get(
      `${base}/:protection_uuid`,
      {
        schema: {
          tags,
          summary: 'Get a branch protection (read access)',
          params: protectionParams,
          response: { 200: Protection },
        },
      },
      async (request) => {
        const params = request.params as ProtectionParams;
        return getProtection(deps, requireViewer(request), repoRef(params), params.protection_uuid);
      },
    );

    r.put(
      `${base}/:protection_uuid`,
      {
        schema: {
          tags,
          summary: 'Change a branch protection; omitted fields keep their values',
          description: `${manage} A branch pattern another protection of the repo has is 409 conflict.`,
          params: protectionParams,
          body: UpdateProtectionBody,
          response: { 200: Protection, ...errors(403, 409) },
        },
      },
      async (request) => {
        const params = request.params as ProtectionParams;
        return updateProtection(deps, requireViewer(request), repoRef(params), params.protection_uuid, request.body);
      },
    );

    r.delete(
      `${base}/:protection_uuid`,
      {
        schema: {
          tags,
          summary: 'Remove a branch protection and its approver list',
          description: manage,
          params: protectionParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as ProtectionParams;
        await deleteProtection(deps, requireViewer(request), repoRef(params), params.protection_uuid);
        return reply.status(204).send();
      },
    );

    r.get(
      `${base}/:protection_uuid/approvers`,
      {
        schema: {
          tags,
          summary: "A protection's approvers, oldest first (read access)",
          params: protectionParams,
          querystring: ListQuery,
          response: { 200: Page(Approver) },
        },
      },
      pagedRepoList(({ viewer, ref, params }: RepoRequest<ProtectionParams>, p) =>
        listApprovers(deps, viewer, ref, params.protection_uuid, p),
      ),
    );

    r.post(
      `${base}/:protection_uuid/approvers`,
      {
        schema: {
          tags,
          summary: 'Add an approver by username',
          description: `${manage} An unknown or inactive user is 404; a user already listed is 409 conflict. The user need not have access to the repo yet.`,
          params: protectionParams,
          body: AddApproverBody,
          response: { 201: Approver, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        const params = request.params as ProtectionParams;
        const row = await addApprover(
          deps,
          requireViewer(request),
          repoRef(params),
          params.protection_uuid,
          request.body.username,
        );
        return reply.status(201).send(row);
      },
    );

    r.delete(
      `${base}/:protection_uuid/approvers/:user_uuid`,
      {
        schema: {
          tags,
          summary: 'Remove an approver; 404 when the user is not listed',
          description: manage,
          params: approverParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as ApproverParams;
        await removeApprover(deps, requireViewer(request), repoRef(params), params.protection_uuid, params.user_uuid);
        return reply.status(204).send();
      },
    );
  }
}
