import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type TObject, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { HookScopeRef } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page, PageQuery } from '../http/schemas.ts';
import {
  Accepted,
  CreateHookBody,
  CreatedHook,
  Delivery,
  Hook,
  ListDeliveriesQuery,
  RedeliverManyAccepted,
  RedeliverManyBody,
  SecretBody,
  UpdateHookBody,
} from './schemas.ts';
import {
  createHook,
  deleteHook,
  getDelivery,
  getHook,
  listDeliveries,
  listHooks,
  ping,
  redeliver,
  redeliverMany,
  rotateSecret,
  updateHook,
} from './service.ts';

const Name = Type.String({ minLength: 1, maxLength: 100 });
const Uuid = Type.String({ maxLength: 100 });

interface ScopeForm {
  prefix: string;
  params: TObject;
  who: string;
  ref(params: Record<string, string>): HookScopeRef;
}

const SCOPE_FORMS: ScopeForm[] = [
  ...REPO_FORMS.map((form): ScopeForm => ({
    prefix: form.prefix,
    params: repoParamsSchema(form),
    who: "A repo's hooks are for its maintainers (maintain level: 403 below it, 404 to those who cannot read the repo); changes are refused on an archived repo (403 repo_archived). Events of the repo are delivered.",
    ref: (p) => ({ kind: 'repo', repo: repoRef(p as unknown as RepoParams) }),
  })),
  {
    prefix: '/teams/:team_slug',
    params: Type.Object({ team_slug: Name }),
    who: "A team's hooks are for its owners and staff (403 to other members, 404 to outsiders). Events of the team and of all its repos are delivered.",
    ref: (p) => ({ kind: 'team', teamSlug: p.team_slug! }),
  },
  {
    prefix: '',
    params: Type.Object({}),
    who: 'Site hooks are for staff (403 to others); every event is delivered. They emit no events.',
    ref: () => ({ kind: 'site' }),
  },
];

const DELIVERY_DOC =
  "Each delivery is `POST url` with the body `{hook_uuid, event}`, `event` as GET /events/{id} shows it to the hook's creator at delivery time; " +
  'headers `webhook-id` (the delivery uuid, the same on every attempt), `webhook-timestamp`, `webhook-signature` (Standard Webhooks v1; two ' +
  'space-separated signatures for 24 hours after a rotation), `X-Weft-Event`, `X-Weft-Hook`, `X-Weft-Attempt`, `X-Hub-Signature-256` ' +
  '(HMAC-SHA256 of the body keyed with the secret string) and `User-Agent: Weft-Hookshot/<version>`. A 2xx answer within 10 s is success; ' +
  'anything else (a redirect, a timeout, a connection error) fails and is retried after about 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h and 24 h ' +
  '(±20 % jitter; a 429 or 503 Retry-After waits at least that), then the delivery is failed. 410 disables the hook (`gone`), and so do 20 ' +
  "failed attempts in a row (`failures`) and the creator losing read access to the hook's scope (`creator_lost_access`). Addresses that are " +
  'loopback, private, link-local, unique-local, multicast or unspecified (after DNS, when connecting) are refused as `address_not_allowed`, ' +
  'final, unless the site setting webhook_allowed_hosts allows them.';

export async function hooksRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['hooks'];

  for (const form of SCOPE_FORMS) {
    const base = `${form.prefix}/hooks`;
    const one = Type.Object({ ...form.params.properties, hook_uuid: Uuid });
    const oneDelivery = Type.Object({ ...form.params.properties, hook_uuid: Uuid, delivery_uuid: Uuid });
    const refOf = (params: unknown) => form.ref(params as Record<string, string>);
    const hookOf = (params: unknown) => (params as { hook_uuid: string }).hook_uuid;

    r.get(
      base,
      {
        schema: {
          tags,
          summary: 'Hooks of this scope, oldest first',
          description: form.who,
          params: form.params,
          querystring: Type.Object(PageQuery, { additionalProperties: false }),
          response: { 200: Page(Hook), ...errors(403) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        return pageOf(request, reply, p, await listHooks(deps, requireViewer(request), refOf(request.params), p));
      },
    );

    r.post(
      base,
      {
        schema: {
          tags,
          summary: 'Create a hook; its secret is shown once, in this answer',
          description: `${form.who} Emits hook-created (repo and team hooks). ${DELIVERY_DOC}`,
          params: form.params,
          body: CreateHookBody,
          response: { 201: CreatedHook, ...errors(403) },
        },
      },
      async (request, reply) =>
        reply.status(201).send(await createHook(deps, requireViewer(request), refOf(request.params), request.body)),
    );

    r.get(
      `${base}/:hook_uuid`,
      {
        schema: {
          tags,
          summary: 'Get a hook (404 through any scope but its own)',
          description: form.who,
          params: one,
          response: { 200: Hook, ...errors(403) },
        },
      },
      async (request) => getHook(deps, requireViewer(request), refOf(request.params), hookOf(request.params)),
    );

    r.put(
      `${base}/:hook_uuid`,
      {
        schema: {
          tags,
          summary: 'Change a hook: any of url, events, branch_filter, active (only those given)',
          description: `${form.who} \`active: true\` re-enables a disabled hook and resets consecutive_failures. Emits hook-updated when something changed.`,
          params: one,
          body: UpdateHookBody,
          response: { 200: Hook, ...errors(403) },
        },
      },
      async (request) => updateHook(deps, requireViewer(request), refOf(request.params), hookOf(request.params), request.body),
    );

    r.delete(
      `${base}/:hook_uuid`,
      {
        schema: {
          tags,
          summary: 'Delete a hook and its deliveries',
          description: `${form.who} Emits hook-deleted.`,
          params: one,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        await deleteHook(deps, requireViewer(request), refOf(request.params), hookOf(request.params));
        return reply.status(204).send();
      },
    );

    r.post(
      `${base}/:hook_uuid/rotate-secret`,
      {
        schema: {
          tags,
          summary: 'A new secret, shown once; for 24 hours deliveries carry signatures with both',
          description: `${form.who} Emits hook-updated with fields ["secret"] (the secret itself is never in an event).`,
          params: one,
          response: { 200: SecretBody, ...errors(403) },
        },
      },
      async (request) => rotateSecret(deps, requireViewer(request), refOf(request.params), hookOf(request.params)),
    );

    r.get(
      `${base}/:hook_uuid/deliveries`,
      {
        schema: {
          tags,
          summary: "A hook's deliveries, newest first; `status` filters",
          description: `${form.who} Each delivery shows its last attempt: request headers, answer status, headers, the first 64 KiB of the body, and the error. Deliveries are kept 30 days.`,
          params: one,
          querystring: ListDeliveriesQuery,
          response: { 200: Page(Delivery), ...errors(403) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        const rows = await listDeliveries(
          deps,
          requireViewer(request),
          refOf(request.params),
          hookOf(request.params),
          request.query.status,
          p,
        );
        return pageOf(request, reply, p, rows);
      },
    );

    r.get(
      `${base}/:hook_uuid/deliveries/:delivery_uuid`,
      {
        schema: {
          tags,
          summary: 'Get one delivery with its last attempt',
          description: form.who,
          params: oneDelivery,
          response: { 200: Delivery, ...errors(403) },
        },
      },
      async (request) =>
        getDelivery(
          deps,
          requireViewer(request),
          refOf(request.params),
          hookOf(request.params),
          (request.params as { delivery_uuid: string }).delivery_uuid,
        ),
    );

    r.post(
      `${base}/:hook_uuid/deliveries/redeliver`,
      {
        schema: {
          tags,
          summary: "Send a hook's failed or skipped deliveries again, in order",
          description: `${form.who} 202 with how many deliveries were put back in line: those in \`status\` (created at or after \`since\` when given), the oldest 1,000 at most; they are sent with the hook's first attempts, in event order, each as a new attempt of the same delivery (the same webhook-id). A delivery written while the hook was disabled (failures or gone) is \`skipped\`; this sends it once the receiver is back. 409 hook_inactive when the hook is not active (re-enable it first).`,
          params: one,
          body: RedeliverManyBody,
          response: { 202: RedeliverManyAccepted, ...errors(403, 409) },
        },
      },
      async (request, reply) =>
        reply
          .status(202)
          .send(await redeliverMany(deps, requireViewer(request), refOf(request.params), hookOf(request.params), request.body)),
    );

    r.post(
      `${base}/:hook_uuid/deliveries/:delivery_uuid/redeliver`,
      {
        schema: {
          tags,
          summary: 'A new attempt of the delivery now, with the same webhook-id',
          description: `${form.who} 202: the attempt is queued; the delivery shows it once made. The event is shown as the hook's creator may see it now. A failed redelivery is retried on the schedule while the delivery has had fewer than 9 attempts. 409 hook_inactive when the hook is not active.`,
          params: oneDelivery,
          response: { 202: Accepted, ...errors(403, 409) },
        },
      },
      async (request, reply) =>
        reply
          .status(202)
          .send(
            await redeliver(
              deps,
              requireViewer(request),
              refOf(request.params),
              hookOf(request.params),
              (request.params as { delivery_uuid: string }).delivery_uuid,
            ),
          ),
    );

    r.post(
      `${base}/:hook_uuid/pings`,
      {
        schema: {
          tags,
          summary: 'Deliver a ping event to the hook (whatever its events)',
          description: `${form.who} 202 with the new delivery's uuid; the body is \`{hook_uuid, event: {id: null, kind: "ping", scopes: [], actor, payload: {hook, zen}, created_at}}\`, sent in line with the hook's other first attempts. 409 hook_inactive when the hook is not active.`,
          params: one,
          response: { 202: Accepted, ...errors(403, 409) },
        },
      },
      async (request, reply) =>
        reply.status(202).send(await ping(deps, requireViewer(request), refOf(request.params), hookOf(request.params))),
    );
  }
}
