import { assertNotArchived, itemWrite, levelAtLeast } from '../access/index.ts';
import { command } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, conflict, forbidden, notFound } from '../errors.ts';
import { emitRefMoves } from '../pulls/pushes.ts';
import { syncPullHeads } from '../pulls/heads.ts';
import { branchMatchesPattern, isValidBranchName } from '../git/refname.ts';
import { codeReaders } from '../git/readers.ts';
import { checkRef, refNotFound, resolveRef } from '../git/resolve.ts';
import { ZERO_SHA } from '../git/run.ts';
import type { RepoRef, Viewer } from '../viewer.ts';

/**
 * Creating and deleting branches through the API (README "Reading code"). Each is one
 * `command`: the repo is read with its row lock and access decided there, the event written,
 * and the ref moved last with `update-ref` against its expected old value, so a concurrent push
 * or API call loses cleanly (409) and a failed ref move rolls the event back.
 */

/** POST {repo}/branches: a new branch at `from` (default: the default branch's tip). */
export async function createBranch(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  body: { name: string; from?: string },
): Promise<{ name: string; commit_sha: string; protected: boolean }> {
  if (!isValidBranchName(body.name)) throw badRequest('name is not a valid git branch name.');
  if (body.from !== undefined) checkRef(body.from, 'from');
  const readers = codeReaders(deps);
  const created = await command(deps, viewer, onRepo(ref, { level: 'write', write: true }), async (tx) => {
    const { repo, level } = tx.access;
    const patterns = await tx.db.selectFrom('protections').select('branch').where('repo_uuid', '=', repo.uuid).execute();
    const isProtected = patterns.some((p) => branchMatchesPattern(p.branch, body.name));
    if (isProtected && !levelAtLeast(level, 'maintain')) {
      throw forbidden(`"${body.name}" matches a branch protection: only maintainers may create it.`);
    }
    const dir = readers.dirOf(repo.uuid);
    const from = body.from ?? repo.default_branch;
    const start = dir ? await resolveRef(readers.objects, dir, from) : null;
    if (!start) throw refNotFound(from);
    const [existing] = await readers.objects.info(dir!, [`refs/heads/${body.name}`]);
    if (existing) throw conflict('conflict', `Branch "${body.name}" already exists.`);
    const pulls = await emitRefMoves(
      deps,
      tx,
      repo.uuid,
      [{ ref: `refs/heads/${body.name}`, before: ZERO_SHA, after: start.sha, forced: false }],
      viewer,
    );
    const moved = await readers.limits.run(dir!, ['update-ref', '--no-deref', `refs/heads/${body.name}`, start.sha, ZERO_SHA], {
      okCodes: [1, 128],
    });
    if (moved.code !== 0) {
      // a push created it (or a name that clashes with an existing ref path, such as `a` beside `a/b`)
      throw conflict('conflict', `Branch "${body.name}" cannot be created: ${moved.stderr.trim().split('\n')[0] ?? ''}`);
    }
    return { branch: { name: body.name, commit_sha: start.sha, protected: isProtected }, pulls };
  });
  await syncPullHeads(deps, created.pulls);
  return created.branch;
}

/** DELETE {repo}/branches/{name}: never the default branch nor a protected one (403 saying why). */
export async function deleteBranch(deps: Deps, viewer: Viewer, ref: RepoRef, name: string): Promise<void> {
  if (!isValidBranchName(name)) throw badRequest('Not a valid branch name.');
  const readers = codeReaders(deps);
  await command(deps, viewer, onRepo(ref, itemWrite({ level: 'write', write: true })), async (tx) => {
    const { repo } = tx.access;
    const dir = readers.dirOf(repo.uuid);
    const [tip] = dir ? await readers.objects.info(dir, [`refs/heads/${name}`]) : [null];
    if (!tip) throw notFound('Branch');
    assertNotArchived(tx.access);
    if (name === repo.default_branch) throw forbidden(`"${name}" is the repo's default branch: change default_branch first.`);
    const patterns = await tx.db.selectFrom('protections').select('branch').where('repo_uuid', '=', repo.uuid).execute();
    const match = patterns.find((p) => branchMatchesPattern(p.branch, name));
    if (match) throw forbidden(`"${name}" is protected by the branch protection "${match.branch}": remove it first.`);
    await emitRefMoves(
      deps,
      tx,
      repo.uuid,
      [{ ref: `refs/heads/${name}`, before: tip.oid, after: ZERO_SHA, forced: false }],
      viewer,
    );
    const moved = await readers.limits.run(dir!, ['update-ref', '--no-deref', '-d', `refs/heads/${name}`, tip.oid], {
      okCodes: [1, 128],
    });
    if (moved.code !== 0) throw new AppError(409, 'conflict', `Branch "${name}" moved while it was being deleted: try again.`);
  });
}
