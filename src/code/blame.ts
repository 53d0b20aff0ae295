import type { Deps } from '../deps.ts';
import { checkPath, lookupPath, pathNotFound } from '../git/resolve.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { openRepo } from './service.ts';

/**
 * A file's blame (the web's blame view, docs/web.md): `git blame --porcelain` through the
 * bounded runner (src/git/limits.ts: a permit, the timeout, an output cap), for a file of at most
 * MAX_BLAME_BYTES that is not binary. Read access as for the file itself.
 */

/** The largest file blamed (larger: the page says so and links the raw file). */
export const MAX_BLAME_BYTES = 512 * 1024;
/** The most output `git blame --porcelain` may write for one file. */
const MAX_BLAME_OUTPUT = 16 * 1024 * 1024;

export interface BlameCommit {
  sha: string;
  author: string;
  /** ISO 8601 */
  date: string;
  summary: string;
}

/** Consecutive lines last changed by one commit. */
export interface BlameGroup {
  commit: BlameCommit;
  /** the first line's number (1-based) in the file */
  start: number;
  lines: string[];
}

export type BlameResult =
  | { kind: 'ok'; groups: BlameGroup[]; lines: number }
  | { kind: 'binary'; size: number }
  | { kind: 'too_large'; size: number }
  | { kind: 'not_file'; type: string };

/** The blame of `path` at commit `sha` (already resolved by the caller). */
export async function blameFile(deps: Deps, viewer: Viewer, at: RepoAt, sha: string, rawPath: string): Promise<BlameResult> {
  const path = checkPath(rawPath);
  if (path === '') return { kind: 'not_file', type: 'dir' };
  const o = await openRepo(deps, viewer, at);
  if (!o.dir) throw pathNotFound(path);
  const entry = await lookupPath(o.readers.objects, o.dir, sha, path);
  if (!entry) throw pathNotFound(path);
  if (entry.type !== 'file') return { kind: 'not_file', type: entry.type };
  const info = (await o.readers.objects.info(o.dir, [entry.oid]))[0];
  if (!info) throw pathNotFound(path);
  if (info.size > MAX_BLAME_BYTES) return { kind: 'too_large', size: info.size };
  const blob = await o.readers.objects.one(o.dir, entry.oid);
  if (!blob || blob.data.includes(0)) return { kind: 'binary', size: info.size };
  if (info.size === 0) return { kind: 'ok', groups: [], lines: 0 };
  const out = await o.readers.limits.run(o.dir, ['blame', '--porcelain', sha, '--', path], { maxBytes: MAX_BLAME_OUTPUT });
  const groups = parsePorcelain(out.stdout.toString('utf8'));
  const lines = groups.reduce((n, g) => n + g.lines.length, 0);
  return { kind: 'ok', groups, lines };
}

const HEADER = /^([0-9a-f]{40,64}) (\d+) (\d+)(?: (\d+))?$/;

/** `git blame --porcelain` as groups of consecutive lines of one commit, in file order. */
export function parsePorcelain(text: string): BlameGroup[] {
  const commits = new Map<string, BlameCommit>();
  const groups: BlameGroup[] = [];
  const rows = text.split('\n');
  let current: { sha: string; line: number } | null = null;
  const partial = new Map<string, { author?: string; time?: number; summary?: string }>();
  for (const row of rows) {
    if (current === null) {
      const m = HEADER.exec(row);
      if (m) current = { sha: m[1]!, line: Number(m[3]) };
      continue;
    }
    if (row.startsWith('\t')) {
      const { sha, line } = current;
      current = null;
      let commit = commits.get(sha);
      if (!commit) {
        const p = partial.get(sha) ?? {};
        commit = { sha, author: p.author ?? '', date: isoOf(p.time ?? 0), summary: p.summary ?? '' };
        commits.set(sha, commit);
      }
      const last = groups[groups.length - 1];
      if (last && last.commit.sha === sha && last.start + last.lines.length === line) last.lines.push(row.slice(1));
      else groups.push({ commit, start: line, lines: [row.slice(1)] });
      continue;
    }
    const space = row.indexOf(' ');
    const key = space === -1 ? row : row.slice(0, space);
    const value = space === -1 ? '' : row.slice(space + 1);
    const p = partial.get(current.sha) ?? {};
    if (key === 'author') p.author = value;
    else if (key === 'author-time') p.time = Number(value);
    else if (key === 'summary') p.summary = value;
    partial.set(current.sha, p);
  }
  return groups;
}

/** A unix time as ISO 8601 in UTC. */
function isoOf(seconds: number): string {
  const d = new Date(seconds * 1000);
  return Number.isNaN(d.getTime()) ? new Date(0).toISOString() : d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
