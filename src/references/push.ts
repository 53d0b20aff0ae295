/**
 * A push's commits as sources of references (README "Issue tracker"): each commit makes its
 * `referenced` entries once (keyed by its sha, so pushing it again to another branch or a fork
 * adds nothing), and one pushed to the repo's default branch closes what its keywords name.
 */
import type { TxContext } from '../core/transaction.ts';
import type { CommitInfo } from '../git/store.ts';
import { type Closer, closeThreadRow, type ThreadRow } from '../threads/service.ts';
import { closeByKeywords, recordReferences } from './service.ts';

export async function referencesOfPush(
  tx: TxContext,
  repoUuid: string,
  pusher: { uuid: string; username: string },
  commits: Map<string, CommitInfo[]>,
): Promise<void> {
  const repo = await tx.db.selectFrom('repos').selectAll().where('uuid', '=', repoUuid).executeTakeFirst();
  if (!repo) return;
  for (const [ref, list] of commits) {
    const toDefault = ref === `refs/heads/${repo.default_branch}`;
    for (const c of list) {
      const title = c.message.split('\n', 1)[0]!.slice(0, 256);
      await recordReferences(tx, pusher, { kind: 'commit', key: c.sha, repo, number: null, sha: c.sha, title }, c.message);
      if (toDefault) {
        await closeByKeywords(tx, pusher, repo, c.message, { commit_sha: c.sha }, (tx2, scopes, thread, closer) =>
          closeThreadRow(tx2, scopes, thread as ThreadRow, 'completed', closer as Closer, pusher),
        );
      }
    }
  }
}
