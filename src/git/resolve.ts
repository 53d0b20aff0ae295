import { AppError, badRequest } from '../errors.ts';
import type { ObjectReaders, TreeEntry } from './objects.ts';
import { parseTree } from './objects.ts';

/**
 * Refs and paths of the code-reading routes (README "Reading code"). Checking is pure and happens
 * before any git process hears of the input; resolving asks the repository's object reader.
 *
 * - A `{ref}` is a branch, a tag or a commit sha (full, or a unique prefix of 7+ hex digits);
 *   branches win over tags, tags over shas.
 * - Refs and paths may hold `/`: a `{ref}/{path}` is matched against the repo's refs, longest
 *   ref first (at one length, the branch before the tag).
 * - Malformed input is 400: a NUL or other control character, a leading `-`, `..` in a ref,
 *   `..` or `.` as a whole path segment (`a..b` is a legal file name), an empty segment.
 */

// eslint-disable-next-line no-control-regex -- control characters are what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;
/** Characters git forbids in any ref name, besides control characters. */
const REF_FORBIDDEN = /[ ~^:?*[\\]/;
const HEX_PREFIX = /^[0-9a-fA-F]{7,40}$/;
export const FULL_SHA = /^[0-9a-f]{40}$/;
export const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const MAX_REF_BYTES = 1024;
const MAX_PATH_BYTES = 4096;

/** 400 unless `ref` could name a branch, a tag or a sha. */
export function checkRef(ref: string, what = 'ref'): string {
  if (ref.length === 0) throw badRequest(`The ${what} is empty.`);
  if (Buffer.byteLength(ref) > MAX_REF_BYTES) throw badRequest(`The ${what} is longer than ${MAX_REF_BYTES} bytes.`);
  if (CONTROL.test(ref)) throw badRequest(`The ${what} holds a control character.`);
  if (ref.startsWith('-')) throw badRequest(`The ${what} begins with "-".`);
  if (ref.includes('..')) throw badRequest(`The ${what} holds "..".`);
  if (REF_FORBIDDEN.test(ref) || ref.includes('@{')) throw badRequest(`The ${what} holds a character git refuses in ref names.`);
  if (ref.startsWith('/') || ref.endsWith('/') || ref.includes('//')) throw badRequest(`The ${what} has an empty segment.`);
  return ref;
}

/**
 * 400 unless `path` is a clean repository path; answers it without a trailing `/` ("" is the
 * root). Segments `..` and `.` and empty segments are refused, so the path names one tree entry.
 */
export function checkPath(path: string): string {
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw badRequest(`The path is longer than ${MAX_PATH_BYTES} bytes.`);
  if (CONTROL.test(path)) throw badRequest('The path holds a control character.');
  if (path.startsWith('-')) throw badRequest('The path begins with "-".');
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path;
  if (trimmed === '') return '';
  for (const seg of trimmed.split('/')) {
    if (seg === '..' || seg === '.') throw badRequest(`The path holds a "${seg}" segment.`);
    if (seg === '') throw badRequest('The path has an empty segment.');
  }
  return trimmed;
}

export const refNotFound = (ref: string) => new AppError(404, 'not_found', `No branch, tag or commit "${ref}".`);
export const pathNotFound = (path: string) => new AppError(404, 'not_found', `No "${path}" at this ref.`);

export interface ResolvedRef {
  /** the commit */
  sha: string;
  kind: 'branch' | 'tag' | 'sha';
  /** the branch or tag name, or the sha as given */
  name: string;
}

/** The names to ask for `ref`, in order of preference. */
function candidates(ref: string): { name: string; kind: ResolvedRef['kind'] }[] {
  const list: { name: string; kind: ResolvedRef['kind'] }[] = [
    { name: `refs/heads/${ref}^{commit}`, kind: 'branch' },
    { name: `refs/tags/${ref}^{commit}`, kind: 'tag' },
  ];
  if (HEX_PREFIX.test(ref)) list.push({ name: `${ref.toLowerCase()}^{commit}`, kind: 'sha' });
  return list;
}

/** The commit `ref` names (checked first), or null when it names none (or an ambiguous prefix). */
export async function resolveRef(objects: ObjectReaders, dir: string, ref: string): Promise<ResolvedRef | null> {
  checkRef(ref);
  const list = candidates(ref);
  const answers = await objects.info(
    dir,
    list.map((c) => c.name),
  );
  for (let i = 0; i < list.length; i++) {
    const a = answers[i];
    if (a && a.type === 'commit') return { sha: a.oid, kind: list[i]!.kind, name: ref };
  }
  return null;
}

/** Like `resolveRef`, 404 when nothing matches. */
export async function requireCommit(objects: ObjectReaders, dir: string, ref: string): Promise<ResolvedRef> {
  const resolved = await resolveRef(objects, dir, ref);
  if (!resolved) throw refNotFound(ref);
  return resolved;
}

/**
 * Splits `{ref}/{path}` (raw files, archives and the like): every prefix of whole segments is
 * tried as a branch and a tag, longest first, then the first segment as a sha. All candidates
 * go to the object reader in one batch. Null when no prefix names a commit.
 */
export async function resolveRefAndPath(
  objects: ObjectReaders,
  dir: string,
  refAndPath: string,
): Promise<{ ref: ResolvedRef; path: string } | null> {
  if (CONTROL.test(refAndPath)) throw badRequest('The ref or path holds a control character.');
  if (refAndPath.startsWith('-')) throw badRequest('The ref begins with "-".');
  const segs = refAndPath.split('/');
  const tries: { ref: string; rest: string; name: string; kind: ResolvedRef['kind'] }[] = [];
  for (let k = segs.length; k >= 1; k--) {
    const ref = segs.slice(0, k).join('/');
    if (!isPlausibleRef(ref)) continue;
    const rest = segs.slice(k).join('/');
    tries.push({ ref, rest, name: `refs/heads/${ref}^{commit}`, kind: 'branch' });
    tries.push({ ref, rest, name: `refs/tags/${ref}^{commit}`, kind: 'tag' });
  }
  if (HEX_PREFIX.test(segs[0]!)) {
    tries.push({ ref: segs[0]!, rest: segs.slice(1).join('/'), name: `${segs[0]!.toLowerCase()}^{commit}`, kind: 'sha' });
  }
  if (tries.length === 0) throw badRequest('The ref is malformed.');
  const answers = await objects.info(
    dir,
    tries.map((t) => t.name),
  );
  for (let i = 0; i < tries.length; i++) {
    const a = answers[i];
    if (a && a.type === 'commit') {
      const t = tries[i]!;
      return { ref: { sha: a.oid, kind: t.kind, name: t.ref }, path: checkPath(t.rest) };
    }
  }
  return null;
}

function isPlausibleRef(ref: string): boolean {
  try {
    checkRef(ref);
    return true;
  } catch {
    return false;
  }
}

export interface PathEntry {
  /** "" for the root */
  path: string;
  name: string;
  type: TreeEntry['type'];
  mode: string;
  oid: string;
}

/**
 * The entry at `path` in commit `sha`'s tree (the root tree for ""), read from its parent tree
 * so the mode (file, symlink, submodule) is known. Null when there is no such entry.
 */
export async function lookupPath(objects: ObjectReaders, dir: string, sha: string, path: string): Promise<PathEntry | null> {
  // a full commit id and a path name one entry forever: found entries are cached (read-only)
  const key = FULL_SHA.test(sha) ? `${sha}\0${path}` : null;
  const hit = key ? entries.get(key) : undefined;
  if (hit) {
    entries.delete(key!);
    entries.set(key!, hit);
    return hit;
  }
  const entry = await readPath(objects, dir, sha, path);
  if (key && entry) {
    entries.set(key, entry);
    if (entries.size > MAX_CACHED_PATHS) entries.delete(entries.keys().next().value!);
  }
  return entry;
}

/** Entries found by `lookupPath`, by commit id and path; least recently used first out. */
const MAX_CACHED_PATHS = 20_000;
const entries = new Map<string, PathEntry>();

async function readPath(objects: ObjectReaders, dir: string, sha: string, path: string): Promise<PathEntry | null> {
  if (path === '') {
    const root = (await objects.info(dir, [`${sha}^{tree}`]))[0];
    return root ? { path: '', name: '', type: 'dir', mode: '040000', oid: root.oid } : null;
  }
  const slash = path.lastIndexOf('/');
  const parentPath = slash < 0 ? '' : path.slice(0, slash);
  const name = path.slice(slash + 1);
  // `SHA:PATH` with a full sha: git reads PATH literally (no `./` forms: checkPath refused them)
  const parent = await objects.one(dir, parentPath === '' ? `${sha}^{tree}` : `${sha}:${parentPath}`);
  if (!parent || parent.type !== 'tree') return null;
  const want = Buffer.from(name);
  // the parent tree is in git order; a linear scan of names is cheap next to reading it
  for (const e of parseTree(parent.data)) {
    if (e.name === name && Buffer.byteLength(e.name) === want.length) {
      return { path, name, type: e.type, mode: e.mode, oid: e.oid };
    }
  }
  return null;
}
