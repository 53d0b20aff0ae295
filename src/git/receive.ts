/**
 * The git transfer processes smart HTTP (src/git/http.ts) and SSH (src/ssh/) both run, with the
 * same push rules and bookkeeping (README "Git"): `git upload-pack` for fetches, and `git
 * receive-pack` with the pre-receive hook's rules (protected branches, ref kinds, ref count, quota),
 * `receive.maxInputSize`, then `branch-pushed` events and the usage delta once it exits.
 * HTTP runs them with `--stateless-rpc`, SSH as one bidirectional session.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inTransaction } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { actorOf } from '../events/service.ts';
import { addDiskUsage, type BareGitStore } from './bare-store.ts';
import { HOOK_SOURCE } from './hook-source.ts';
import { protectedBranchRegExps } from './push-rules.ts';
import { spawnGit } from './run.ts';

/** What a `Git-Protocol` header (or an SSH client's GIT_PROTOCOL) may contain (`version=2`, `key=value:key=value`). */
export const GIT_PROTOCOL_RE = /^[A-Za-z0-9=:.,_-]{1,256}$/;

/** `GIT_PROTOCOL` for git, when the client's value passes the character check. */
export const protocolEnv = (value: unknown): Record<string, string> =>
  typeof value === 'string' && GIT_PROTOCOL_RE.test(value) ? { GIT_PROTOCOL: value } : {};

/** Where the hooks live (selected with `core.hooksPath`). */
export const hooksDirOf = (dataDir: string): string => join(dataDir, 'git-hooks');

/** `git upload-pack` on a repo (a fetch or clone). */
export function spawnUploadPack(store: BareGitStore, repoUuid: string, env: Record<string, string>, statelessRpc: boolean) {
  return spawnGit(['upload-pack', ...(statelessRpc ? ['--stateless-rpc'] : []), store.pathOf(repoUuid)], env);
}

/**
 * `git receive-pack` on a repo with the push rules; `recorded` settles once the process has
 * exited and what it updated is recorded (events, usage), in one transaction.
 */
export async function spawnReceivePack(
  deps: Deps,
  store: BareGitStore,
  repoUuid: string,
  pusher: { uuid: string; username: string },
  env: Record<string, string>,
  statelessRpc: boolean,
): Promise<{ child: ChildProcess; recorded: Promise<void> }> {
  const sizeBefore = await store.size(repoUuid);
  const fresh = await deps.db
    .selectFrom('repos')
    .select(['disk_usage_bytes', 'max_disk_bytes'])
    .where('uuid', '=', repoUuid)
    .executeTakeFirstOrThrow();
  const left = Math.max(0, fresh.max_disk_bytes - fresh.disk_usage_bytes);
  const protectedRes = await protectedBranchRegExps(deps.db, repoUuid);
  const logFile = join(tmpdir(), `weft-push-${randomUUID()}`);
  const hooksDir = hooksDirOf(deps.config.dataDir);
  const child = spawnGit(
    [
      '-c',
      `core.hooksPath=${hooksDir}`,
      '-c',
      `receive.maxInputSize=${left + 1}`,
      'receive-pack',
      ...(statelessRpc ? ['--stateless-rpc'] : []),
      store.pathOf(repoUuid),
    ],
    { ...env, WEFT_PROTECTED: JSON.stringify(protectedRes), WEFT_QUOTA_LEFT: String(left), WEFT_PUSH_LOG: logFile },
  );
  const recorded = new Promise<void>((resolve, reject) => {
    child.on('close', () => recordPush(deps, store, repoUuid, pusher, sizeBefore, logFile).then(resolve, reject));
  });
  return { child, recorded };
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
  await inTransaction(deps, async (tx) => {
    await addDiskUsage(tx, repoUuid, sizeAfter - sizeBefore);
    if (updates.length === 0) return;
    const repo = await tx.db.selectFrom('repos').selectAll().where('uuid', '=', repoUuid).executeTakeFirst();
    if (!repo) return;
    for (const [before, after, ref] of updates) {
      await tx.emit({
        kind: 'branch-pushed',
        scopes: [`repo:${repo.uuid}`],
        actor: actorOf(viewer),
        payload: { repo_uuid: repoUuid, ref, before, after, pusher: { uuid: viewer.uuid, username: viewer.username } },
      });
    }
  });
}

/** The pre-receive and post-receive hooks every repository runs (through `core.hooksPath`). */
export function installHooks(dir: string): void {
  mkdirSync(dir, { recursive: true });
  // The hooks are CommonJS whatever the enclosing package says.
  writeFileSync(join(dir, 'package.json'), '{"type":"commonjs"}\n');
  for (const name of ['pre-receive', 'post-receive']) {
    writeFileSync(join(dir, name), `#!${process.execPath}\n${HOOK_SOURCE}`, { mode: 0o755 });
  }
}
