import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { repoAt } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { NullableString, StrictObject, Timestamp } from '../http/schemas.ts';
import {
  createPushMirror,
  deletePushMirror,
  getImport,
  listPushMirrors,
  requestMirrorSync,
  syncPushMirror,
  updateMirror,
} from './service.ts';

const ImportStatus = Type.Object(
  {
    url: Type.String({ description: 'the source, without credentials' }),
    import_status: Type.Union([Type.Literal('importing'), Type.Literal('done'), Type.Literal('failed')]),
    import_error: NullableString(),
    import_progress: NullableString({ description: "git's last progress line while importing" }),
    mirror: Type.Union([
      Type.Object(
        { url: Type.String(), interval_seconds: Type.Integer(), last_sync_at: NullableString(), last_error: NullableString() },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
  },
  { additionalProperties: false, title: 'RepoImport' },
);

const PushMirror = Type.Object(
  {
    uuid: Type.String(),
    url: Type.String({ description: 'without credentials' }),
    sync_on_push: Type.Boolean(),
    last_sync_at: NullableString(),
    last_error: NullableString({ description: "the last attempt's failure (credentials never appear); null after a success" }),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'PushMirror' },
);

const CreatePushMirrorBody = StrictObject({
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'http://, https://, ssh:// or git://' }),
  username: Type.Optional(NullableString({ maxLength: 255 })),
  password: Type.Optional(NullableString({ maxLength: 4096, description: 'stored sealed, never returned' })),
  sync_on_push: Type.Optional(Type.Boolean({ description: 'push after each push to this repo (default true)' })),
});

const UpdateMirrorBody = StrictObject({
  interval_seconds: Type.Optional(
    Type.Integer({ minimum: 600, maximum: 31_536_000, description: 'seconds between timed syncs: 600 to 31,536,000' }),
  ),
  username: Type.Optional(NullableString({ maxLength: 255, description: 'null clears it' })),
  password: Type.Optional(
    NullableString({ maxLength: 4096, description: 'stored sealed with the server secret, never returned; null clears it' }),
  ),
});

const Queued = Type.Object(
  { queued: Type.Boolean() },
  { additionalProperties: false, title: 'SyncQueued', 'x-response-description': 'Accepted: the sync is queued' },
);
const MirrorUuid = Type.String({ maxLength: 100 });

const ADDRESS =
  "The URL's address is checked like a webhook's (`webhook_allowed_hosts`); credentials are stored sealed with the server secret and never returned.";

/** Imports and mirrors (docs/bring-in.md). */
export async function mirrorsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['mirrors'];
  for (const form of REPO_FORMS) {
    const params = repoParamsSchema(form);
    const withUuid = Type.Object({ ...params.properties, mirror_uuid: MirrorUuid });
    r.get(
      `${form.prefix}/import`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: "An imported repo's import status and progress",
          description: 'Read access. 404 for a repo not imported from a URL.',
          params,
          response: { 200: ImportStatus },
        },
      },
      async (request) => getImport(deps, requireViewer(request), repoAt(request)),
    );
    r.post(
      `${form.prefix}/mirror/sync`,
      {
        schema: {
          tags,
          summary: 'Sync a pull mirror now',
          description:
            'Write access. Queues a sync (one at a time per repo, on any instance); its moved refs are `branch-pushed` events. ' +
            '404 for a repo that is no pull mirror; 400 while it is still importing.',
          params,
          response: { 202: Queued, ...errors(400, 403) },
        },
      },
      async (request, reply) => {
        await requestMirrorSync(deps, requireViewer(request), repoRef(request.params as RepoParams));
        return reply.status(202).send({ queued: true });
      },
    );
    r.patch(
      `${form.prefix}/mirror`,
      {
        schema: {
          tags,
          summary: "Change a pull mirror's interval or credentials",
          description:
            'Maintain level. A field left out stays as it is; `username` or `password` null clears it. Credentials are ' +
            'stored sealed with the server secret and never returned; an ssh:// source takes no password. A new ' +
            '`interval_seconds` moves the next timed sync to the last sync plus it (now at the earliest). ' +
            '404 for a repo that is no pull mirror.',
          params,
          body: UpdateMirrorBody,
          response: { 200: ImportStatus, ...errors(400, 403) },
        },
      },
      async (request) => updateMirror(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body),
    );
    r.get(
      `${form.prefix}/push-mirrors`,
      {
        schema: {
          tags,
          summary: "A repo's push mirrors",
          description: 'Maintain level.',
          params,
          response: { 200: Type.Array(PushMirror), ...errors(403) },
        },
      },
      async (request) => listPushMirrors(deps, requireViewer(request), repoRef(request.params as RepoParams)),
    );
    r.post(
      `${form.prefix}/push-mirrors`,
      {
        schema: {
          tags,
          summary: 'Add a push mirror',
          description:
            `Maintain level. Every branch and tag is pushed to the URL with --mirror semantics (deletions too) after each push ` +
            `(with sync_on_push) and on POST …/sync, through the job queue, retried with back-off. ${ADDRESS} At most 10 per repo.`,
          params,
          body: CreatePushMirrorBody,
          response: { 201: PushMirror, ...errors(400, 403) },
        },
      },
      async (request, reply) =>
        reply
          .status(201)
          .send(await createPushMirror(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body)),
    );
    r.delete(
      `${form.prefix}/push-mirrors/:mirror_uuid`,
      {
        schema: {
          tags,
          summary: 'Remove a push mirror',
          description: 'Maintain level.',
          params: withUuid,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const p = request.params as RepoParams & { mirror_uuid: string };
        await deletePushMirror(deps, requireViewer(request), repoRef(p), p.mirror_uuid);
        return reply.status(204).send();
      },
    );
    r.post(
      `${form.prefix}/push-mirrors/:mirror_uuid/sync`,
      {
        schema: {
          tags,
          summary: 'Push to a push mirror now',
          description: 'Maintain level. Queues the push.',
          params: withUuid,
          response: { 202: Queued, ...errors(403) },
        },
      },
      async (request, reply) => {
        const p = request.params as RepoParams & { mirror_uuid: string };
        await syncPushMirror(deps, requireViewer(request), repoRef(p), p.mirror_uuid);
        return reply.status(202).send({ queued: true });
      },
    );
  }
}
