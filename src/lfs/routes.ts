/**
 * The Git LFS API at each repo's clone URL (docs/lfs.md), beside git's smart HTTP and outside
 * `/api/v1`: `POST …/info/lfs/objects/batch` (basic transfer), `PUT`/`GET
 * …/info/lfs/objects/{oid}` (streamed both ways), `POST …/info/lfs/objects/{oid}/verify`, and the
 * locks API (`/locks`, `/locks/verify`, `/locks/{id}/unlock`). Same credentials and access as
 * git over HTTP, or the signed header `git-lfs-authenticate` gives over SSH.
 */
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { isStorageFull } from '../http/error-handler.ts';
import { OID_RE } from './pointer.ts';
import {
  batch,
  createLock,
  heldObject,
  LfsError,
  type LfsAccess,
  lfsAccess,
  listLocks,
  parseBatch,
  unlock,
  uploadObject,
  verifyLocks,
  verifyObject,
} from './service.ts';
import { issueLfsToken, LFS_TOKEN_HEADER } from './token.ts';

const LFS_JSON = 'application/vnd.git-lfs+json';
/** A JSON body of the LFS API is at most this large (a batch of 1,000 objects fits). */
const MAX_JSON_BYTES = 1024 * 1024;

interface Params {
  owner: string;
  repo: string;
  oid?: string;
  id?: string;
}

/** The clone URL path of a repo, as LFS actions name it. */
export const lfsBase = (publicUrl: string, kind: 'team' | 'user', owner: string, slug: string): string =>
  `${publicUrl}/git/${kind}s/${owner}/${slug}.git/info/lfs`;

export async function lfsRoutes(app: FastifyInstance, opts: { deps: Deps }): Promise<void> {
  const { deps } = opts;
  // LFS bodies are read by the handlers: JSON (small, read whole) or object bytes (streamed)
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  app.setErrorHandler((err, _request, reply) => {
    if (err instanceof LfsError) {
      return reply
        .code(err.status)
        .headers(err.headers)
        .type(LFS_JSON)
        .send({ message: err.message, ...err.body });
    }
    if (isStorageFull(err)) return reply.code(507).type(LFS_JSON).send({ message: 'The server has no space left.' });
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) {
      if (status === 401) reply.header('lfs-authenticate', 'Basic realm="weft"').header('www-authenticate', 'Basic realm="weft"');
      return reply
        .code(status)
        .type(LFS_JSON)
        .send({ message: (err as Error).message });
    }
    reply.log.error(err);
    return reply.code(500).type(LFS_JSON).send({ message: 'The server failed; the request id is in its log.' });
  });

  for (const kind of ['team', 'user'] as const) {
    const base = `/git/${kind}s/:owner/:repo/info/lfs`;
    const config = { public: true, longLived: true };
    const schema = { hide: true };

    const access = (request: FastifyRequest, write: boolean): Promise<LfsAccess> => {
      const p = request.params as Params;
      const header = request.headers[LFS_TOKEN_HEADER];
      return lfsAccess(deps, request.viewer ?? null, typeof header === 'string' ? header : undefined, { kind, ...p }, write);
    };
    const send = (reply: FastifyReply, status: number, body: unknown) => reply.code(status).type(LFS_JSON).send(body);

    app.post(`${base}/objects/batch`, { config: { ...config, shortBody: true }, schema }, async (request, reply) => {
      const body = await readJson(request);
      const req = parseBatch(body);
      const a = await access(request, req.operation === 'upload');
      const level = req.operation === 'upload' ? 'write' : 'read';
      // the actions carry a token of their own, so they work whatever credentials reached the batch
      const grant = a.viewer ? issueLfsToken(deps.secret, { user: a.viewer.uuid, repo: a.repo.uuid, level }) : null;
      const header: Record<string, string> = grant ? { 'X-Weft-LFS-Token': grant.token } : {};
      const root = lfsBase(deps.config.publicUrl, kind, a.owner, a.repo.slug);
      return send(reply, 200, await batch(deps, a, req, (oid) => `${root}/objects/${oid}`, header, grant?.expiresIn ?? 3600));
    });

    app.put(`${base}/objects/:oid`, { config, schema }, async (request, reply) => {
      const a = await access(request, true);
      const { oid } = request.params as Params;
      const length = request.headers['content-length'];
      const declared = length !== undefined && /^[0-9]{1,16}$/.test(length) ? Number(length) : null;
      await uploadObject(deps, a, oid!, declared, bodyStream(request));
      return send(reply, 200, {});
    });

    app.post(`${base}/objects/:oid/verify`, { config: { ...config, shortBody: true }, schema }, async (request, reply) => {
      const a = await access(request, true);
      await verifyObject(deps, a, await readJson(request));
      return send(reply, 200, {});
    });

    app.get(`${base}/objects/:oid`, { config, schema }, async (request, reply) => {
      const a = await access(request, false);
      const { oid } = request.params as Params;
      const size = OID_RE.test(oid!) ? await heldObject(deps.db, a.repo.uuid, oid!) : null;
      if (size === null) throw new LfsError(404, 'The object does not exist in this repo.');
      const stream = deps.blobs.get(oid!);
      reply.raw.on('close', () => stream.destroy());
      return reply.code(200).type('application/octet-stream').header('content-length', size).send(stream);
    });

    app.post(`${base}/locks`, { config: { ...config, shortBody: true }, schema }, async (request, reply) => {
      const a = await access(request, true);
      return send(reply, 201, { lock: await createLock(deps, a, await readJson(request)) });
    });
    app.get(`${base}/locks`, { config, schema }, async (request, reply) => {
      const a = await access(request, false);
      return send(reply, 200, await listLocks(deps, a, request.query as Record<string, string>));
    });
    app.post(`${base}/locks/verify`, { config: { ...config, shortBody: true }, schema }, async (request, reply) => {
      const a = await access(request, true);
      return send(reply, 200, await verifyLocks(deps, a, await readJson(request)));
    });
    app.post(`${base}/locks/:id/unlock`, { config: { ...config, shortBody: true }, schema }, async (request, reply) => {
      const a = await access(request, true);
      const { id } = request.params as Params;
      return send(reply, 200, { lock: await unlock(deps, a, id!, await readJson(request)) });
    });
  }
}

/** The request body as a stream of its own (a refusal destroys it, never the request). */
function bodyStream(request: FastifyRequest): Readable {
  const raw = request.raw;
  const out = new PassThrough();
  raw.on('error', (err) => out.destroy(err));
  raw.on('close', () => {
    if (!raw.complete) out.destroy(new Error('the client went away mid-body'));
  });
  return raw.pipe(out);
}

async function readJson(request: FastifyRequest): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request.raw) {
    size += (chunk as Buffer).length;
    if (size > MAX_JSON_BYTES) throw new LfsError(413, `The request body is larger than ${MAX_JSON_BYTES} bytes.`);
    chunks.push(chunk as Buffer);
  }
  if (size === 0) return {};
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new LfsError(422, 'The request body is not JSON.');
  }
}
