import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { pagedRepoList } from '../http/repo-routes.ts';
import { addDeployKey, deleteDeployKey, getDeployKey, listDeployKeys } from './deploy-keys.ts';
import {
  CreateDeployKeyBody,
  CreateSshKeyBody,
  DeployKey,
  DeployKeyParam,
  ListSshKeysQuery,
  SshKey,
  SshKeyParams,
} from './schemas.ts';
import { addSshKey, deleteSshKey, getSshKey, listSshKeys } from './service.ts';

type DeployKeyParams = RepoParams & { key_uuid: string };

/** The caller's SSH public keys (README "Git over SSH"): the SSH server finds the user by key. */
export async function sshKeysRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ssh-keys'];

  r.get(
    '/user/keys',
    {
      schema: {
        tags,
        summary: "The caller's SSH keys, oldest first",
        querystring: ListSshKeysQuery,
        response: { 200: Page(SshKey) },
      },
    },
    async (request, reply) => {
      const p = pageParams(request.query);
      return pageOf(request, reply, p, await listSshKeys(deps, requireViewer(request), p));
    },
  );

  r.post(
    '/user/keys',
    {
      schema: {
        tags,
        summary: 'Register an SSH public key for git over SSH',
        description:
          'Accepts ed25519, ECDSA (nistp256/384/521) and RSA of at least 2048 bits; a malformed, private, DSA or shorter RSA key is 400. The same key material registered by anyone (whatever its comment) is 409 conflict. A key gives git over SSH the whole account, so it needs a token without scopes or repos (or a web session): a restricted token gets 403 forbidden. Emits ssh-key-added in the user scope.',
        body: CreateSshKeyBody,
        response: { 201: SshKey, ...errors(403, 409) },
      },
    },
    async (request, reply) => reply.status(201).send(await addSshKey(deps, requireViewer(request), request.body)),
  );

  r.get(
    '/user/keys/:uuid',
    {
      schema: {
        tags,
        summary: 'One of your SSH keys',
        description: "Another user's key is 404, for staff too.",
        params: SshKeyParams,
        response: { 200: SshKey },
      },
    },
    async (request) => getSshKey(deps, requireViewer(request), request.params.uuid),
  );

  r.delete(
    '/user/keys/:uuid',
    {
      schema: {
        tags,
        summary: 'Delete one of your SSH keys; it stops working at once',
        description:
          'Takes no body (an empty JSON object is accepted). The SSH server checks the key again before each git command, so a connection already open with it can run no further command. Emits ssh-key-deleted in the user scope.',
        params: SshKeyParams,
        response: { 204: { type: 'null' } },
      },
    },
    async (request, reply) => {
      await deleteSshKey(deps, requireViewer(request), request.params.uuid);
      return reply.status(204).send();
    },
  );

  // deploy keys (README "Deploy keys"): maintain level on the repo, every route
  const manage = 'Maintain level (404 to readers who cannot see the repo, 403 to other readers).';
  for (const form of REPO_FORMS) {
    const base = `${form.prefix}/keys`;
    const keyParams = repoParamsSchema(form, DeployKeyParam);
    r.get(
      base,
      {
        schema: {
          tags,
          summary: "The repo's deploy keys, oldest first",
          description: manage,
          params: repoParamsSchema(form),
          querystring: ListSshKeysQuery,
          response: { 200: Page(DeployKey), ...errors(403) },
        },
      },
      pagedRepoList(({ viewer, ref }, p) => listDeployKeys(deps, viewer, ref, p)),
    );
    r.post(
      base,
      {
        schema: {
          tags,
          summary: 'Add a deploy key: an SSH key that reaches this repo only',
          description:
            `${manage} Git over SSH with the key fetches this repo and no other; it pushes too when \`read_only\` is false ` +
            '(default true), under the same push rules, recorded as pushed by the maintainer who added the key. Key types as for ' +
            'user keys (400 otherwise); key material already registered as a user key or a deploy key is 409 conflict. Emits ' +
            'deploy-key-added in the repo scope.',
          params: repoParamsSchema(form),
          body: CreateDeployKeyBody,
          response: { 201: DeployKey, ...errors(403, 409) },
        },
      },
      async (request, reply) =>
        reply
          .status(201)
          .send(await addDeployKey(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body)),
    );
    r.get(
      `${base}/:key_uuid`,
      {
        schema: {
          tags,
          summary: 'One deploy key',
          description: manage,
          params: keyParams,
          response: { 200: DeployKey, ...errors(403) },
        },
      },
      async (request) => {
        const params = request.params as DeployKeyParams;
        return getDeployKey(deps, requireViewer(request), repoRef(params), params.key_uuid);
      },
    );
    r.delete(
      `${base}/:key_uuid`,
      {
        schema: {
          tags,
          summary: 'Delete a deploy key; it stops working at its next git command',
          description: `${manage} Emits deploy-key-deleted in the repo scope.`,
          params: keyParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as DeployKeyParams;
        await deleteDeployKey(deps, requireViewer(request), repoRef(params), params.key_uuid);
        return reply.status(204).send();
      },
    );
  }
}
