import { PassThrough, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GitAccess, gitRefusal, gitRepoAccess, gitScopeRefusal } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { BareGitStore } from './bare-store.ts';
import { hooksDirOf, installHooks, protocolEnv as gitProtocolEnv, spawnReceivePack, spawnUploadPack } from './receive.ts';
import { spawnGit } from './run.ts';

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
      const scoped = gitScopeRefusal(request.viewer, write);
      const access = scoped ? null : await gitRepoAccess(deps.db, request.viewer, kind, params.owner, slug);
      const refusal = scoped ?? gitRefusal(request.viewer, access, write);
      if (refusal) {
        if (refusal.headers) reply.headers(refusal.headers);
        reply.code(refusal.status).send({ error: refusal.code, detail: refusal.detail });
        return null;
      }
      if (!store || !store.exists(access!.repo.uuid)) {
        reply.code(404).send({ error: 'not_found', detail: 'The repo has no git storage.' });
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
      const child = spawnGit([service!.slice(4), '--stateless-rpc', '--advertise-refs', store!.pathOf(access.repo.uuid)], env);
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

    app.post(`${prefix}/git-upload-pack`, { config, schema }, async (request, reply) => {
      const access = await resolve(request, reply, false);
      if (!access) return reply;
      const child = spawnUploadPack(store!, access.repo.uuid, protocolEnv(request), true);
      pipeBody(request, child.stdin!, () => child.kill('SIGKILL'));
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
      const { child, recorded } = await spawnReceivePack(deps, store!, access.repo.uuid, viewer, protocolEnv(request), true);
      pipeBody(request, child.stdin!, () => child.kill('SIGKILL'));
      child.stderr!.resume();
      const out = new PassThrough();
      child.stdout!.pipe(out, { end: false });
      void recorded.catch((err) => request.log.error({ err }, 'recording a push failed')).finally(() => out.end());
      return reply
        .header('content-type', 'application/x-git-receive-pack-result')
        .header('cache-control', 'no-cache, max-age=0, must-revalidate')
        .send(out);
    });
  }
}

/** Streams the request body (inflating gzip) into git's stdin; a broken body kills git. */
function pipeBody(request: FastifyRequest, stdin: NodeJS.WritableStream, kill: () => void): void {
  const encoding = String(request.headers['content-encoding'] ?? 'identity').toLowerCase();
  const source = request.raw;
  const onError = (err: Error | null) => {
    if (err) kill();
  };
  if (encoding === 'gzip' || encoding === 'x-gzip') pipeline(source, createGunzip(), stdin, onError);
  else pipeline(source, stdin, onError);
}
