import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type GitAccess, gitRefusal, gitRepoAccess } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { actorOf } from '../events/service.ts';
import { inTransaction } from '../core/transaction.ts';
import { addDiskUsage, BareGitStore } from './bare-store.ts';
import { protectedBranchRegExps } from './push-rules.ts';
import { HOOK_SOURCE } from './hook-source.ts';
import { syncPullHeads } from '../pulls/heads.ts';
import { pullsMovedByPush } from '../pulls/pushes.ts';
import { spawnGit } from './run.ts';

type Service = 'git-upload-pack' | 'git-receive-pack';
const SERVICES: Service[] = ['git-upload-pack', 'git-receive-pack'];
/** What a `Git-Protocol` header may contain (`version=2`, `key=value:key=value`). */
const GIT_PROTOCOL_RE = /^[A-Za-z0-9=:.,_-]{1,256}$/;

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
  const hooksDir = join(deps.config.dataDir, 'git-hooks');
  if (store) installHooks(hooksDir);

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
      const access = await gitRepoAccess(deps.db, request.viewer, kind, params.owner, slug);
      const refusal = gitRefusal(request.viewer, access, write);
      if (refusal) {
        refuse(reply, refusal.status, refusal.detail);
        return null;
      }
      if (!store || !store.exists(access!.repo.uuid)) {
        refuse(reply, 404, 'The repo has no git storage.');
        return null;
      }
      return access;
    };

    const protocolEnv = (request: FastifyRequest): Record<string, string> => {
      const header = request.headers['git-protocol'];
      return typeof header === 'string' && GIT_PROTOCOL_RE.test(header) ? { GIT_PROTOCOL: header } : {};
    };

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
      const child = spawnGit(['upload-pack', '--stateless-rpc', store!.pathOf(access.repo.uuid)], protocolEnv(request));
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
      const repo = access.repo;
      const dir = store!.pathOf(repo.uuid);
      const sizeBefore = await store!.size(repo.uuid);
      const fresh = await deps.db
        .selectFrom('repos')
        .select(['disk_usage_bytes', 'max_disk_bytes'])
        .where('uuid', '=', repo.uuid)
        .executeTakeFirstOrThrow();
      const left = Math.max(0, fresh.max_disk_bytes - fresh.disk_usage_bytes);
      const protectedRes = await protectedBranchRegExps(deps.db, repo.uuid);
      const logFile = join(tmpdir(), `weft-push-${randomUUID()}`);
      const child = spawnGit(
        ['-c', `core.hooksPath=${hooksDir}`, '-c', `receive.maxInputSize=${left + 1}`, 'receive-pack', '--stateless-rpc', dir],
        {
          ...protocolEnv(request),
          WEFT_PROTECTED: JSON.stringify(protectedRes),
          WEFT_QUOTA_LEFT: String(left),
          WEFT_PUSH_LOG: logFile,
        },
      );
      pipeBody(request, child.stdin!, () => child.kill('SIGKILL'));
      child.stderr!.resume();
      const out = new PassThrough();
      child.stdout!.pipe(out, { end: false });
      child.on('close', () => {
        void recordPush(deps, store!, repo.uuid, viewer, sizeBefore, logFile)
          .catch((err) => request.log.error({ err }, 'recording a push failed'))
          .finally(() => out.end());
      });
      return reply
        .header('content-type', 'application/x-git-receive-pack-result')
        .header('cache-control', 'no-cache, max-age=0, must-revalidate')
        .send(out);
    });
  }
}

/**
 * A refusal as `text/plain`, which the git client prints as `remote: …` lines (a JSON body it
 * would not show: the user would see only "The requested URL returned error: 403").
 */
function refuse(reply: FastifyReply, status: number, detail: string): void {
  reply.code(status).type('text/plain; charset=utf-8').send(`${detail}\n`);
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

/** After receive-pack: the refs it updated (from the post-receive hook) become events, the growth a usage delta. */
async function recordPush(
  deps: Deps,
  store: BareGitStore,
  repoUuid: string,
  viewer: { uuid: string; username: string },
  sizeBefore: number,
  logFile: string,
): Promise<void> {
  let log = '';
  try {
    log = readFileSync(logFile, 'utf8');
  } catch {
    // nothing was updated
  } finally {
    rmSync(logFile, { force: true });
  }
  const updates = log
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
    .filter((parts) => parts.length === 3);
  const sizeAfter = await store.size(repoUuid);
  const pulls = await inTransaction(deps, async (tx) => {
    await addDiskUsage(tx, repoUuid, sizeAfter - sizeBefore);
    if (updates.length === 0) return [];
    const repo = await tx.db.selectFrom('repos').selectAll().where('uuid', '=', repoUuid).executeTakeFirst();
    if (!repo) return [];
    for (const [before, after, ref] of updates) {
      await tx.emit({
        kind: 'branch-pushed',
        scopes: [`repo:${repo.uuid}`],
        actor: actorOf(viewer),
        payload: { repo_uuid: repoUuid, ref, before, after, pusher: { uuid: viewer.uuid, username: viewer.username } },
      });
    }
    return pullsMovedByPush(
      tx,
      repoUuid,
      updates.map(([before, after, ref]) => ({ before: before!, after: after!, ref: ref! })),
      viewer,
    );
  });
  // before `git push` returns: `git fetch origin pull/N/head` right after it sees the new head
  await syncPullHeads(deps, pulls);
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
