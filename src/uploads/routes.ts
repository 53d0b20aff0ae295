import { PassThrough } from 'node:stream';
import multipart from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError, badRequest } from '../errors.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { pagedRepoList } from '../http/repo-routes.ts';
import { etagMatches, parseRange } from '../http/ranges.ts';
import { errors } from '../http/route-schemas.ts';
import { ErrorBody, Page } from '../http/schemas.ts';
import { CreateGroupBody, GroupParam, ListQuery, Upload, UploadGroup, UploadList, UploadParam, UploadQuery } from './schemas.ts';
import {
  cleanContentType,
  createGroup,
  deleteGroup,
  getGroup,
  getUpload,
  listUploads,
  payloadTooLarge,
  removeUpload,
  sanitizeFilename,
  type StoredFile,
  streamToBlob,
  uploadFiles,
  uploadForDownload,
  type UploadReceiver,
} from './service.ts';

type UploadParams = RepoParams & { upload_uuid: string };
type GroupParams = RepoParams & { group_uuid: string };
type UploadQueryT = { filename?: string; group_uuid?: string };

/** Most files one multipart request may carry. */
const MAX_PARTS = 100;

/**
 * The request body as a stream that ends when the body does and fails when the client goes
 * away mid-body. The blob store's pipeline destroys this pass-through (not the socket) when it
 * refuses the content, so a 413 can still be answered.
 */
function bodyStream(request: FastifyRequest): PassThrough {
  const raw = request.raw;
  const pass = new PassThrough();
  raw.pipe(pass);
  raw.on('close', () => {
    if (!raw.complete) pass.destroy(new Error('the client went away mid-upload'));
  });
  raw.on('error', (err) => pass.destroy(err));
  return pass;
}

/** A raw-body upload: the body is the file, named by `?filename=`. */
function rawUpload(deps: Deps, request: FastifyRequest): UploadReceiver {
  const query = request.query as UploadQueryT;
  if (query.filename === undefined) throw badRequest('A raw-body upload needs ?filename=NAME.');
  const filename = sanitizeFilename(query.filename);
  return async (plan, keep) => {
    const declared = Number(request.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > plan.cap) throw payloadTooLarge(plan.cap);
    const blob = keep(await streamToBlob(deps, bodyStream(request), plan));
    return [{ filename, contentType: cleanContentType(request.headers['content-type']), blob }];
  };
}

/** Every `file` part streamed to the blob store in turn; any other part is 400. */
function multipartUpload(deps: Deps, request: FastifyRequest): UploadReceiver {
  const query = request.query as UploadQueryT;
  if (query.filename !== undefined) throw badRequest('filename is for raw-body uploads; multipart parts carry their own.');
  return async (plan, keep) => {
    const files: StoredFile[] = [];
    let used = 0;
    try {
      for await (const part of request.parts()) {
        if (part.type !== 'file' || part.fieldname !== 'file') {
          if (part.type === 'file') part.file.resume();
          throw badRequest(`Unexpected multipart part "${part.fieldname}": send the files as parts named "file".`);
        }
        const filename = sanitizeFilename(part.filename ?? '');
        const blob = keep(await streamToBlob(deps, part.file, plan, used));
        if (part.file.truncated) throw payloadTooLarge(plan.cap);
        used += blob.size;
        files.push({ filename, contentType: cleanContentType(part.mimetype), blob });
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      const e = err as { code?: string; statusCode?: number; message?: string };
      if (e.code === 'FST_REQ_FILE_TOO_LARGE') throw payloadTooLarge(plan.cap);
      if (e.code === 'FST_FILES_LIMIT' || e.code === 'FST_PARTS_LIMIT' || e.code === 'FST_FIELDS_LIMIT') {
        throw new AppError(413, 'payload_too_large', `A multipart upload may carry at most ${MAX_PARTS} files.`);
      }
      throw badRequest(`Malformed multipart body: ${e.message ?? 'unreadable'}.`);
    }
    if (files.length === 0) throw badRequest('The multipart body has no "file" part.');
    return files;
  };
}

/** RFC 6266: an ASCII fallback plus `filename*` (RFC 8187) when the name is not plain ASCII. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const plain = ascii === filename;
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return plain ? `attachment; filename="${ascii}"` : `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export async function uploadsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['uploads'];
  const cap = deps.config.maxUploadBytes;
  const write = 'Write access; an archived repo is 403 repo_archived, an inactive team 403 team_inactive.';

  // The upload routes read the body themselves: their own parsers, in their own context.
  await app.register(async (child) => {
    child.removeAllContentTypeParsers();
    await child.register(multipart, {
      limits: { fileSize: cap + 1, files: MAX_PARTS, parts: MAX_PARTS + 10, fields: 10, fieldSize: 1024 },
    });
    // Any other media type is the raw file: the handler streams the request itself.
    child.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const c = child.withTypeProvider<TypeBoxTypeProvider>();
    for (const form of REPO_FORMS) {
      c.post(
        `${form.prefix}/uploads`,
        {
          // The body never goes through Fastify's buffer; MAX_UPLOAD_BYTES is enforced while streaming.
          bodyLimit: cap * MAX_PARTS + 1024 * 1024,
          config: { rateLimit: 'api:upload', longLived: true },
          schema: {
            tags,
            summary: 'Upload a file (raw body) or several (multipart/form-data)',
            description:
              `${write} Raw body: the bytes with their Content-Type and ?filename=NAME; 201 with the upload. ` +
              'multipart/form-data: one or more parts named "file" (their filename and Content-Type are used; any other part is 400, ' +
              'no file part is 400); 201 {uploads: [...]}. The content is streamed to disk while its SHA-256 is computed and stored ' +
              `once per content. One file may be at most MAX_UPLOAD_BYTES (default 25 MiB; now ${cap}): 413 payload_too_large; ` +
              "beyond the repo's max_disk_bytes (active uploads plus git data): 413 quota_exceeded. A refused or broken upload " +
              "stores nothing. ?group_uuid joins an upload group of this repo (another repo's group is 404). A filename with a " +
              'bidirectional control character (U+202A-U+202E, U+2066-U+2069) is 400. A full disk is 507 insufficient_storage ' +
              '(nothing stored). A blob is deleted once no active upload (and no upload in progress) references it.',
            params: repoParamsSchema(form),
            querystring: UploadQuery,
            consumes: ['application/octet-stream', 'multipart/form-data', '*/*'],
            // Per-media-type entries document both bodies; they validate nothing (the handler reads the stream).
            body: {
              content: {
                'application/octet-stream': {
                  schema: { description: 'the raw file bytes (any media type other than multipart/form-data is stored as sent)' },
                },
                'multipart/form-data': {
                  schema: { description: 'one or more parts named "file", each with a filename and a Content-Type' },
                },
              },
            } as never,
            response: {
              201: Type.Union([Upload, UploadList]),
              ...errors(403),
              413: {
                ...ErrorBody,
                'x-response-description':
                  'payload_too_large: a file over MAX_UPLOAD_BYTES; quota_exceeded: over the repo max_disk_bytes',
              } as never,
              507: {
                ...ErrorBody,
                'x-response-description': 'insufficient_storage: the server disk is full; nothing was stored',
              } as never,
            },
          },
        },
        async (request, reply) => {
          const viewer = requireViewer(request);
          const query = request.query as UploadQueryT;
          const ref = repoRef(request.params as RepoParams);
          const multi = request.isMultipart();
          try {
            const receive = multi ? multipartUpload(deps, request) : rawUpload(deps, request);
            const uploads = await uploadFiles(deps, viewer, ref, query.group_uuid, receive);
            return reply.status(201).send(multi ? { uploads } : uploads[0]!);
          } catch (err) {
            // The rest of a refused body is not read: close the connection after answering.
            if (!request.raw.complete) reply.header('connection', 'close');
            throw err;
          }
        },
      );
    }
  });

  for (const form of REPO_FORMS) {
    const base = `${form.prefix}/uploads`;
    const uploadParams = repoParamsSchema(form, UploadParam);
    const groupParams = repoParamsSchema(form, GroupParam);

    r.get(
      base,
      {
        schema: {
          tags,
          summary: "The repo's active uploads, oldest first (read access)",
          params: repoParamsSchema(form),
          querystring: ListQuery,
          response: { 200: Page(Upload) },
        },
      },
      pagedRepoList(({ viewer, ref }, p) => listUploads(deps, viewer, ref, p)),
    );

    r.get(
      `${base}/:upload_uuid`,
      {
        schema: {
          tags,
          summary: 'Get an upload record (removed ones too, with status removed)',
          params: uploadParams,
          response: { 200: Upload },
        },
      },
      async (request) => {
        const params = request.params as UploadParams;
        return getUpload(deps, requireViewer(request), repoRef(params), params.upload_uuid);
      },
    );

    r.get(
      `${base}/:upload_uuid/content`,
      {
        schema: {
          tags,
          summary: "Download an upload's bytes",
          description:
            'Content-Type as uploaded, Content-Length, ETag (the quoted SHA-256), Content-Disposition: attachment (RFC 6266, ' +
            'filename* for non-ASCII names), X-Content-Type-Options: nosniff, Content-Security-Policy: sandbox (nothing uploaded runs script on the API’s origin). If-None-Match → 304; one `Range: bytes=` range → 206 ' +
            'with Content-Range (an unsatisfiable one 416; several ranges serve the whole content). A removed upload is 410 gone.',
          params: uploadParams,
          response: {
            // 206 and 304 are described in the text: one success status is documented.
            200: {
              description: 'the bytes (206 with Content-Range for a Range request, 304 when If-None-Match matches)',
              content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
            },
            ...errors(410, 416),
          } as never,
        },
      },
      async (request, reply) => serveContent(deps, request, reply),
    );

    r.delete(
      `${base}/:upload_uuid`,
      {
        schema: {
          tags,
          summary: 'Remove an upload: its status becomes removed, its content 410, its bytes leave the quota',
          description:
            'The uploader or maintain level; an archived repo is 403 repo_archived. Existing attachments stay (detaching stays possible). Removing a removed upload is 204.',
          params: uploadParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as UploadParams;
        await removeUpload(deps, requireViewer(request), repoRef(params), params.upload_uuid);
        return reply.status(204).send();
      },
    );

    r.post(
      `${form.prefix}/upload-groups`,
      {
        schema: {
          tags,
          summary: 'Create an upload group; uploads join it with ?group_uuid=',
          description: write,
          params: repoParamsSchema(form),
          body: CreateGroupBody,
          response: { 201: UploadGroup, ...errors(403) },
        },
      },
      async (request, reply) => {
        const group = await createGroup(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body?.name);
        return reply.status(201).send(group);
      },
    );

    r.get(
      `${form.prefix}/upload-groups/:group_uuid`,
      {
        schema: {
          tags,
          summary: 'Get an upload group with its active members',
          params: groupParams,
          response: { 200: UploadGroup },
        },
      },
      async (request) => {
        const params = request.params as GroupParams;
        return getGroup(deps, requireViewer(request), repoRef(params), params.group_uuid);
      },
    );

    r.delete(
      `${form.prefix}/upload-groups/:group_uuid`,
      {
        schema: {
          tags,
          summary: 'Delete an upload group (its uploads and existing attachments stay)',
          description: 'The group creator or maintain level; an archived repo is 403 repo_archived. A deleted group is 404.',
          params: groupParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as GroupParams;
        await deleteGroup(deps, requireViewer(request), repoRef(params), params.group_uuid);
        return reply.status(204).send();
      },
    );
  }
}

async function serveContent(deps: Deps, request: FastifyRequest, reply: FastifyReply) {
  const params = request.params as UploadParams;
  const upload = await uploadForDownload(deps, requireViewer(request), repoRef(params), params.upload_uuid);
  const size = Number(upload.size_bytes);
  const etag = `"${upload.sha256}"`;
  reply.header('etag', etag);
  reply.header('accept-ranges', 'bytes');
  reply.header('x-content-type-options', 'nosniff');
  reply.header('content-security-policy', 'sandbox');
  reply.header('cache-control', 'private, no-cache');
  if (etagMatches(request.headers['if-none-match'], etag)) return reply.status(304).send();
  reply.header('content-disposition', contentDisposition(upload.filename));
  const range = parseRange(request.headers.range, size);
  if (range === 'bad') {
    reply.header('content-range', `bytes */${size}`);
    throw new AppError(416, 'range_not_satisfiable', `The range is outside the content (${size} bytes).`);
  }
  reply.header('content-type', upload.content_type);
  if (range) {
    reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`);
    reply.header('content-length', range.end - range.start + 1);
    return reply.status(206).send(deps.blobs.get(upload.sha256, range));
  }
  reply.header('content-length', size);
  if (size === 0) return reply.status(200).send('');
  return reply.status(200).send(deps.blobs.get(upload.sha256));
}
