import { type TSchema, Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { AttachBody, type AttachInput, Attachment, GroupAttachment, ListQuery } from './schemas.ts';
import { attach, detach, listAttachments, type TargetRef } from './service.ts';

const Num = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 });
const Uuid = Type.String({ minLength: 1, maxLength: 100 });

type AnyParams = RepoParams & { number: number; reply_number?: number; review_uuid?: string; upload_uuid?: string };

interface TargetPath {
  kind: TargetRef['kind'];
  suffix: string;
  params: Record<string, TSchema>;
  what: string;
  ref(p: AnyParams): TargetRef;
}

const TARGETS: TargetPath[] = [
  {
    kind: 'thread',
    suffix: '/threads/:number',
    params: { number: Num },
    what: 'a thread',
    ref: (p) => ({ kind: 'thread', number: p.number }),
  },
  {
    kind: 'reply',
    suffix: '/threads/:number/replies/:reply_number',
    params: { number: Num, reply_number: Num },
    what: 'a reply',
    ref: (p) => ({ kind: 'reply', number: p.number, replyNumber: p.reply_number! }),
  },
  {
    kind: 'pull',
    suffix: '/pulls/:number',
    params: { number: Num },
    what: 'a pull',
    ref: (p) => ({ kind: 'pull', number: p.number }),
  },
  {
    kind: 'review',
    suffix: '/pulls/:number/reviews/:review_uuid',
    params: { number: Num, review_uuid: Uuid },
    what: 'a pull review',
    ref: (p) => ({ kind: 'review', number: p.number, reviewUuid: p.review_uuid! }),
  },
];

export async function attachmentsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['attachments'];
  const rules =
    'Write access (403); an archived repo is 403 repo_archived. Errors are checked in the order 400, 404, 403, 409. ' +
    'A removed thread, reply or review and a merged pull are 409 target_read_only (a closed pull accepts). ' +
    'An upload or group of another repo is 404; a removed upload 409 upload_removed; an upload already attached 409 ' +
    'duplicate_attachment (a group attach creates the members not yet attached and is 409 only when none is new); a group ' +
    'with no active member 409 group_empty.';

  for (const form of REPO_FORMS) {
    for (const target of TARGETS) {
      const path = `${form.prefix}${target.suffix}/attachments`;
      const params = repoParamsSchema(form, target.params);
      const detachParams = repoParamsSchema(form, { ...target.params, upload_uuid: Uuid });

      r.post(
        path,
        {
          schema: {
            tags,
            summary: `Attach an upload, or every active member of an upload group, to ${target.what}`,
            description:
              `Body: exactly one of upload_uuid and group_uuid (400 otherwise). 201 with the attachment; for group_uuid 201 ` +
              `{group_uuid, attachments} with the attachments created, all in one transaction (later group changes do not touch them). ${rules}`,
            params,
            body: AttachBody,
            response: { 201: Type.Union([Attachment, GroupAttachment]), ...errors(403, 409) },
          },
        },
        async (request, reply) => {
          const p = request.params as AnyParams;
          const out = await attach(deps, requireViewer(request), repoRef(p), target.ref(p), request.body as AttachInput);
          return reply.status(201).send('single' in out ? out.single : out.group);
        },
      );

      r.get(
        path,
        {
          schema: {
            tags,
            summary: `The attachments of ${target.what}, oldest first (read access; also after the target is removed)`,
            params,
            querystring: ListQuery,
            response: { 200: Page(Attachment) },
          },
        },
        async (request, reply) => {
          const p = request.params as AnyParams;
          const pg = pageParams(request.query);
          return pageOf(request, reply, pg, await listAttachments(deps, requireViewer(request), repoRef(p), target.ref(p), pg));
        },
      );

      r.delete(
        `${path}/:upload_uuid`,
        {
          schema: {
            tags,
            summary: `Detach an upload from ${target.what}`,
            description:
              'Write access, or the one who attached it (even after losing write access). Stays possible after the upload or the ' +
              'target is removed and after a merge. An archived repo is 403 repo_archived; no such attachment is 404.',
            params: detachParams,
            response: { 204: { type: 'null' }, ...errors(403) },
          },
        },
        async (request, reply) => {
          const p = request.params as AnyParams;
          await detach(deps, requireViewer(request), repoRef(p), target.ref(p), p.upload_uuid!);
          return reply.status(204).send();
        },
      );
    }
  }
}
