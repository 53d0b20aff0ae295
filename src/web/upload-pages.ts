import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
import { checkBodyCsrf, requirePage, seeOther } from './context.ts';
import { repoHref } from './home-pages.ts';
import { NumberParam, pageRepoRef, repoRoute } from './repo-common.ts';

/**
 * Attaching a file to a thread or a pull from its page (README "Web interface"): a multipart form
 * whose first field is the CSRF token `_csrf` (or the `X-CSRF-Token` header; never in the address,
 * which lands in logs), then one `file` part, stored as an upload and attached through the same
 * services as `POST {repo}/uploads` and `POST {repo}/threads/{n}/attachments` (or `.../pulls/{n}/attachments`).
 * A refused body that was not read to its end (413 and the like) closes its connection, as the API's upload route does.
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
      { params: { number: NumberParam } },
      async (request, reply) => {
        try {
          return await attachFromForm(request, reply, kind);
        } catch (err) {
          // The rest of a refused body is not read: close the connection after answering.
          if (!request.raw.complete) reply.header('connection', 'close');
          throw err;
        }
      },
      { csrfInBody: true },
    );
  }

  async function attachFromForm(request: FastifyRequest, reply: FastifyReply, kind: 'thread' | 'pull'): Promise<FastifyReply> {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const { number } = request.params as { number: number };
    if (!request.isMultipart()) throw badRequest('Send the file as multipart/form-data.');
    const stored: HeldBlob[] = [];
    try {
      let csrf: unknown;
      let attached = false;
      for await (const part of request.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === '_csrf') csrf = part.value;
          continue;
        }
        // the token comes before the file: nothing of the file is stored for a forged form
        checkBodyCsrf(request, csrf);
        if (part.fieldname !== 'file' || !part.filename || attached) {
          part.file.resume();
          throw badRequest('Choose a file to attach.');
        }
        const plan = await planUpload(deps, c.viewer, ref, undefined);
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
        attached = true;
      }
      checkBodyCsrf(request, csrf);
      if (!attached) throw badRequest('Choose a file to attach.');
    } catch (err) {
      await discardBlobs(deps, stored);
      if (err instanceof AppError) throw err;
      const e = err as { code?: string; message?: string };
      if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw payloadTooLarge(cap);
      throw badRequest(`Malformed multipart body: ${e.message ?? 'unreadable'}.`);
    }
    const repo = await getRepo(deps, c.viewer, ref);
    return seeOther(reply, `${repoHref(repo)}/${kind}s/${number}`);
  }
}
