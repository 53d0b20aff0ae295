import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, pipeline, type Readable, Transform } from 'node:stream';
import { pipeline as pipelineAsync } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GitAccess, gitRefusal, gitRepoAccess, gitScopeRefusal } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest } from '../errors.ts';
import { isStorageFull } from '../http/error-handler.ts';
import { BareGitStore } from '../git/bare-store.ts';
import { pushesDir } from './pushes.ts';
import { HOOK_SOURCE } from '../git/hook-source.ts';
import { hooksDirOf, protocolEnv as gitProtocolEnv, quotaLeft, runReceivePack, startLimitedGit } from './receive.ts';

type Service = 'git-upload-pack' | 'git-receive-pack';
const SERVICES: Service[] = ['git-upload-pack', 'git-receive-pack'];

interface GitParams {
  owner: string;
  repo: string;
}

function pktLine(text: string): string {
  return (text.length + 4).toString(16).padStart(4, '0') + text;
}

/**
 * git's smart HTTP protocol (v0 and v2) at each repo's `clone_url`, outside `/api/v1`:
 * `GET …/info/refs?service=…`, `POST …/git-upload-pack`, `POST …/git-receive-pack`. Bodies stream
 * straight between the socket and `git upload-pack` / `git receive-pack --stateless-rpc` (no JSON
 * parser, no body limit; gzip request bodies are inflated on the way). Push rules run in the
 * repository's pre-receive hook, before any ref moves; refused pushes keep nothing (git's
 * quarantine directory is dropped).
 */
export async function gitHttpRoutes(app: FastifyInstance, opts: { deps: Deps }): Promise<void> {
  const { deps } = opts;
  const store = deps.git instanceof BareGitStore ? deps.git : null;
  if (store) installHooks(hooksDirOf(deps.config.dataDir));

  // These bodies are git's, not JSON: leave the stream unread for the handler.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
  app.addHook('onSend', async (_request, reply) => {
    if (reply.statusCode === 401) reply.header('www-authenticate', 'Basic realm="weft"');
  });

  for (const kind of ['team', 'user'] as const) {
    const prefix = `/git/${kind}s/:owner/:repo`;
    const config = { public: true, longLived: true };
    const schema = { hide: true };

    const resolve = async (request: FastifyRequest, reply: FastifyReply, write: boolean): Promise<GitAccess | null> => {
      const params = request.params as GitParams;
      const slug = params.repo.endsWith('.git') ? params.repo.slice(0, -4) : params.repo;
      // a scoped token: read:repo to fetch, write:repo to push, decided before the lookup
      const scoped = gitScopeRefusal(request.viewer, write);
      const access = scoped ? null : await gitRepoAccess(deps.db, request.viewer, kind, params.owner, slug);
      const refusal = scoped ?? gitRefusal(request.viewer, access, write);
      if (refusal) {
        if (refusal.headers) reply.headers(refusal.headers);
        refuse(reply, refusal.status, refusal.detail);
        return null;
      }
      if (!store || !store.exists(access!.repo.uuid)) {
        refuse(reply, 404, 'The repo has no git storage.');
        return null;
      }
      return access;
    };

    const protocolEnv = (request: FastifyRequest): Record<string, string> => gitProtocolEnv(request.headers['git-protocol']);

    app.get(`${prefix}/info/refs`, { config, schema }, async (request, reply) => {
      const service = (request.query as { service?: string }).service;
      if (!SERVICES.includes(service as Service)) {
        return reply.code(400).send({
          error: 'bad_request',
          detail: 'Only the smart protocol is served: service=git-upload-pack or git-receive-pack.',
        });
      }
      const access = await resolve(request, reply, service === 'git-receive-pack');
      if (!access) return reply;
      const env = protocolEnv(request);
      const child = await startGit(
        request,
        [service!.slice(4), '--stateless-rpc', '--advertise-refs', store!.pathOf(access.repo.uuid)],
        env,
      );
      const out = new PassThrough();
      if (!env.GIT_PROTOCOL?.includes('version=2')) out.write(`${pktLine(`# service=${service}\n`)}0000`);
      child.stdout!.pipe(out);
      child.stderr!.resume();
      child.stdin!.end();
      return reply
        .header('content-type', `application/x-${service}-advertisement`)
        .header('cache-control', 'no-cache, max-age=0, must-revalidate')
        .send(out);
    });

    // The negotiation body is small: read whole (and size-limited, within REQUEST_TIMEOUT_MS)
    // before git starts, so a stalled body holds a socket, never a git process.
    app.post(`${prefix}/git-upload-pack`, { config: { ...config, shortBody: true }, schema }, async (request, reply) => {
      const access = await resolve(request, reply, false);
      if (!access) return reply;
      let body: Buffer;
      try {
        body = await readBody(request, deps.config.gitMaxRequestBytes);
      } catch (err) {
        if (!request.raw.complete) reply.header('connection', 'close');
        throw err;
      }
      const child = await startGit(
        request,
        ['upload-pack', '--stateless-rpc', store!.pathOf(access.repo.uuid)],
        protocolEnv(request),
      );
      child.stdin!.end(body);
      child.stderr!.resume();
      reply.raw.on('close', () => {
        if (child.exitCode === null) child.kill('SIGKILL');
      });
      return reply
        .header('content-type', 'application/x-git-upload-pack-result')
        .header('cache-control', 'no-cache, max-age=0, must-revalidate')
        .send(child.stdout);
    });

    app.post(`${prefix}/git-receive-pack`, { config, schema }, async (request, reply) => {
      const access = await resolve(request, reply, true);
      if (!access) return reply;
      const viewer = request.viewer!;
      const repo = access.repo;
      // The pack is spooled to a file first (bounded by the quota left), so a slow pusher holds
      // neither a git process nor the repo's write lock.
      let spool: string;
      try {
        spool = await spoolBody(request, deps.config.dataDir, await quotaLeft(deps, repo.uuid));
      } catch (err) {
        // The rest of a refused body is not read: close the connection after answering.
        if (!request.raw.complete) reply.header('connection', 'close');
        throw err;
      }
      try {
        // No receive.maxInputSize: the spool already bounds the pack (quota left + 1 MiB), and
        // the pre-receive hook's refusal says why ("the push needs N bytes but the quota leaves M").
        const chunks: Buffer[] = [];
        await runReceivePack(deps, store!, repo.uuid, viewer, {
          client: request.ip,
          env: protocolEnv(request),
          statelessRpc: true,
          connect: (child) => {
            child.stdout!.on('data', (c: Buffer) => chunks.push(c));
            child.stderr!.resume();
            pipeline(createReadStream(spool), child.stdin!, () => undefined);
          },
        });
        const report = Buffer.concat(chunks);
        return reply
          .header('content-type', 'application/x-git-receive-pack-result')
          .header('cache-control', 'no-cache, max-age=0, must-revalidate')
          .send(report);
      } finally {
        await rm(spool, { force: true });
      }
    });
  }

  /** Takes a git process slot for the client, then starts git: 503 when over a cap or when git cannot start. */
  const startGit = (request: FastifyRequest, args: string[], env: Record<string, string>) =>
    startLimitedGit(deps, request.ip, args, env);
}

/**
 * A refusal as `text/plain`, which the git client prints as `remote: …` lines (a JSON body it
 * would not show: the user would see only "The requested URL returned error: 403").
 */
function refuse(reply: FastifyReply, status: number, detail: string): void {
  reply.code(status).type('text/plain; charset=utf-8').send(`${detail}\n`);
}

/**
 * The request body, inflated when gzip, as a stream of its own: a refusal destroys this stream,
 * never the request (so the error response can still be written; the connection then closes).
 */
function bodySource(request: FastifyRequest): Readable {
  const encoding = String(request.headers['content-encoding'] ?? 'identity').toLowerCase();
  const raw = request.raw;
  const out = encoding === 'gzip' || encoding === 'x-gzip' ? createGunzip() : new PassThrough();
  raw.on('error', (err) => out.destroy(err));
  raw.on('close', () => {
    if (!raw.complete) out.destroy(new Error('the client went away mid-body'));
  });
  out.on('close', () => raw.unpipe(out));
  return raw.pipe(out);
}

const unreadable = () => badRequest('The request body could not be read (the client went away, or bad gzip).');

/** Reads the whole (inflated) body, at most `max` bytes: 413 beyond. */
async function readBody(request: FastifyRequest, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  const source = bodySource(request);
  try {
    for await (const chunk of source) {
      size += (chunk as Buffer).length;
      if (size > max)
        throw new AppError(
          413,
          'payload_too_large',
          `The fetch negotiation is larger than ${max} bytes (GIT_MAX_REQUEST_BYTES).`,
        );
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw unreadable();
  }
  return Buffer.concat(chunks);
}

/** Spools the (inflated) push body to a file under DATA_DIR, at most the quota left plus 1 MiB of commands. */
async function spoolBody(request: FastifyRequest, dataDir: string, left: number): Promise<string> {
  const dir = join(pushesDir(dataDir), 'tmp');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${Date.now()}-${randomUUID()}`);
  const max = left + 1024 * 1024;
  let size = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > max)
        return cb(new AppError(413, 'quota_exceeded', `The push is larger than the ${left} bytes the repo quota leaves.`));
      cb(null, chunk);
    },
  });
  try {
    await pipelineAsync(bodySource(request), meter, createWriteStream(file, { mode: 0o600 }));
  } catch (err) {
    await rm(file, { force: true });
    if (err instanceof AppError || isStorageFull(err)) throw err;
    throw unreadable();
  }
  return file;
}

/** The pre-receive and post-receive hooks every repository runs (through `core.hooksPath`). */
function installHooks(dir: string): void {
  mkdirSync(dir, { recursive: true });
  // The hooks are CommonJS whatever the enclosing package says.
  writeFileSync(join(dir, 'package.json'), '{"type":"commonjs"}\n');
  for (const name of ['pre-receive', 'post-receive']) {
    writeFileSync(join(dir, name), `#!${process.execPath}\n${HOOK_SOURCE}`, { mode: 0o755 });
  }
}
