/**
 * The git transfer processes smart HTTP (src/git/http.ts) and SSH (src/ssh/) both run, with the
 * same limits, push rules and push bookkeeping (README "Git"): a git process slot of the
 * instance's limiter per client address (`gitHttpLimiter`), and for a push, under the repo's git
 * write lock, the push marker (src/code/pushes.ts), `git receive-pack` with the pre-receive hook's
 * rules (protected branches, ref kinds, ref count, quota), then the record of what it moved.
 * HTTP runs git with `--stateless-rpc` (the pack spooled first), SSH as one two-way session.
 */
import type { ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Deps } from '../deps.ts';
import type { BareGitStore } from '../git/bare-store.ts';
import { gitHttpLimiter, started } from '../git/limits.ts';
import { beginPush, recordLeftoverPushes, recordPush } from './pushes.ts';
import { protectedBranchRegExps } from '../git/push-rules.ts';
import { pushRefusal } from '../mirrors/source.ts';
import { withRepoLock } from '../git/repo-lock.ts';
import { spawnGit } from '../git/run.ts';

/** What a `Git-Protocol` header (or an SSH client's GIT_PROTOCOL) may contain (`version=2`, `key=value:key=value`). */
export const GIT_PROTOCOL_RE = /^[A-Za-z0-9=:.,_-]{1,256}$/;

/** `GIT_PROTOCOL` for git, when the client's value passes the character check. */
export const protocolEnv = (value: unknown): Record<string, string> =>
  typeof value === 'string' && GIT_PROTOCOL_RE.test(value) ? { GIT_PROTOCOL: value } : {};

/** Where the hooks live (selected with `core.hooksPath`). */
export const hooksDirOf = (dataDir: string): string => join(dataDir, 'git-hooks');

/**
 * Takes a git process slot for `client` (an address), then starts git: a 503 AppError when over
 * a cap or when git cannot start. The slot is freed when git exits.
 */
export async function startLimitedGit(
  deps: Deps,
  client: string,
  args: string[],
  env: Record<string, string>,
  /** a slot already taken for this process (a push takes it before the repo's lock) */
  slot?: () => void,
): Promise<ChildProcess> {
  // past a cap, waits in line for a slot up to GIT_WAIT_MS (then 503)
  const release = slot ?? (await gitHttpLimiter(deps).acquire(client));
  try {
    const child = await started(spawnGit(args, env));
    child.once('close', release);
    return child;
  } catch (err) {
    release();
    throw err;
  }
}

/** The bytes the repo may still grow by. */
export async function quotaLeft(deps: Deps, repoUuid: string): Promise<number> {
  const fresh = await deps.db
    .selectFrom('repos')
    .select(['disk_usage_bytes', 'max_disk_bytes'])
    .where('uuid', '=', repoUuid)
    .executeTakeFirstOrThrow();
  return Math.max(0, Number(fresh.max_disk_bytes) - Number(fresh.disk_usage_bytes));
}

/**
 * One push: under the repo's git write lock, records leftover pushes, writes the push marker,
 * runs `git receive-pack` with the push rules, lets `connect` wire its stdio, waits for it to
 * exit and records what it moved. Answers receive-pack's exit code.
 *
 * `statelessRpc` (HTTP): the pack was spooled within the quota first. Otherwise (SSH) the pack
 * arrives while git runs, so `receive.maxInputSize` stops one larger than the quota left early.
 */
export async function runReceivePack(
  deps: Deps,
  store: BareGitStore,
  repoUuid: string,
  pusher: { uuid: string; username: string },
  opts: { client: string; env: Record<string, string>; statelessRpc: boolean; connect: (child: ChildProcess) => void },
): Promise<number> {
  // the git process slot first, waited for outside the repo's lock (a waiting push holds up nobody)
  const slot = await gitHttpLimiter(deps).acquire(opts.client);
  let started = false;
  try {
    return await withRepoLock(deps.database, repoUuid, () =>
      receiveLocked(deps, store, repoUuid, pusher, opts, slot, () => (started = true)),
    );
  } finally {
    if (!started) slot();
  }
}

async function receiveLocked(
  deps: Deps,
  store: BareGitStore,
  repoUuid: string,
  pusher: { uuid: string; username: string },
  opts: { client: string; env: Record<string, string>; statelessRpc: boolean; connect: (child: ChildProcess) => void },
  slot: () => void,
  onStart: () => void,
): Promise<number> {
  await recordLeftoverPushes(deps, store, repoUuid);
  const left = await quotaLeft(deps, repoUuid);
  const protectedRes = await protectedBranchRegExps(deps.db, repoUuid);
  const readOnly = await pushRefusal(deps.db, repoUuid);
  const marker = await beginPush(deps.config.dataDir, repoUuid, pusher, await store.size(repoUuid));
  let child: ChildProcess;
  try {
    const args = ['-c', `core.hooksPath=${hooksDirOf(deps.config.dataDir)}`];
    if (!opts.statelessRpc) args.push('-c', `receive.maxInputSize=${left + 1}`);
    args.push('receive-pack', ...(opts.statelessRpc ? ['--stateless-rpc'] : []), store.pathOf(repoUuid));
    onStart();
    child = await startLimitedGit(
      deps,
      opts.client,
      args,
      {
        ...opts.env,
        WEFT_PROTECTED: JSON.stringify(protectedRes),
        WEFT_QUOTA_LEFT: String(left),
        WEFT_PUSH_LOG: marker,
        ...(readOnly ? { WEFT_READ_ONLY: readOnly } : {}),
      },
      slot,
    );
  } catch (err) {
    await rm(marker, { force: true });
    throw err;
  }
  const closed = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? 1)));
  opts.connect(child);
  const code = await closed;
  await testHold();
  await recordPush(deps, store, marker);
  return code;
}

/** Tests only: `WEFT_TEST_PUSH_HOLD_MS` holds a push after git moved its refs, before it is recorded. */
async function testHold(): Promise<void> {
  const ms = Number(process.env.WEFT_TEST_PUSH_HOLD_MS ?? 0);
  if (!(ms > 0)) return;
  process.stderr.write('weft-test: holding a push before recording it\n');
  await new Promise((r) => setTimeout(r, ms));
}
