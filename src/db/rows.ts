/** Rows as the read path returns them: a table's row joined with the names a response shows. */
import type { Selectable } from 'kysely';
import type { PullsTable, ReposTable, TeamsTable, UsersTable } from './types.ts';

export type TeamRow = Selectable<TeamsTable>;
export type RepoRow = Selectable<ReposTable>;
export type UserRow = Selectable<UsersTable>;
export type PullRow = Selectable<PullsTable>;

/** The repo row with its owner's slug or username and its creator's username (repos/view.ts's RepoViewRow). */
export type RepoReadRow = Selectable<ReposTable> & {
  owner_team_slug: string | null;
  owner_username: string | null;
  creator_username: string | null;
};

/** The pull row with its author's and merger's usernames. */
export type PullReadRow = Selectable<PullsTable> & { author_username: string; merged_by_username: string | null };

/** Who caused an event (events/service.ts `actorOf`). */
export interface EventActor {
  uuid: string;
  username: string;
}

/** An event as it is stored and served (README "Live event stream"). */
export interface EventRecord {
  id: string;
  kind: string;
  scopes: string[];
  actor: EventActor | null;
  payload: Record<string, unknown>;
  created_at: string;
}
