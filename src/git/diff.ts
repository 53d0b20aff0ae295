import type { GitLimits } from './limits.ts';

/**
 * Changed files between two trees with their patches (commits, compare, a pull's files): one
 * `git diff-tree --raw --numstat -z` for the list and the line counts, one `git diff-tree -p`
 * for the patches, both bounded. The patch output is split per file in the list's order.
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

/** Files changed from tree-ish `from` to `to`, sorted by path in byte order. */
export async function diffTrees(
  limits: GitLimits,
  dir: string,
  from: string,
  to: string,
  opts: { patches?: boolean } = {},
): Promise<Diff> {
  const listing = await limits.run(dir, ['diff-tree', ...DIFF_OPTS, '--raw', '--numstat', '-z', from, to, '--']);
  const entries = parseRawNumstat(listing.stdout.toString('utf8'));
  const stats = { additions: 0, deletions: 0, total: 0 };
  for (const e of entries) {
    stats.additions += e.additions;
    stats.deletions += e.deletions;
  }
  stats.total = stats.additions + stats.deletions;
  if (opts.patches !== false && entries.length > 0) {
    // Patches for at most MAX_FILES files, each cut at MAX_PATCH_BYTES; the whole output is
    // capped by the instance's limit, and files past that cap are reported truncated.
    const patch = await limits.run(dir, ['diff-tree', ...DIFF_OPTS, '-p', '--no-commit-id', from, to, '--'], { truncate: true });
    const pieces = splitPatch(patch.stdout);
    for (let i = 0; i < entries.length && i < MAX_FILES; i++) {
      const e = entries[i]!;
      const piece = pieces[i];
      const cutHere = patch.truncated && (piece === undefined || i === pieces.length - 1);
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
  return { files: sorted.slice(0, MAX_FILES), files_truncated: sorted.length > MAX_FILES, stats };
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
