import type { GitLimits } from './limits.ts';
import { type ObjectReaders, type ParsedCommit, parseCommit } from './objects.ts';

/** Commit history for the code-reading routes: log pages, ahead/behind, merge bases. */

export type Commit = Omit<ParsedCommit, 'tree'>;

export interface LogQuery {
  offset: number;
  limit: number;
  path?: string;
  /** inclusive bounds on the committer date, in ms since the epoch */
  sinceMs?: number;
  untilMs?: number;
}

/** Pages up to this deep without a path or date bound are walked in process (no git process). */
const WALK_MAX = 300;

/**
 * A page of `git log` from commit `sha`, newest first (git's default order). A commit id names
 * its whole history, so a page is a function of the id and the query: pages are cached (read-
 * only), least recently used first out, bounded by an estimate of their size.
 */
export async function logPage(
  limits: GitLimits,
  objects: ObjectReaders,
  dir: string,
  sha: string,
  q: LogQuery,
): Promise<Commit[]> {
  const key = FULL_OID.test(sha) ? `${sha}:${q.offset}:${q.limit}:${q.sinceMs ?? ''}:${q.untilMs ?? ''}:${q.path ?? ''}` : null;
  const hit = key ? pages.get(key) : undefined;
  if (hit) {
    pages.delete(key!);
    pages.set(key!, hit);
    return hit.commits;
  }
  const commits = await readLogPage(limits, objects, dir, sha, q);
  if (key) rememberPage(key, commits);
  return commits;
}

const FULL_OID = /^[0-9a-f]{40}$/;
const MAX_PAGE_BYTES = 16 * 1024 * 1024;
const pages = new Map<string, { commits: Commit[]; bytes: number }>();
let pageBytes = 0;

function rememberPage(key: string, commits: Commit[]): void {
  let bytes = 256 + key.length * 2;
  for (const c of commits) {
    bytes += 512 + 2 * (c.message.length + c.author.name.length + c.author.email.length);
    bytes += 2 * (c.committer.name.length + c.committer.email.length);
  }
  if (bytes > MAX_PAGE_BYTES / 8) return;
  pages.set(key, { commits, bytes });
  pageBytes += bytes;
  for (const [k, v] of pages) {
    if (pageBytes <= MAX_PAGE_BYTES) break;
    pages.delete(k);
    pageBytes -= v.bytes;
  }
}

async function readLogPage(limits: GitLimits, objects: ObjectReaders, dir: string, sha: string, q: LogQuery): Promise<Commit[]> {
  const simple = (q.path === undefined || q.path === '') && q.sinceMs === undefined && q.untilMs === undefined;
  if (simple && q.offset + q.limit <= WALK_MAX) return walk(objects, dir, sha, q.offset, q.limit);
  const args = ['rev-list', `--max-count=${q.limit}`, `--skip=${q.offset}`];
  // committer dates are whole seconds: an inclusive bound rounds inwards
  if (q.sinceMs !== undefined) args.push(`--max-age=${Math.ceil(q.sinceMs / 1000)}`);
  if (q.untilMs !== undefined) args.push(`--min-age=${Math.floor(q.untilMs / 1000)}`);
  args.push(sha, '--');
  if (q.path !== undefined && q.path !== '') args.push(q.path);
  const out = await limits.run(dir, args);
  const shas = out.stdout.toString('latin1').split('\n').filter(Boolean);
  return readCommits(objects, dir, shas);
}

/** Commits by sha, parsed from the object reader (in the order given). */
export async function readCommits(objects: ObjectReaders, dir: string, shas: string[]): Promise<Commit[]> {
  const objs = await objects.contents(dir, shas);
  return objs.map((o, i) => {
    if (!o || o.type !== 'commit') throw new Error(`commit ${shas[i]} is missing`);
    const { tree: _tree, ...c } = parseCommit(o.oid, o.data);
    return c;
  });
}

/** The merge base of two commits, or null for unrelated histories. */
export async function mergeBase(limits: GitLimits, dir: string, a: string, b: string): Promise<string | null> {
  // two full commit ids name the answer in every repository: cached (a pull page asks on every view)
  const key = FULL_ID.test(a) && FULL_ID.test(b) ? `${a}:${b}` : null;
  if (key && mergeBases.has(key)) {
    const hit = mergeBases.get(key)!;
    mergeBases.delete(key);
    mergeBases.set(key, hit);
    return hit;
  }
  const out = await limits.run(dir, ['merge-base', a, b, '--'], { okCodes: [1] });
  const answer = out.code === 0 ? out.stdout.toString('latin1').trim() : null;
  if (key) {
    mergeBases.set(key, answer);
    if (mergeBases.size > MAX_DIVERGENCES) mergeBases.delete(mergeBases.keys().next().value!);
  }
  return answer;
}

const FULL_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const mergeBases = new Map<string, string | null>();

/**
 * Both sides of `base...head` in one walk (`rev-list --left-right --boundary`): how many commits
 * each side has that the other lacks, the first `limit` commits of head not in base (oldest
 * first), and the merge base. When one side holds nothing the other lacks, the merge base is that
 * side's tip; when the walk has a single boundary commit, it is the merge base; otherwise (criss-
 * cross merges) `git merge-base` decides.
 */
export async function divergence(
  limits: GitLimits,
  objects: ObjectReaders,
  dir: string,
  base: string,
  head: string,
  limit: number,
): Promise<Divergence> {
  // two commit ids name the answer in every repository: cached (read-only)
  const key = `${base}...${head}:${limit}`;
  const hit = divergences.get(key);
  if (hit) {
    divergences.delete(key);
    divergences.set(key, hit);
    return hit;
  }
  const answer =
    (await linearDivergence(objects, dir, base, head, limit)) ?? (await walkDivergence(limits, objects, dir, base, head, limit));
  divergences.set(key, answer);
  if (divergences.size > MAX_DIVERGENCES) divergences.delete(divergences.keys().next().value!);
  return answer;
}

type Divergence = { ahead: number; behind: number; commits: Commit[]; mergeBase: string | null };
const MAX_DIVERGENCES = 1000;
const divergences = new Map<string, Divergence>();

/** Commits a linear walk visits before it leaves the work to `git rev-list`. */
const LINEAR_MAX = 2000;

/**
 * `base...head` without a git process when both histories are linear down to where they meet:
 * the two first-parent chains are walked a commit at a time each (through the object reader,
 * and the commit cache), and the first commit one side reaches that the other has passed is the
 * merge base; the commits before it are the two sides, in git's order. Null (rev-list decides)
 * as soon as a merge commit is met, or past LINEAR_MAX commits.
 */
async function linearDivergence(
  objects: ObjectReaders,
  dir: string,
  base: string,
  head: string,
  limit: number,
): Promise<Divergence | null> {
  const baseChain: string[] = [];
  const headChain: string[] = [];
  const onBase = new Map<string, number>();
  const onHead = new Map<string, number>();
  let a: string | null = base;
  let b: string | null = head;
  const done = (mb: string | null, behind: number, ahead: number): Promise<Divergence> =>
    commitsOf(objects, dir, headChain.slice(0, ahead).reverse().slice(0, limit)).then((commits) => ({
      ahead,
      behind,
      commits,
      mergeBase: mb,
    }));
  while (a !== null || b !== null) {
    if (baseChain.length + headChain.length > LINEAR_MAX) return null;
    const read: Commit[] = await commitsOf(
      objects,
      dir,
      [a, b].filter((x): x is string => x !== null),
    );
    const commitA: Commit | undefined = a === null ? undefined : read[0];
    const commitB: Commit | undefined = a === null ? read[0] : read[1];
    if (a !== null) {
      const met = onHead.get(a);
      if (met !== undefined) return done(a, baseChain.length, met);
      if (commitA!.parents.length > 1) return null;
      onBase.set(a, baseChain.length);
      baseChain.push(a);
      a = commitA!.parents[0] ?? null;
    }
    if (b !== null) {
      const met = onBase.get(b);
      if (met !== undefined) return done(b, met, headChain.length);
      if (commitB!.parents.length > 1) return null;
      onHead.set(b, headChain.length);
      headChain.push(b);
      b = commitB!.parents[0] ?? null;
    }
  }
  // two unrelated histories
  return done(null, baseChain.length, headChain.length);
}

/** Parsed commits by id (immutable), least recently used first out. */
const MAX_CACHED_COMMITS = 20_000;
const commitCache = new Map<string, Commit>();

/** Commits by sha, from the cache or the object reader in one batch (in the order given). */
async function commitsOf(objects: ObjectReaders, dir: string, shas: string[]): Promise<Commit[]> {
  const missing = shas.filter((sha) => !commitCache.has(sha));
  if (missing.length > 0) {
    const read = await readCommits(objects, dir, missing);
    read.forEach((c, i) => {
      commitCache.set(missing[i]!, c);
      if (commitCache.size > MAX_CACHED_COMMITS) commitCache.delete(commitCache.keys().next().value!);
    });
  }
  return shas.map((sha) => commitCache.get(sha) ?? null).map((c, i) => c ?? missingCommit(shas[i]!));
}

function missingCommit(sha: string): never {
  throw new Error(`commit ${sha} is missing`);
}

async function walkDivergence(
  limits: GitLimits,
  objects: ObjectReaders,
  dir: string,
  base: string,
  head: string,
  limit: number,
): Promise<Divergence> {
  const out = await limits.run(dir, ['rev-list', '--left-right', '--boundary', `${base}...${head}`, '--']);
  let behind = 0;
  const headSide: string[] = [];
  const boundary: string[] = [];
  for (const line of out.stdout.toString('latin1').split('\n')) {
    if (line.startsWith('<')) behind++;
    else if (line.startsWith('>')) headSide.push(line.slice(1));
    else if (line.startsWith('-')) boundary.push(line.slice(1));
  }
  let mb: string | null;
  if (headSide.length === 0) mb = head;
  else if (behind === 0) mb = base;
  else if (boundary.length === 1) mb = boundary[0]!;
  else mb = await mergeBase(limits, dir, base, head);
  const oldestFirst = headSide.reverse().slice(0, limit);
  return { ahead: headSide.length, behind, commits: await readCommits(objects, dir, oldestFirst), mergeBase: mb };
}

/**
 * git log's default order without a git process: commits by committer date, newest first, from
 * a queue that takes each popped commit's parents (equal dates keep their arrival order, as
 * git's `commit_list_insert_by_date` does). Parents are read in one batch per step.
 */
async function walk(objects: ObjectReaders, dir: string, tip: string, offset: number, limit: number): Promise<Commit[]> {
  const [first] = await readCommits(objects, dir, [tip]);
  const queue: Commit[] = [first!];
  const seen = new Set<string>([tip]);
  const out: Commit[] = [];
  const time = (c: Commit) => Date.parse(c.committer.date);
  while (queue.length > 0 && out.length < offset + limit) {
    const next = queue.shift()!;
    out.push(next);
    const parents = next.parents.filter((p) => !seen.has(p));
    for (const p of parents) seen.add(p);
    if (parents.length === 0) continue;
    for (const parent of await readCommits(objects, dir, parents)) {
      const t = time(parent);
      let i = queue.findIndex((c) => time(c) < t);
      if (i < 0) i = queue.length;
      queue.splice(i, 0, parent);
    }
  }
  return out.slice(offset, offset + limit);
}
