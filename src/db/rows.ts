/** Rows as the read path returns them: a table's row joined with the names a response shows. */
import type { Selectable } from 'kysely';
import type { PullsTable, ReposTable } from './types.ts';

/** The repo row with its owner's slug or username and its creator's username (repos/view.ts's RepoViewRow). */
export type RepoReadRow = Selectable<ReposTable> & {
  owner_team_slug: string | null;
  owner_username: string | null;
  creator_username: string | null;
};

/** The pull row with its author's and merger's usernames. */
export type PullReadRow = Selectable<PullsTable> & { author_username: string; merged_by_username: string | null };
