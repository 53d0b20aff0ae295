import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { attach } from '../attachments/service.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest } from '../errors.ts';
import { getRepo } from '../repos/service.ts';
import {
  discardBlobs,
  type HeldBlob,
  payloadTooLarge,
  planUpload,
  recordUploads,
  sanitizeFilename,
  cleanContentType,
  streamToBlob,
} from '../uploads/service.ts';
import { requirePage, seeOther } from './context.ts';
import { repoHref } from './home-pages.ts';
import { NumberParam, pageRepoRef, repoRoute } from './repo-common.ts';

/**
 * Attaching a file to a thread or a pull from its page (README "Web interface"): one `file` part of a
 * multipart form (the CSRF token in the form's address, `?_csrf=`, since the body is streamed),
 * stored as an upload and attached through the same services as `POST {repo}/uploads` and
 * `POST {repo}/threads/{n}/attachments` (or `.../pulls/{n}/attachments`).
 */
export async function uploadPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const cap = deps.config.maxUploadBytes;
  app.removeAllContentTypeParsers();
  await app.register(multipart, { limits: { fileSize: cap + 1, files: 1, parts: 2, fields: 1, fieldSize: 1024 } });
  for (const kind of ['thread', 'pull'] as const) {
    repoRoute(
      app,
      'POST',
      `/${kind}s/:number/attachments`,
      {
        params: { number: NumberParam },
        querystring: Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
      },
      async (request, reply) => {
        const c = requirePage(request);
        const ref = pageRepoRef(request);
        const { number } = request.params as { number: number };
        if (!request.isMultipart()) throw badRequest('Send the file as multipart/form-data.');
        const plan = await planUpload(deps, c.viewer, ref, undefined);
        const stored: HeldBlob[] = [];
        try {
          const part = await request.file();
          if (!part || part.fieldname !== 'file' || !part.filename) {
            part?.file.resume();
            throw badRequest('Choose a file to attach.');
          }
          const blob = await streamToBlob(deps, part.file, plan);
          stored.push(blob);
          if (part.file.truncated) throw payloadTooLarge(plan.cap);
          const [upload] = await recordUploads(
            deps,
            c.viewer,
            ref,
            [{ filename: sanitizeFilename(part.filename), contentType: cleanContentType(part.mimetype), blob }],
            undefined,
          );
          stored.length = 0; // the upload row holds its blob now
          await attach(deps, c.viewer, ref, { kind, number }, { upload_uuid: upload!.uuid });
        } catch (err) {
          await discardBlobs(deps, stored);
          if (err instanceof AppError) throw err;
          const e = err as { code?: string; message?: string };
          if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw payloadTooLarge(cap);
          throw badRequest(`Malformed multipart body: ${e.message ?? 'unreadable'}.`);
        }
        const repo = await getRepo(deps, c.viewer, ref);
        return seeOther(reply, `${repoHref(repo)}/${kind}s/${number}`);
      },
    );
  }
}
