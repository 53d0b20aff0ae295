/**
 * Branch tips read from a bare repository's ref files, without starting a `git` process: the
 * loose ref `refs/heads/<branch>`, else its line in `packed-refs`. Starting `git rev-parse` costs
 * milliseconds of process start-up per call, which dominated GET {repo}/pulls/{n} (two tips) and
 * every pulls page. Anything this reader does not recognise — a symbolic ref, a reftable or
 * SHA-256 repository, an unreadable file — answers `undefined`, and the caller asks git.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

const SHA1 = /^[0-9a-f]{40}$/;

function readText(path: string): string | null | undefined {
  try {
    // Synchronous: a ref file is a few bytes in the page cache; a read through the thread pool
    // costs more in hand-offs than the read (and queues behind other file work) under load.
    return readFileSync(path, 'utf8');
  } catch (err) {
    // absent: null (look elsewhere); any other failure: undefined (let git answer)
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
}

const LOOSE = Buffer.alloc(128);

/** A loose ref file (41 bytes): open, read, close into one buffer; longer files are read whole. */
function readLoose(path: string): string | null | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
  try {
    const n = readSync(fd, LOOSE, 0, LOOSE.length, 0);
    return n < LOOSE.length ? LOOSE.toString('latin1', 0, n) : readText(path);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** The tip of `refs/heads/<branch>`: its sha, null when the branch does not exist, undefined when git must answer. */
export function readBranchTip(dir: string, branch: string): string | null | undefined {
  const ref = `refs/heads/${branch}`;
  const loose = readLoose(join(dir, ref));
  if (loose === undefined) return undefined;
  if (loose !== null) {
    const sha = loose.trim();
    return SHA1.test(sha) ? sha : undefined;
  }
  const packed = readText(join(dir, 'packed-refs'));
  if (packed === undefined) return undefined;
  if (packed === null) {
    // no packed-refs: a files-backend repository has no such branch; any other backend, ask git
    const format = readText(join(dir, 'reftable'));
    return format === null ? null : undefined;
  }
  for (const line of packed.split('\n')) {
    if (line.length === 41 + ref.length && line.endsWith(ref) && line[40] === ' ') {
      const sha = line.slice(0, 40);
      return SHA1.test(sha) ? sha : undefined;
    }
  }
  return null;
}
