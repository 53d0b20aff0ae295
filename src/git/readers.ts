import { cpus } from 'node:os';
import type { Config } from '../config.ts';
import { BareGitStore } from './bare-store.ts';
import { DiffReaders } from './diff-pool.ts';
import { GitLimits } from './limits.ts';
import { ObjectReaders } from './objects.ts';

/**
 * What reading code needs, one set per app (per `Deps`): the bounded runner (src/git/limits.ts),
 * the object-reader pool (src/git/objects.ts) and the diff pool (src/git/diff-pool.ts), built
 * from the configuration on first use and closed with the app (`closeCodeReaders`, from the code routes' onClose hook).
 */
export interface CodeReaders {
  limits: GitLimits;
  objects: ObjectReaders;
  /** long-lived `git diff-tree --stdin` processes (src/git/diff-pool.ts) */
  diffs: DiffReaders;
  /** the bare repository of a repo, or null when it has no git storage */
  dirOf(uuid: string): string | null;
}

interface HasGit {
  config: Config;
  git: unknown;
}

const byDeps = new WeakMap<HasGit, CodeReaders>();

export function codeReaders(deps: HasGit): CodeReaders {
  let readers = byDeps.get(deps);
  if (readers) return readers;
  const c = deps.config;
  const store = deps.git instanceof BareGitStore ? deps.git : null;
  readers = {
    limits: new GitLimits({
      maxProcesses: c.gitMaxProcesses ?? 2 * Math.max(1, cpus().length),
      timeoutMs: c.gitTimeoutMs ?? 10_000,
      maxOutputBytes: c.gitMaxOutputBytes ?? 32 * 1024 * 1024,
      maxStreamBytes: c.gitMaxStreamBytes ?? 4 * 1024 ** 3,
      streamTimeoutMs: c.transferTimeoutMs,
      queueTimeoutMs: c.gitTimeoutMs ?? 10_000,
    }),
    objects: new ObjectReaders({
      perRepo: 2,
      total: Math.max(8, 4 * (c.gitMaxProcesses ?? 2 * Math.max(1, cpus().length))),
      idleMs: 30_000,
      timeoutMs: c.gitTimeoutMs ?? 10_000,
    }),
    diffs: new DiffReaders({
      perRepo: 2,
      total: Math.max(4, c.gitMaxProcesses ?? 2 * Math.max(1, cpus().length)),
      idleMs: 30_000,
      timeoutMs: c.gitTimeoutMs ?? 10_000,
      maxOutputBytes: c.gitMaxOutputBytes ?? 32 * 1024 * 1024,
    }),
    dirOf: (uuid) => (store && store.exists(uuid) ? store.pathOf(uuid) : null),
  };
  byDeps.set(deps, readers);
  return readers;
}

export function closeCodeReaders(deps: HasGit): void {
  byDeps.get(deps)?.objects.close();
  byDeps.get(deps)?.diffs.close();
  byDeps.delete(deps);
}
