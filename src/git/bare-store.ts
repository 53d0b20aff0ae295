import { existsSync } from 'node:fs';
import { appendFile, mkdir, readdir, readFile, rm, stat, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { type Kysely, sql } from 'kysely';
import type { RepoRow } from '../db/rows.ts';
import type { Database } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import type { InTransaction } from '../db/tx.ts';
import { readBranchTip } from './ref-files.ts';
import { withRepoLock } from './repo-lock.ts';
import { git, GitError, ZERO_SHA } from './run.ts';
import type { GitStore, MergeOutcome, MergeRequest } from './store.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Forks of this repo that borrow its objects, one uuid a line (read when the repo is deleted). */
const FORKS_FILE = 'weft-forks';
const UPDATE_REF_ATTEMPTS = 3;

export interface Person {
  name: string;
  email: string;
}

/** Size in bytes of every file under `dir` (0 when it does not exist). */
export async function dirSize(dir: string): Promise<number> {
  let total = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await dirSize(p);
    else if (e.isFile()) total += (await stat(p).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/**
 * Bare repositories under `root` (`DATA_DIR/git/<uuid>.git`). Forks borrow the source's
 * objects through `objects/info/alternates`; the source lists its forks in `weft-forks`.
 */
export class BareGitStore implements GitStore {
  /** `root` made absolute, without a trailing separator: repo paths are built by concatenation. */
  private readonly base: string;

  constructor(
    readonly root: string,
    /** moves `disk_usage_bytes` when git data changes outside a request (forks detached from a deleted source) */
    private readonly db?: Kysely<DB>,
    /** the database's pool (PostgreSQL), for the per-repo git write lock shared by instances */
    private readonly database: Pick<Database, 'pool'> = { pool: null },
  ) {
    this.base = resolve(root);
  }

  pathOf(uuid: string): string {
    if (!UUID_RE.test(uuid)) throw new Error(`not a repo uuid: ${uuid}`);
    // a uuid has no separator or dot segment: concatenation gives what join would, without its
    // normalising pass (which was the largest part of reading two branch tips)
    return `${this.base}/${uuid}.git`;
  }

  exists(uuid: string): boolean {
    return existsSync(join(this.pathOf(uuid), 'HEAD'));
  }

  /**
   * The repository's git data in bytes: its object store (loose objects, packs, alternates).
   * Refs and configuration are a few bytes and not counted, so a new repo uses 0.
   */
  async size(uuid: string): Promise<number> {
    return dirSize(join(this.pathOf(uuid), 'objects'));
  }

  private async init(repo: RepoRow): Promise<string> {
    const dir = this.pathOf(repo.uuid);
    await mkdir(this.root, { recursive: true });
    await git(null, ['init', '--quiet', '--bare', '--template=', `--initial-branch=${repo.default_branch}`, dir]);
    // One process only (this runs inside the repo-creating transaction): the rest of the
    // configuration is appended directly. Pushed objects are checked; auto-gc never prunes
    // objects a fork may borrow.
    await appendFile(join(dir, 'config'), '[receive]\n\tfsckObjects = true\n[gc]\n\tauto = 0\n');
    return dir;
  }

  async create(tx: InTransaction, repo: RepoRow): Promise<void> {
    await this.init(repo);
    const size = await this.size(repo.uuid);
    await addDiskUsage(tx, repo.uuid, size);
  }

  async remove(repo: { uuid: string }): Promise<void> {
    const dir = this.pathOf(repo.uuid);
    if (!existsSync(dir)) return;
    // Forks first get their own objects, so they never lose an object at any point of a crash.
    for (const forkUuid of await this.forksOf(repo.uuid)) {
      if (!this.exists(forkUuid)) continue;
      await this.detachAlternates(forkUuid);
    }
    await rm(dir, { recursive: true, force: true });
  }

  private async forksOf(uuid: string): Promise<string[]> {
    try {
      const text = await readFile(join(this.pathOf(uuid), FORKS_FILE), 'utf8');
      return [...new Set(text.split('\n').filter((l) => UUID_RE.test(l)))];
    } catch {
      return [];
    }
  }

  /** Copies every borrowed object into the repo (`repack -a -d`), then drops its alternates. */
  async detachAlternates(uuid: string): Promise<void> {
    const dir = this.pathOf(uuid);
    const alternates = join(dir, 'objects', 'info', 'alternates');
    if (!existsSync(alternates)) return;
    const before = await this.size(uuid);
    await git(dir, ['repack', '-a', '-d', '-q'], { timeoutMs: 3_600_000 });
    await unlink(alternates);
    if (this.db) await addDiskUsage({ db: this.db }, uuid, (await this.size(uuid)) - before);
  }

  async copyForFork(tx: InTransaction, source: RepoRow, fork: RepoRow): Promise<void> {
    const dir = await this.init(fork);
    const sourceDir = this.pathOf(source.uuid);
    if (!this.exists(source.uuid)) return;
    await appendFile(join(dir, 'objects', 'info', 'alternates'), `${join(sourceDir, 'objects')}\n`);
    await appendFile(join(sourceDir, FORKS_FILE), `${fork.uuid}\n`);
    // branches and tags only: the source's pull heads (refs/pull/) are its own
    const refs = [...(await this.refs(source.uuid, 'refs/heads/')), ...(await this.refs(source.uuid, 'refs/tags/'))];
    if (refs.length > 0) {
      const input = refs.map((r) => `create ${r.ref} ${r.sha}\n`).join('');
      await git(dir, ['update-ref', '--stdin'], { input });
    }
    const size = await this.size(fork.uuid);
    await addDiskUsage(tx, fork.uuid, size);
  }

  /** Every branch and tag: `[{ref, sha}]`, sorted by ref name. */
  async refs(uuid: string, prefix = 'refs/heads/'): Promise<{ ref: string; sha: string }[]> {
    if (!this.exists(uuid)) return [];
    const out = await git(this.pathOf(uuid), ['for-each-ref', '--format=%(objectname) %(refname)', prefix]);
    return out.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => ({ sha: line.slice(0, 40), ref: line.slice(41) }));
  }

  /** The tip of a branch, or null when it does not exist. */
  async branchSha(uuid: string, branch: string): Promise<string | null> {
    const tip = readBranchTip(this.pathOf(uuid), branch);
    // A sha or null is the answer (a missing repository has no ref files either: null); only a
    // ref the reader cannot answer for goes to git, and then only if the repository exists.
    if (tip !== undefined) return tip;
    if (!this.exists(uuid)) return null;
    const out = await git(this.pathOf(uuid), ['rev-parse', '--verify', '-q', `refs/heads/${branch}^{commit}`], { okCodes: [1] });
    return out.code === 0 ? out.stdout.trim() : null;
  }

  async refSha(uuid: string, ref: string): Promise<string | null> {
    if (!this.exists(uuid)) return null;
    const out = await git(this.pathOf(uuid), ['rev-parse', '--verify', '-q', '--end-of-options', `${ref}^{commit}`], {
      okCodes: [1],
    });
    return out.code === 0 ? out.stdout.trim() : null;
  }

  async syncPullHead(target: string, number: number, source: string, branch: string): Promise<string | null> {
    const ref = pullHeadRef(number);
    if (!this.exists(target)) return null;
    const dir = this.pathOf(target);
    for (let attempt = 0; attempt < UPDATE_REF_ATTEMPTS; attempt++) {
      const kept = await this.refSha(target, ref);
      const tip = await this.branchSha(source, branch);
      if (tip === null || tip === kept) return kept;
      if (source !== target && !(await this.hasCommit(target, tip))) {
        const sizeBefore = await this.size(target);
        // Only what the target lacks travels: objects it shares with the source (alternates,
        // either way) are already there. The fetched objects are kept unreferenced until the ref
        // moves below; gc.auto is off, so nothing prunes them in between.
        const fetched = await git(
          dir,
          ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--end-of-options', this.pathOf(source), tip],
          { okCodes: [1, 128], timeoutMs: 3_600_000 },
        );
        if (this.db) await addDiskUsage({ db: this.db }, target, (await this.size(target)) - sizeBefore);
        // the source moved or went away while fetching: look again
        if (fetched.code !== 0) continue;
      }
      const moved = await git(dir, ['update-ref', ref, tip, kept ?? ZERO_SHA], { okCodes: [1, 128] });
      // a concurrent sync moved the kept head first: look again
      if (moved.code === 0) return tip;
    }
    return this.refSha(target, ref);
  }

  async borrowCommit(target: string, source: string, sha: string): Promise<boolean> {
    if (!this.exists(target) || !this.exists(source)) return false;
    if (await this.hasCommit(target, sha)) return true;
    const sizeBefore = await this.size(target);
    // unreferenced until gc's prune expiry (two weeks); a later read finds them in place
    await git(
      this.pathOf(target),
      ['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--end-of-options', this.pathOf(source), sha],
      { okCodes: [1, 128], timeoutMs: 600_000 },
    );
    if (this.db) await addDiskUsage({ db: this.db }, target, (await this.size(target)) - sizeBefore);
    return this.hasCommit(target, sha);
  }

  async hasCommit(uuid: string, sha: string): Promise<boolean> {
    if (!this.exists(uuid)) return false;
    const out = await git(this.pathOf(uuid), ['cat-file', '-e', `${sha}^{commit}`], { okCodes: [1, 128] });
    return out.code === 0;
  }

  async contains(uuid: string, tip: string, sha: string): Promise<boolean> {
    if (!this.exists(uuid)) return false;
    const out = await git(this.pathOf(uuid), ['merge-base', '--is-ancestor', sha, tip], { okCodes: [1, 128] });
    return out.code === 0;
  }

  async sharesHistory(uuid: string, a: string, b: string): Promise<boolean> {
    if (!this.exists(uuid)) return false;
    const out = await git(this.pathOf(uuid), ['merge-base', a, b], { okCodes: [1] });
    return out.code === 0;
  }

  async setHead(uuid: string, branch: string): Promise<void> {
    if (!this.exists(uuid)) return;
    await git(this.pathOf(uuid), ['symbolic-ref', 'HEAD', `refs/heads/${branch}`]);
  }

  /** Commits of `head` not in `base` (base may be null), oldest first. */
  async commitsBetween(
    uuid: string,
    base: string | null,
    head: string,
  ): Promise<{ sha: string; message: string; author_name: string; author_email: string; authored_at: string }[]> {
    const range = base ? [head, `^${base}`] : [head];
    const out = await git(this.pathOf(uuid), [
      'log',
      '--reverse',
      '-z',
      '--format=%H%x01%an%x01%ae%x01%aI%x01%B',
      ...range,
      '--',
    ]);
    return out.stdout
      .split('\0')
      .filter((s) => s.length > 0)
      .map((rec) => {
        const [sha, name, email, date, ...rest] = rec.split('\x01');
        return {
          sha: sha!.trim(),
          author_name: name!,
          author_email: email!,
          authored_at: new Date(date!).toISOString(),
          message: rest.join('\x01').replace(/\n+$/, ''),
        };
      });
  }

  /** Files changed between the merge base of base/head and head. */
  async filesBetween(
    uuid: string,
    base: string | null,
    head: string,
  ): Promise<{ path: string; status: 'added' | 'modified' | 'deleted' | 'renamed'; additions: number; deletions: number }[]> {
    const dir = this.pathOf(uuid);
    let from = '4b825dc642cb6eb9a060e54bf8d69288fbee4904'; // the empty tree
    if (base) {
      const mb = await git(dir, ['merge-base', base, head], { okCodes: [1] });
      if (mb.code === 0) from = mb.stdout.trim();
    }
    const status = await git(dir, ['diff-tree', '-r', '-z', '-M', '--name-status', from, head]);
    const numstat = await git(dir, ['diff-tree', '-r', '-z', '-M', '--numstat', from, head]);
    const counts = new Map<string, [number, number]>();
    const ns = numstat.stdout.split('\0');
    for (let i = 0; i < ns.length; i++) {
      const rec = ns[i]!;
      if (!rec) continue;
      const [a, d, p] = rec.split('\t');
      let path = p ?? '';
      if (path === '') {
        // rename: "a\td\t" then old path, new path
        i += 2;
        path = ns[i] ?? '';
      }
      counts.set(path, [a === '-' ? 0 : Number(a), d === '-' ? 0 : Number(d)]);
    }
    const parts = status.stdout.split('\0');
    const files: { path: string; status: 'added' | 'modified' | 'deleted' | 'renamed'; additions: number; deletions: number }[] =
      [];
    for (let i = 0; i < parts.length; i++) {
      const code = parts[i]!;
      if (!code) continue;
      let path: string;
      let kind: 'added' | 'modified' | 'deleted' | 'renamed';
      if (code.startsWith('R')) {
        path = parts[i + 2]!;
        i += 2;
        kind = 'renamed';
      } else {
        path = parts[i + 1]!;
        i += 1;
        kind = code === 'A' ? 'added' : code === 'D' ? 'deleted' : 'modified';
      }
      const [additions, deletions] = counts.get(path) ?? [0, 0];
      files.push({ path, status: kind, additions, deletions });
    }
    return files.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  }

  /**
   * Runs under the repo's git write lock (pushes and merges take turns), and adds the objects the
   * merge wrote (its trees and commits, kept even when it fails) to `disk_usage_bytes`.
   */
  async merge(req: MergeRequest): Promise<MergeOutcome> {
    const { repo } = req;
    if (!this.exists(repo.uuid)) return { nothingToMerge: true };
    return withRepoLock(this.database, repo.uuid, async () => {
      // What the merge wrote is added as it goes: before the branch moves (so a crash after that
      // point leaves the usage right) and at the end.
      let accounted = await this.size(repo.uuid);
      const account = async () => {
        const now = await this.size(repo.uuid);
        if (this.db) await addDiskUsage({ db: this.db }, repo.uuid, now - accounted);
        accounted = now;
      };
      try {
        return await this.mergeLocked(req, account);
      } finally {
        await account();
      }
    });
  }

  private async mergeLocked(req: MergeRequest, account: () => Promise<void>): Promise<MergeOutcome> {
    const { repo, pull, source } = req;
    const dir = this.pathOf(repo.uuid);
    const targetRef = `refs/heads/${pull.target_branch}`;
    for (let attempt = 0; attempt < UPDATE_REF_ATTEMPTS; attempt++) {
      const target = await this.branchSha(repo.uuid, pull.target_branch);
      const planned = await this.plan(dir, req, source, target);
      if (!('sha' in planned)) return planned;
      await account();
      await req.beforeMove?.(planned.sha, target);
      const moved = await git(dir, ['update-ref', targetRef, planned.sha, target ?? ZERO_SHA], { okCodes: [128, 1] });
      if (moved.code === 0) return { ...planned, before: target };
      // The target moved under us (a push or another merge): compute again from the new tip.
    }
    return { busy: true };
  }

  /** Computes the new target tip without moving anything. */
  private async plan(dir: string, req: MergeRequest, source: string, target: string | null): Promise<MergeOutcome> {
    const { pull, strategy, merger, author } = req;
    const env = (who: Person, extra: Record<string, string> = {}) => ({
      GIT_AUTHOR_NAME: who.name,
      GIT_AUTHOR_EMAIL: who.email,
      GIT_COMMITTER_NAME: merger.name,
      GIT_COMMITTER_EMAIL: merger.email,
      ...extra,
    });
    if (target === null) {
      if (strategy !== 'squash') return { sha: source };
      const tree = await git(dir, ['rev-parse', `${source}^{tree}`]);
      const c = await git(dir, ['commit-tree', tree.stdout.trim()], { input: squashMessage(pull), env: env(author) });
      return { sha: c.stdout.trim() };
    }
    const isAncestor = async (a: string, b: string) =>
      (await git(dir, ['merge-base', '--is-ancestor', a, b], { okCodes: [1] })).code === 0;
    // Before any strategy: a source with no commit the target lacks lands nothing.
    if (await isAncestor(source, target)) return { nothingToMerge: true };
    // No common commit: merge-tree refuses unrelated histories, and no strategy has a base to work from.
    if ((await git(dir, ['merge-base', target, source], { okCodes: [1] })).code !== 0) return { unrelatedHistories: true };
    if (strategy === 'fast_forward') {
      if (!(await isAncestor(target, source))) return { notFastForward: true };
      return { sha: source };
    }
    if (strategy === 'rebase') {
      const list = await git(dir, ['rev-list', '--reverse', '--no-merges', source, `^${target}`]);
      let tip = target;
      for (const commit of list.stdout.split('\n').filter(Boolean)) {
        const info = await git(dir, ['log', '-1', '--format=%P%x00%an%x00%ae%x00%ad%x00%B', '--date=raw', commit]);
        const [parents, an, ae, ad, ...msg] = info.stdout.split('\0');
        const parent = parents!.split(' ')[0] || null;
        // A stand-in commit with the current tip's tree and the replayed commit's parent makes that
        // parent the merge base, so merge-tree applies exactly this commit's change (a cherry-pick).
        const tipTree = (await git(dir, ['rev-parse', `${tip}^{tree}`])).stdout.trim();
        const standIn = await git(dir, ['commit-tree', tipTree, ...(parent ? ['-p', parent] : [])], {
          input: 'rebase stand-in\n',
        });
        const merged = await mergeTree(dir, standIn.stdout.trim(), commit);
        if ('conflictPaths' in merged) return merged;
        const c = await git(dir, ['commit-tree', merged.tree, '-p', tip], {
          input: msg.join('\0'),
          env: env({ name: an!, email: ae! }, { GIT_AUTHOR_DATE: ad! }),
        });
        tip = c.stdout.trim();
      }
      return tip === target ? { nothingToMerge: true } : { sha: tip };
    }
    const merged = await mergeTree(dir, target, source);
    if ('conflictPaths' in merged) return merged;
    if (strategy === 'squash') {
      const c = await git(dir, ['commit-tree', merged.tree, '-p', target], { input: squashMessage(pull), env: env(author) });
      return { sha: c.stdout.trim() };
    }
    const message = `Merge pull request #${pull.number} from ${pull.source_branch}\n\n${pull.title}\n`;
    const c = await git(dir, ['commit-tree', merged.tree, '-p', target, '-p', source], { input: message, env: env(merger) });
    return { sha: c.stdout.trim() };
  }
}

/** Where a pull's head is kept in its target repo (as GitHub does: `git fetch origin pull/N/head`). */
export const pullHeadRef = (number: number): string => `refs/pull/${number}/head`;

function squashMessage(pull: { title: string; body: string }): string {
  return pull.body ? `${pull.title}\n\n${pull.body}\n` : `${pull.title}\n`;
}

/** `git merge-tree --write-tree`: the merged tree, or every conflicting path (sorted). */
async function mergeTree(dir: string, ours: string, theirs: string): Promise<{ tree: string } | { conflictPaths: string[] }> {
  const out = await git(dir, ['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', ours, theirs], {
    okCodes: [1],
  });
  const parts = out.stdout.split('\0');
  if (out.code === 0) return { tree: parts[0]!.trim() };
  const paths = [...new Set(parts.slice(1).filter((p) => p.length > 0))].sort();
  if (paths.length === 0) throw new GitError(['merge-tree'], out);
  return { conflictPaths: paths };
}

/**
 * `disk_usage_bytes` is shared with uploads, so it only ever moves by deltas (never set to a total).
 */
export async function addDiskUsage(tx: { db: Kysely<DB> }, uuid: string, delta: number): Promise<void> {
  if (delta === 0) return;
  await tx.db
    .updateTable('repos')
    .set({ disk_usage_bytes: sql<number>`disk_usage_bytes + ${delta}` })
    .where('uuid', '=', uuid)
    .execute();
}
