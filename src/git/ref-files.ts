/**
 * Branch tips read from a bare repository's ref files, without starting a `git` process: the
 * loose ref `refs/heads/<branch>`, else its line in `packed-refs`. Starting `git rev-parse` costs
 * milliseconds of process start-up per call, which dominated GET {repo}/pulls/{n} (two tips) and
 * every pulls page. Anything this reader does not recognise — a symbolic ref, a reftable or
 * SHA-256 repository, an unreadable file — answers `undefined`, and the caller asks git.
 */
import { readFileSync, statSync } from 'node:fs';

const SHA1 = /^[0-9a-f]{40}$/;

function readText(path: string): string | null | undefined {
  try {
    // Synchronous: a ref file is a few bytes in the page cache; a read through the thread pool
    // costs more in hand-offs than the read (and queues behind other file work) under load.
    return readFileSync(path, 'latin1');
  } catch (err) {
    // absent: null (look elsewhere); any other failure: undefined (let git answer)
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
}

/**
 * Ref files read before, with the stat they were read under (inode, size, change and
 * modification times in nanoseconds). git rewrites a ref file by renaming a new file over it, so a
 * changed file has a new stat; a read answers from here only when the file's stat is still the one
 * its text was read under: one `stat` per ref instead of open, read and close, and no exception
 * for a ref that does not exist. Bounded; nothing is kept that a stat has not just confirmed.
 */
interface Known {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  text: string;
  /** packed-refs only: ref name to sha, parsed on first use */
  refs?: Map<string, string>;
}
const known = new Map<string, Known>();
const MAX_KNOWN = 10_000;
const MAX_KNOWN_BYTES = 1 << 20;

/** A ref file's entry: null when absent, undefined when unreadable (let git answer). */
function readKnown(path: string): Known | null | undefined {
  let st;
  try {
    st = statSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
  if (st === undefined) {
    known.delete(path);
    return null;
  }
  const hit = known.get(path);
  if (hit && hit.ino === st.ino && hit.size === st.size && hit.mtimeNs === st.mtimeNs && hit.ctimeNs === st.ctimeNs) return hit;
  const text = readText(path);
  if (typeof text !== 'string') return text;
  const entry: Known = { ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, text };
  // text read under another stat (replaced in between) is served once and not kept
  if (BigInt(Buffer.byteLength(text, 'latin1')) === st.size && text.length <= MAX_KNOWN_BYTES) {
    known.delete(path);
    if (known.size >= MAX_KNOWN) known.delete(known.keys().next().value!);
    known.set(path, entry);
  }
  return entry;
}

function packedRefs(entry: Known): Map<string, string> {
  if (!entry.refs) {
    entry.refs = new Map();
    for (const line of entry.text.split('\n')) {
      // "<sha> <ref>"; comments (#) and peeled lines (^) are skipped
      if (line.length > 41 && line[40] === ' ') entry.refs.set(line.slice(41), line.slice(0, 40));
    }
  }
  return entry.refs;
}

/** The tip of `refs/heads/<branch>`: its sha, null when the branch does not exist, undefined when git must answer. */
export function readBranchTip(dir: string, branch: string): string | null | undefined {
  const ref = `refs/heads/${branch}`;
  // concatenation, not join: `dir` is the store's absolute path and a branch name is a checked
  // refname (no `..`, no empty or dot segments), so join would only add its normalising pass
  const loose = readKnown(`${dir}/${ref}`);
  if (loose === undefined) return undefined;
  if (loose !== null) {
    const sha = loose.text.trim();
    return SHA1.test(sha) ? sha : undefined;
  }
  const packed = readKnown(`${dir}/packed-refs`);
  if (packed === undefined) return undefined;
  if (packed === null) {
    // no packed-refs: a files-backend repository has no such branch; any other backend, ask git
    let format;
    try {
      format = statSync(`${dir}/reftable`, { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    return format === undefined ? null : undefined;
  }
  const sha = packedRefs(packed).get(ref);
  if (sha === undefined) return null;
  return SHA1.test(sha) ? sha : undefined;
}
