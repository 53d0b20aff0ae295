import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { diffTrees, type DiffFile } from '../git/diff.ts';
import type { PageParams } from '../http/paging.ts';
import { pullRange } from '../pulls/diff-range.ts';
import { pullContextOf } from '../access/index.ts';
import type { RepoAt, Viewer } from '../viewer.ts';

/**
 * A pull's changes as code reading shows them: its files with patches (GET {repo}/pulls/{n}/files)
 * and its whole unified diff (GET {repo}/pulls/{n} with `Accept: text/x-diff`). Both run from the
 * merge base of the target and the source to the source's tip, as GitHub's pull diff does.
 */

const DIFF_TYPES = ['text/x-diff', 'application/vnd.weft.diff'];

/** Whether the caller asked for the pull's diff rather than its record. */
export function wantsDiff(request: FastifyRequest): boolean {
  const accept = String(request.headers.accept ?? '').toLowerCase();
  return DIFF_TYPES.some((t) => accept.includes(t));
}

/** The merge base and the head of a pull (`pullRange`: a merged pull keeps its merged diff; none while there is no head). */
async function range(deps: Deps, viewer: Viewer, at: RepoAt, number: number) {
  const { repo, pull } = await pullContextOf(deps.database, viewer, at, number);
  return pullRange(deps, repo.uuid, pull);
}

/** GET {repo}/pulls/{n}/files: one page of the pull's files, by path, with patches. */
export async function pullFiles(
  deps: Deps,
  viewer: Viewer,
  ref: RepoAt,
  number: number,
  page: Pick<PageParams, 'offset' | 'limit'>,
): Promise<DiffFile[]> {
  const r = await range(deps, viewer, ref, number);
  if (!r) return [];
  const diff = await diffTrees(r.readers.limits, r.dir, r.from, r.head, { pool: r.readers });
  return diff.files.slice(page.offset, page.offset + page.limit);
}

/** GET {repo}/pulls/{n} with `Accept: text/x-diff`: the whole unified diff, streamed. */
export async function sendPullDiff(
  deps: Deps,
  viewer: Viewer,
  ref: RepoAt,
  number: number,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const r = await range(deps, viewer, ref, number);
  reply.header('content-type', 'text/x-diff; charset=utf-8');
  reply.header('x-content-type-options', 'nosniff');
  reply.header('vary', 'Accept');
  if (!r) return reply.status(200).send('');
  const { stdout, abort } = await r.readers.limits.spawn(r.dir, [
    'diff',
    '--no-ext-diff',
    '--no-textconv',
    '--no-color',
    '-M',
    r.from,
    r.head,
    '--',
  ]);
  reply.raw.on('close', abort);
  return reply.status(200).send(stdout);
}
