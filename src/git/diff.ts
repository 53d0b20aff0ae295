import type { DiffReaders } from './diff-pool.ts';
import type { GitLimits } from './limits.ts';
import type { ObjectReaders } from './objects.ts';

/**
 * Changed files between two trees with their patches (commits, compare, a pull's files): one
 * `git diff-tree --raw --numstat -p -z` (a long-lived one from the diff pool when the caller
 * passes it, else a bounded process of its own). The patch output is split per file in the
 * list's order.
 */

/** Most files described; past it `files_truncated`. */
export const MAX_FILES = 3000;
/** Most bytes of one file's patch; past it `patch: null, patch_truncated: true`. */
export const MAX_PATCH_BYTES = 256 * 1024;

export interface DiffFile {
  path: string;
  previous_path: string | null;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  additions: number;
  deletions: number;
  binary: boolean;
  patch: string | null;
  patch_truncated?: boolean;
}

export interface Diff {
  files: DiffFile[];
  files_truncated: boolean;
  stats: { additions: number; deletions: number; total: number };
}

const DIFF_OPTS = ['-r', '-M', '--no-ext-diff', '--no-textconv', '--no-color', '--full-index'];

/**
 * Files changed from tree-ish `from` to `to`, sorted by path in byte order. One process: with
 * `-z`, diff-tree writes the raw records, the numstat records, a NUL, then the patch text.
 */
export async function diffTrees(
  limits: GitLimits,
  dir: string,
  from: string,
  to: string,
  opts: { patches?: boolean; pool?: DiffPool } = {},
): Promise<Diff> {
  const patches = opts.patches !== false;
  // Two full object ids name the diff's content in every repository: it is cached (read-only).
  const key = FULL_OID.test(from) && FULL_OID.test(to) ? `${from}:${to}:${patches ? 'p' : ''}` : null;
  const hit = key ? diffCache.get(key) : undefined;
  if (hit) {
    diffCache.delete(key!);
    diffCache.set(key!, hit);
    return hit.diff;
  }
  const diff = await computeDiff(limits, dir, from, to, patches, opts.pool);
  if (key) remember(key, diff);
  return diff;
}

const FULL_OID = /^[0-9a-f]{40}$/;
/** Cached diffs, least recently used first, bounded by an estimate of their size. */
const MAX_CACHED_DIFF_BYTES = 64 * 1024 * 1024;
const diffCache = new Map<string, { diff: Diff; bytes: number }>();
let cachedDiffBytes = 0;

function remember(key: string, diff: Diff): void {
  let bytes = 256;
  for (const f of diff.files) bytes += 128 + f.path.length * 2 + (f.patch?.length ?? 0) * 2;
  if (bytes > MAX_CACHED_DIFF_BYTES / 8) return;
  diffCache.set(key, { diff, bytes });
  cachedDiffBytes += bytes;
  for (const [k, v] of diffCache) {
    if (cachedDiffBytes <= MAX_CACHED_DIFF_BYTES) break;
    diffCache.delete(k);
    cachedDiffBytes -= v.bytes;
  }
}

/**
 * What lets a diff go to a long-lived `git diff-tree --stdin` (src/git/diff-pool.ts) instead of
 * a process of its own: the object reader names the two trees, the pool diffs them.
 */
export interface DiffPool {
  objects: ObjectReaders;
  diffs: DiffReaders;
}

async function runDiff(
  limits: GitLimits,
  dir: string,
  from: string,
  to: string,
  patches: boolean,
  pool: DiffPool | undefined,
): Promise<{ stdout: Buffer; truncated: boolean }> {
  const args = [...DIFF_OPTS, '--raw', '--numstat', ...(patches ? ['-p'] : []), '-z'];
  if (pool) {
    const [a, b] = await pool.objects.info(dir, [`${from}^{tree}`, `${to}^{tree}`]);
    const asked = a && b ? pool.diffs.diff(dir, args, a.oid, b.oid) : null;
    if (asked) return asked;
  }
  return limits.run(dir, ['diff-tree', ...args, from, to, '--'], { truncate: true });
}

async function computeDiff(
  limits: GitLimits,
  dir: string,
  from: string,
  to: string,
  patches: boolean,
  pool: DiffPool | undefined,
): Promise<Diff> {
  const out = await runDiff(limits, dir, from, to, patches, pool);
  const cut = out.stdout.indexOf('\0\0diff --git ');
  const listing = cut < 0 ? out.stdout : out.stdout.subarray(0, cut + 1);
  const entries = parseRawNumstat(listing.toString('utf8'));
  // cut short by the output cap before the patches began: the list itself may be incomplete
  const listTruncated = out.truncated && cut < 0;
  const stats = { additions: 0, deletions: 0, total: 0 };
  for (const e of entries) {
    stats.additions += e.additions;
    stats.deletions += e.deletions;
  }
  stats.total = stats.additions + stats.deletions;
  if (patches && entries.length > 0) {
    // Each file's patch is cut at MAX_PATCH_BYTES; past the output cap, the rest are truncated.
    const pieces = cut < 0 ? [] : splitPatch(out.stdout.subarray(cut + 2));
    for (let i = 0; i < entries.length && i < MAX_FILES; i++) {
      const e = entries[i]!;
      const piece = pieces[i];
      const cutHere = out.truncated && (piece === undefined || i === pieces.length - 1);
      if (e.binary) e.patch = null;
      else if (cutHere || (piece && piece.length > MAX_PATCH_BYTES + 4096)) {
        e.patch = null;
        e.patch_truncated = true;
      } else {
        const hunks = piece ? hunksOf(piece) : null;
        if (hunks !== null && Buffer.byteLength(hunks) > MAX_PATCH_BYTES) {
          e.patch = null;
          e.patch_truncated = true;
        } else e.patch = hunks;
      }
    }
  }
  const sorted = entries.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  return { files: sorted.slice(0, MAX_FILES), files_truncated: listTruncated || sorted.length > MAX_FILES, stats };
}

/** The `--raw --numstat -z` output of diff-tree as files, in git's order. */
function parseRawNumstat(text: string): DiffFile[] {
  const parts = text.split('\0');
  const files: DiffFile[] = [];
  let i = 0;
  // raw records: ":m1 m2 o1 o2 S\0path\0" or, for renames and copies, "…\0old\0new\0"
  while (i < parts.length && parts[i]!.startsWith(':')) {
    const fields = parts[i]!.split(' ');
    const code = fields[4] ?? 'M';
    if (code.startsWith('R') || code.startsWith('C')) {
      files.push(file(parts[i + 2]!, parts[i + 1]!, code.startsWith('R') ? 'renamed' : 'added'));
      i += 3;
    } else {
      const status = code === 'A' ? 'added' : code === 'D' ? 'deleted' : 'modified';
      files.push(file(parts[i + 1]!, null, status));
      i += 2;
    }
  }
  // numstat records, same order: "a\td\tpath\0" or "a\td\t\0old\0new\0"; "-" for binary
  for (let n = 0; n < files.length && i < parts.length; n++) {
    const [a, d, p] = parts[i]!.split('\t');
    i += p === '' ? 3 : 1;
    const f = files[n]!;
    if (a === '-' || d === '-') f.binary = true;
    else {
      f.additions = Number(a);
      f.deletions = Number(d);
    }
  }
  return files;
}

function file(path: string, previous: string | null, status: DiffFile['status']): DiffFile {
  return { path, previous_path: previous, status, additions: 0, deletions: 0, binary: false, patch: null };
}

/** The patch output cut at each `diff --git ` line (file contents lines never begin so). */
function splitPatch(out: Buffer): Buffer[] {
  const pieces: Buffer[] = [];
  const marker = Buffer.from('diff --git ');
  let start = out.indexOf(marker);
  while (start >= 0) {
    let next = out.indexOf(Buffer.from('\ndiff --git '), start);
    if (next >= 0) next += 1;
    pieces.push(out.subarray(start, next < 0 ? out.length : next));
    start = next;
  }
  return pieces;
}

/** The hunks of one file's patch (from its first `@@`), or null when it has none (binary, mode only). */
function hunksOf(piece: Buffer): string | null {
  const at = piece.indexOf('\n@@');
  if (at < 0) return null;
  const text = piece.subarray(at + 1).toString('utf8');
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}
