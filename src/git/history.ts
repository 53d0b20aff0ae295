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

/** A page of `git log` from commit `sha`, newest first (git's default order). */
export async function logPage(
  limits: GitLimits,
  objects: ObjectReaders,
  dir: string,
  sha: string,
  q: LogQuery,
): Promise<Commit[]> {
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
  const out = await limits.run(dir, ['merge-base', a, b, '--'], { okCodes: [1] });
  return out.code === 0 ? out.stdout.toString('latin1').trim() : null;
}

/** Commits of `head` not in `base` and of `base` not in `head`. */
export async function aheadBehind(
  limits: GitLimits,
  dir: string,
  base: string,
  head: string,
): Promise<{ ahead: number; behind: number }> {
  const out = await limits.run(dir, ['rev-list', '--left-right', '--count', `${base}...${head}`, '--']);
  const [behind, ahead] = out.stdout.toString('latin1').trim().split(/\s+/).map(Number);
  return { ahead: ahead ?? 0, behind: behind ?? 0 };
}

/** The first `limit` commits of `head` not in `base`, oldest first. */
export async function commitsBetween(
  limits: GitLimits,
  objects: ObjectReaders,
  dir: string,
  base: string,
  head: string,
  limit: number,
): Promise<Commit[]> {
  const out = await limits.run(dir, ['rev-list', '--reverse', head, `^${base}`, '--']);
  const shas = out.stdout.toString('latin1').split('\n').filter(Boolean).slice(0, limit);
  return readCommits(objects, dir, shas);
}
