import type { Static } from '@sinclair/typebox';
import { type RepoReadRow, repoContextOf } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import type { PageParams } from '../http/paging.ts';
import { branchMatchesPattern, isValidBranchName } from '../git/refname.ts';
import { diffTrees } from '../git/diff.ts';
import { divergence, logPage, readCommits } from '../git/history.ts';
import { parseSignature } from '../git/objects.ts';
import { listTree } from '../git/trees.ts';
import { type CodeReaders, codeReaders } from '../git/readers.ts';
import {
  EMPTY_TREE,
  FULL_SHA,
  checkPath,
  checkRef,
  lookupPath,
  type PathEntry,
  pathNotFound,
  refNotFound,
  requireCommit,
  type ResolvedRef,
  resolveRef,
} from '../git/resolve.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { cachedBody, type SerializedBody } from './body-cache.ts';
import { sameForkNetwork } from '../forks/service.ts';
import type { CommitDetail, Comparison, Contents, DirEntry, Tag } from './schemas.ts';

/**
 * Reading a repo's code (README "Reading code"): every read needs read access to the repo (404
 * otherwise, as for the repo itself), resolved once per request (`config.repo`, `repoAt`). Git is asked
 * through the object reader and the bounded runner of src/git/.
 */

/** Largest file whose content `contents` returns inline (larger: `content: null, truncated: true`). */
export const MAX_INLINE_BYTES = 1024 * 1024;
/** Most commits a compare lists. */
export const MAX_COMPARE_COMMITS = 250;

export interface OpenedRepo {
  repo: RepoReadRow;
  readers: CodeReaders;
  /** the bare repository, or null when the repo has no git storage (nothing was ever pushed) */
  dir: string | null;
}

export async function openRepo(deps: Deps, viewer: Viewer, at: RepoAt): Promise<OpenedRepo> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const readers = codeReaders(deps);
  return { repo, readers, dir: readers.dirOf(repo.uuid) };
}

/**
 * `Cache-Control` of a response addressed by a full sha (it can never change): public for a
 * public repo, private otherwise; null for one addressed by a branch or tag.
 */
export function immutableCache(repo: RepoReadRow, addressed: string | undefined): string | null {
  if (addressed === undefined || !FULL_SHA.test(addressed)) return null;
  return `${repo.visibility === 'public' ? 'public' : 'private'}, max-age=31536000, immutable`;
}

/** The commit `ref` names, or the default branch's tip; 404 when there is none. */
export async function commitOf(o: OpenedRepo, ref: string | undefined): Promise<ResolvedRef> {
  const name = ref ?? o.repo.default_branch;
  checkRef(name);
  if (!o.dir) throw refNotFound(name);
  return requireCommit(o.readers.objects, o.dir, name);
}

export type CommitsQuery = { ref?: string; path?: string; since?: string; until?: string };

/** GET {repo}/commits: a page of git log from `ref`, newest first. */
export async function listCommits(deps: Deps, viewer: Viewer, repoRef: RepoAt, q: CommitsQuery, page: PageParams) {
  const o = await openRepo(deps, viewer, repoRef);
  const path = q.path === undefined ? undefined : checkPath(q.path);
  const sinceMs = q.since === undefined ? undefined : Date.parse(q.since);
  const untilMs = q.until === undefined ? undefined : Date.parse(q.until);
  if (Number.isNaN(sinceMs) || Number.isNaN(untilMs)) throw badRequest('since and until are ISO 8601 date-times.');
  if (q.ref !== undefined) checkRef(q.ref);
  let start: ResolvedRef | null = null;
  if (o.dir) start = await resolveRef(o.readers.objects, o.dir, q.ref ?? o.repo.default_branch);
  if (!start) {
    // an empty repo (its default branch not pushed yet) has no commits; a named ref must exist
    if (q.ref === undefined) return { rows: [], cache: null };
    throw refNotFound(q.ref);
  }
  const rows = await logPage(o.readers.limits, o.readers.objects, o.dir!, start.sha, {
    offset: page.offset,
    limit: page.limit,
    path,
    sinceMs,
    untilMs,
  });
  return { rows, cache: immutableCache(o.repo, q.ref) };
}

/** GET {repo}/commits/{ref}: the commit with its files and stats against its first parent. */
export async function getCommit(
  deps: Deps,
  viewer: Viewer,
  repoRef: RepoAt,
  ref: string,
): Promise<{ body: Static<typeof CommitDetail>; cache: string | null }> {
  const o = await openRepo(deps, viewer, repoRef);
  const { sha } = await commitOf(o, ref);
  const [commit] = await readCommits(o.readers.objects, o.dir!, [sha]);
  const diff = await diffTrees(o.readers.limits, o.dir!, commit!.parents[0] ?? EMPTY_TREE, sha, { pool: o.readers });
  return {
    body: { ...commit!, stats: diff.stats, files: diff.files, files_truncated: diff.files_truncated },
    cache: immutableCache(o.repo, ref),
  };
}

/** GET {repo}/compare/{base}...{head}: as GitHub's three-dot compare. */
export async function compare(
  deps: Deps,
  viewer: Viewer,
  repoRef: RepoAt,
  spec: string,
): Promise<{ body: Static<typeof Comparison>; cache: string | null }> {
  const dots = spec.indexOf('...');
  if (dots < 0) throw badRequest('Compare takes {base}...{head}.');
  const baseName = spec.slice(0, dots);
  const headName = spec.slice(dots + 3);
  checkRef(baseName, 'base');
  const forkHead = parseForkHead(headName);
  if (!forkHead) checkRef(headName, 'head');
  const o = await openRepo(deps, viewer, repoRef);
  const base = await commitOf(o, baseName);
  const head = forkHead ? await headFromFork(deps, viewer, o, forkHead) : await commitOf(o, headName);
  const { limits, objects } = o.readers;
  const dir = o.dir!;
  const {
    ahead,
    behind,
    commits,
    mergeBase: mb,
  } = await divergence(limits, objects, dir, base.sha, head.sha, MAX_COMPARE_COMMITS);
  const diff = await diffTrees(limits, dir, mb ?? EMPTY_TREE, head.sha, { pool: o.readers });
  const status = ahead === 0 && behind === 0 ? 'identical' : behind === 0 ? 'ahead' : ahead === 0 ? 'behind' : 'diverged';
  const bothShas = immutableCache(o.repo, baseName) !== null ? immutableCache(o.repo, headName) : null;
  return {
    body: {
      base_sha: base.sha,
      head_sha: head.sha,
      merge_base_sha: mb,
      status,
      ahead_by: ahead,
      behind_by: behind,
      commits,
      commits_truncated: ahead > MAX_COMPARE_COMMITS,
      files: diff.files,
      files_truncated: diff.files_truncated,
    },
    cache: bothShas,
  };
}

/** `{owner}:{slug}:{branch}`: a head in another repo of the fork network (`:` is no ref character). */
function parseForkHead(head: string): { owner: string; slug: string; ref: string } | null {
  if (!head.includes(':')) return null;
  const m = /^([^:/]+):([^:/]+):(.+)$/.exec(head);
  if (!m) throw badRequest('A head in another repo is {owner}:{slug}:{branch}.');
  checkRef(m[3]!, 'head');
  return { owner: m[1]!, slug: m[2]!, ref: m[3]! };
}

/**
 * The head of a compare named in another repo of `o`'s fork network: that repo must be readable
 * (404 otherwise) and of the same network (400 otherwise); its commit is brought into `o`'s
 * objects (no ref moves) so the compare runs in `o` as for its own branches. The owner is a team
 * slug, else a username.
 */
async function headFromFork(
  deps: Deps,
  viewer: Viewer,
  o: OpenedRepo,
  head: { owner: string; slug: string; ref: string },
): Promise<ResolvedRef> {
  const team = await deps.db.selectFrom('teams').select('uuid').where('slug', '=', head.owner.toLowerCase()).executeTakeFirst();
  const other = await openRepo(deps, viewer, {
    ownerKind: team ? 'team' : 'user',
    ownerName: head.owner,
    repoSlug: head.slug,
  });
  if (!(await sameForkNetwork(deps.db, o.repo.uuid, other.repo.uuid))) {
    throw badRequest('The head repo must be this repo or a repo of its fork network (its source, its forks, their forks).');
  }
  const resolved = await commitOf(other, head.ref);
  if (other.repo.uuid !== o.repo.uuid && !(await deps.git.borrowCommit(o.repo.uuid, other.repo.uuid, resolved.sha))) {
    throw refNotFound(head.ref);
  }
  return resolved;
}

type ContentsBody = Static<typeof Contents>;

/** Where `{path}?ref=` leads: the opened repo, the checked path, its entry and the Cache-Control of the answer. */
async function locate(deps: Deps, viewer: Viewer, repoRef: RepoAt, rawPath: string, ref: string | undefined) {
  const path = checkPath(rawPath);
  const o = await openRepo(deps, viewer, repoRef);
  const { sha } = await commitOf(o, ref);
  const entry = await lookupPath(o.readers.objects, o.dir!, sha, path);
  if (!entry) throw pathNotFound(path);
  return { o, path, entry, cache: immutableCache(o.repo, ref) };
}

/** GET {repo}/contents/{path}?ref=: a file, a directory, a symlink or a submodule. */
export async function getContents(
  deps: Deps,
  viewer: Viewer,
  repoRef: RepoAt,
  rawPath: string,
  ref: string | undefined,
): Promise<{ body: ContentsBody; cache: string | null }> {
  const { o, path, entry, cache } = await locate(deps, viewer, repoRef, rawPath, ref);
  return { body: await describe(o, path, entry), cache };
}

/**
 * The same answer for the API route, serialized: a body is a function of its entry (type and
 * object id) and its path, nothing else, so it comes from the body cache (src/code/body-cache.ts)
 * with a strong ETag, serialized once (a directory of 10,000 entries is ~1.4 MB of JSON).
 */
export async function getContentsReply(
  deps: Deps,
  viewer: Viewer,
  repoRef: RepoAt,
  rawPath: string,
  ref: string | undefined,
): Promise<{ serialized: SerializedBody; cache: string | null }> {
  const { o, path, entry, cache } = await locate(deps, viewer, repoRef, rawPath, ref);
  const serialized = await cachedBody(`contents\0${entry.type}\0${entry.oid}\0${path}`, () => describe(o, path, entry));
  return { serialized, cache };
}

async function describe(o: OpenedRepo, path: string, entry: PathEntry): Promise<ContentsBody> {
  const { objects } = o.readers;
  const dir = o.dir!;
  const base = { type: entry.type, name: entry.name, path, sha: entry.oid };
  if (entry.type === 'submodule') return base;
  if (entry.type === 'symlink') {
    const blob = await objects.one(dir, entry.oid);
    return { ...base, target: blob ? blob.data.toString('utf8') : '' };
  }
  if (entry.type === 'dir') return { ...base, entries: await directory(o, entry.oid, path) };
  const info = (await objects.info(dir, [entry.oid]))[0];
  if (!info) throw pathNotFound(path);
  if (info.size > MAX_INLINE_BYTES) {
    return { ...base, size: info.size, encoding: 'base64', content: null, truncated: true };
  }
  const blob = await objects.one(dir, entry.oid);
  return { ...base, size: info.size, encoding: 'base64', content: blob!.data.toString('base64'), truncated: false };
}

/** A tree's entries in byte order, with the size of each file (src/git/trees.ts, cached by tree oid). */
async function directory(o: OpenedRepo, treeOid: string, path: string): Promise<Static<typeof DirEntry>[]> {
  const entries = await listTree(o.readers.objects, o.dir!, treeOid);
  if (!entries) throw pathNotFound(path);
  const prefix = path === '' ? '' : `${path}/`;
  return entries.map((e) => ({ type: e.type, name: e.name, path: prefix + e.name, sha: e.oid, size: e.size, mode: e.mode }));
}

/** GET {repo}/branches/{name}. */
export async function getBranch(deps: Deps, viewer: Viewer, repoRef: RepoAt, name: string) {
  if (!isValidBranchName(name)) throw badRequest('Not a valid branch name.');
  const o = await openRepo(deps, viewer, repoRef);
  const info = o.dir ? (await o.readers.objects.info(o.dir, [`refs/heads/${name}^{commit}`]))[0] : null;
  if (!info) throw notFound('Branch');
  const patterns = await deps.db.selectFrom('protections').select('branch').where('repo_uuid', '=', o.repo.uuid).execute();
  return { name, commit_sha: info.oid, protected: patterns.some((p) => branchMatchesPattern(p.branch, name)) };
}

/** GET {repo}/tags: every tag sorted by name (byte order), annotated ones with message and tagger. */
export async function listTags(deps: Deps, viewer: Viewer, repoRef: RepoAt, page: PageParams): Promise<Static<typeof Tag>[]> {
  const o = await openRepo(deps, viewer, repoRef);
  if (!o.dir) return [];
  const format = [
    '%(refname)',
    '%(objecttype)',
    '%(objectname)',
    '%(*objectname)',
    '%(taggername)',
    '%(taggeremail)',
    '%(taggerdate:raw)',
    '%(contents)',
  ]
    .map((f) => `${f}%00`)
    .join('');
  // for-each-ref sorts by refname in byte order (LC_ALL=C); the page is cut here
  const out = await o.readers.limits.run(o.dir, ['for-each-ref', `--format=${format}`, 'refs/tags/']);
  const fields = out.stdout.toString('utf8').split('\0');
  const tags: Static<typeof Tag>[] = [];
  for (let i = 0; i + 8 <= fields.length; i += 8) {
    const [refname, type, oid, peeled, taggerName, taggerEmail, taggerDate, contents] = fields.slice(i, i + 8);
    const name = refname!.replace(/^\n/, '').slice('refs/tags/'.length);
    const annotated = type === 'tag';
    tags.push({
      name,
      commit_sha: annotated ? peeled || oid! : oid!,
      message: annotated ? contents!.replace(/\n+$/, '') : null,
      tagger: annotated && taggerName ? parseSignature(`${taggerName} ${taggerEmail} ${taggerDate}`) : null,
    });
  }
  return tags.slice(page.offset, page.offset + page.limit);
}
