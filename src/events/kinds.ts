/**
 * Every event kind and what its payload names (README "Event privacy"). `EVENT_KINDS` is typed
 * `Record<EventKind, KindRule>` and `EventInput.kind` is an `EventKind`, so a new kind cannot be
 * emitted without an entry here (a compile error), and `assertDeclaredKind` refuses at run time a
 * kind that reached `emit` through a cast. The rule applied at read time (access/events.ts):
 *
 * - `subject`: the scope of the thing the event is about. The event is shown only to callers who
 *   may read that scope (staff see every event). `anyScope`: the event is about its scopes
 *   themselves (a user's own tokens, invites, ...) and is shown to whoever may read one of them.
 *   Parts of the subject repo (the event's `pull:`, `review:`, `thread:`, `reply:` scopes) are as
 *   readable as the repo.
 * - `teamRole`: when the subject is a team scope, the least role in that team the caller needs,
 *   where reading the team is not enough: a team timer's firing and deletion are for the team's
 *   owners (as the timer is), a deleted `is_active=false` team repo's deletion for its
 *   maintainers (as the repo was). Decided from what the event carries (its payload records the
 *   state at write time), since the thing itself may be gone.
 * - `names`: every other payload field that names a repo, team or user. Where the caller may not
 *   read the named thing, the uuid field and its name fields are set to null (a list field drops
 *   the entry). The event's `scopes` keep only the scopes the caller may read.
 */

import type { TeamRole } from '../access/levels.ts';

/** A payload path: a top-level field, or `parent.child` one level down. */
type Path = string;

export interface EventView {
  scopes: string[];
  payload: Record<string, unknown>;
}

/** The subject scope of an event, or null for "any of its scopes". */
export type Subject = (event: EventView) => string | null;

export interface NamedRef {
  kind: 'repo' | 'team' | 'user';
  /** the field holding the uuid (a list of uuids when `list`) */
  uuid: Path;
  /** fields holding that thing's names, cleared with the uuid */
  names: Path[];
  list?: boolean;
  /** a field holding a user uuid: that user may always see this thing here (their own membership) */
  shownTo?: Path;
}

export interface KindRule {
  subject: Subject;
  /** on a team subject: the least team role needed, or null when reading the team suffices */
  teamRole?: (event: EventView) => TeamRole | null;
  names: NamedRef[];
  /**
   * The one user who alone may see this event, staff included (a user timer's events: the timer
   * is private to its owner, README "Timers"), or null when the other rules decide.
   */
  onlyFor?: (event: EventView) => string | null;
}

export function payloadAt(payload: Record<string, unknown>, path: Path): unknown {
  const [head, tail] = path.split('.', 2) as [string, string | undefined];
  const value = payload[head];
  if (tail === undefined) return value;
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[tail] : undefined;
}

/** The subject is the thing whose uuid is in `field`. */
const field =
  (kind: 'repo' | 'team' | 'timer', path: Path): Subject =>
  (e) => {
    const uuid = payloadAt(e.payload, path);
    // a payload without its subject: nobody but staff may read it
    return `${kind}:${typeof uuid === 'string' ? uuid : '-'}`;
  };

/** The scope other than the event's own `kind:` scope: a deleted repo's or a timer's owner (repoScopes, timerScopes). */
const ownerScope =
  (own: 'repo' | 'timer'): Subject =>
  (e) =>
    e.scopes.find((s) => !s.startsWith(`${own}:`)) ?? `${own}:-`;

const anyScope: Subject = () => null;

/** The owner of a user timer's event (its owner scope is `user:<uuid>`), else null. */
const userTimerOwner = (e: EventView): string | null => {
  const owner = ownerScope('timer')(e) ?? '';
  return owner.startsWith('user:') ? owner.slice('user:'.length) : null;
};
/** A hook's events are about its repo or team (a team's hooks are its owners'). */
const hookOwner: Subject = (e) => e.scopes.find((s) => s.startsWith('repo:') || s.startsWith('team:')) ?? 'repo:-';
const ofHook: KindRule = { subject: hookOwner, teamRole: () => 'owner', names: [] };

const repo = (uuid: Path, ...names: Path[]): NamedRef => ({ kind: 'repo', uuid, names });
const repoList = (uuid: Path): NamedRef => ({ kind: 'repo', uuid, names: [], list: true });
const team = (uuid: Path, ...names: Path[]): NamedRef => ({ kind: 'team', uuid, names });
/** The team of a membership event: shown to its readers, and to the member concerned (who knew it). */
const membershipTeam: NamedRef = { ...team('team_uuid', 'team_slug'), shownTo: 'user_uuid' };
const user = (uuid: Path, ...names: Path[]): NamedRef => ({ kind: 'user', uuid, names });

const pullSource = repo('source_repo.uuid', 'source_repo.full_name');
const ofRepo = (...names: NamedRef[]): KindRule => ({ subject: field('repo', 'repo_uuid'), names });
const ofTeam = (...names: NamedRef[]): KindRule => ({ subject: field('team', 'team_uuid'), names });
const ofScopes = (...names: NamedRef[]): KindRule => ({ subject: anyScope, names });

const referenceRule: KindRule = {
  subject: field('repo', 'source.repo_uuid'),
  names: [repo('repo_uuid')],
};

/** A label's events are its repo's, or its team's (team labels). */
const labelRule: KindRule = {
  subject: (e) => (typeof e.payload.team_uuid === 'string' ? `team:${e.payload.team_uuid}` : field('repo', 'repo_uuid')(e)),
  names: [],
};

export const EVENT_KINDS = {
  // users, tokens, invites, settings, rate limits: events in users' own scopes
  'user-created': ofScopes(user('user_uuid', 'username')),
  'user-updated': ofScopes(user('user_uuid', 'username')),
  'user-mention': ofScopes(user('from.uuid', 'from.username'), user('to.uuid', 'to.username')),
  // a user's inbox changed (docs/notifications.md): for that user alone, staff included
  'notification-updated': {
    subject: anyScope,
    names: [],
    onlyFor: (e) => (typeof e.payload.user_uuid === 'string' ? e.payload.user_uuid : '-'),
  },
  'token-created': ofScopes(),
  'token-deleted': ofScopes(),
  'token-revoked': ofScopes(),
  'ssh-key-added': ofScopes(),
  'ssh-key-deleted': ofScopes(),
  'deploy-key-added': ofRepo(),
  'deploy-key-deleted': ofRepo(),
  'invite-created': ofScopes(),
  'invite-updated': ofScopes(),
  'invite-deleted': ofScopes(),
  'invite-accepted': ofScopes(user('user_uuid', 'username')),
  'settings-updated': ofScopes(),
  'rate-limit-created': ofScopes(),
  'rate-limit-updated': ofScopes(),
  'rate-limit-deleted': ofScopes(),
  // teams: a membership event is also the member's, so it is shown through either scope and
  // names the team to those who may read it and to the member concerned (a removed member
  // still learns which team removed them)
  'team-created': ofTeam(),
  'team-updated': ofTeam(),
  'member-added': ofScopes(membershipTeam, user('user_uuid', 'username')),
  'member-updated': ofScopes(membershipTeam, user('user_uuid', 'username')),
  'member-removed': ofScopes(membershipTeam, user('user_uuid', 'username')),
  // repos and forks
  'repo-created': ofRepo(repo('fork_of_uuid')),
  'repo-updated': ofRepo(repo('changes.fork_of_uuid'), repo('source_repo_uuid')),
  // the repo is gone: the event is its former owner's, for those who could read the repo (an
  // is_active=false team repo was for the team's maintainers: its payload's `is_active`)
  'repo-deleted': {
    subject: ownerScope('repo'),
    teamRole: (e) => (e.payload.is_active === false ? 'maintainer' : null),
    names: [repoList('detached_fork_uuids')],
  },
  'fork-created': ofRepo(repo('source_repo_uuid', 'source_full_name')),
  'branch-pushed': ofRepo(user('pusher.uuid', 'pusher.username')),
  // protections
  'protection-created': ofRepo(),
  'protection-updated': ofRepo(),
  'protection-deleted': ofRepo(),
  'protection-approver-added': ofRepo(user('user_uuid', 'username')),
  'protection-approver-removed': ofRepo(user('user_uuid', 'username')),
  // pulls and reviews
  // a pull from a fork names its source repo (`source_repo`, README "Pulls from forks")
  'pull-opened': ofRepo(pullSource),
  'pull-updated': ofRepo(pullSource),
  'pull-merged': ofRepo(pullSource),
  // auto-merge (docs/ci.md "Auto-merge"): turned on, and off with the reason
  'auto-merge-enabled': ofRepo(pullSource, user('enabled_by.uuid', 'enabled_by.username')),
  'auto-merge-disabled': ofRepo(pullSource, user('enabled_by.uuid', 'enabled_by.username')),
  // commit statuses (README "Commit statuses and required checks")
  'status-created': ofRepo(),
  // CI runs and jobs (docs/ci.md "Events")
  'run-created': ofRepo(),
  'run-completed': ofRepo(),
  'job-completed': ofRepo(),
  'review-submitted': ofRepo(),
  'review-removed': ofRepo(),
  // code review on lines (README "Code review")
  'review-comment-created': ofRepo(),
  'review-comment-edited': ofRepo(),
  'review-comment-deleted': ofRepo(),
  'conversation-resolved': ofRepo(),
  'conversation-unresolved': ofRepo(),
  // threads and replies
  'thread-created': ofRepo(),
  'thread-updated': ofRepo(),
  'thread-removed': ofRepo(),
  // the issue tracker (README "Issue tracker"): a thread's or pull's state, labels, assignees,
  // milestone, lock, references; labels (of a repo or a team) and milestones
  'thread-closed': ofRepo(user('closed_by.uuid', 'closed_by.username')),
  'thread-reopened': ofRepo(),
  'thread-labeled': ofRepo(),
  'thread-unlabeled': ofRepo(),
  'thread-assigned': ofRepo(user('assignee.uuid', 'assignee.username')),
  'thread-unassigned': ofRepo(user('assignee.uuid', 'assignee.username')),
  'thread-milestoned': ofRepo(),
  'thread-demilestoned': ofRepo(),
  'thread-locked': ofRepo(),
  'thread-unlocked': ofRepo(),
  // a reference is about its source: shown only to those who may read the source's repo; the
  // target repo is named only to those who may read it (its title is not in the payload)
  'thread-referenced': referenceRule,
  'pull-referenced': referenceRule,
  'label-created': labelRule,
  'label-updated': labelRule,
  'label-deleted': labelRule,
  'milestone-created': ofRepo(),
  'milestone-updated': ofRepo(),
  'milestone-closed': ofRepo(),
  'milestone-deleted': ofRepo(),
  'pull-labeled': ofRepo(pullSource),
  'pull-unlabeled': ofRepo(pullSource),
  'pull-assigned': ofRepo(pullSource, user('assignee.uuid', 'assignee.username')),
  'pull-unassigned': ofRepo(pullSource, user('assignee.uuid', 'assignee.username')),
  'pull-milestoned': ofRepo(pullSource),
  'pull-demilestoned': ofRepo(pullSource),
  'pull-ready-for-review': ofRepo(pullSource),
  'pull-converted-to-draft': ofRepo(pullSource),
  'review-requested': ofRepo(pullSource, user('reviewer.uuid', 'reviewer.username')),
  'review-request-removed': ofRepo(pullSource, user('reviewer.uuid', 'reviewer.username')),
  'reply-created': ofRepo(),
  'reply-edited': ofRepo(),
  'reply-removed': ofRepo(),
  // uploads and attachments
  'upload-created': ofRepo(),
  // releases (docs/releases.md): published ones only
  'release-published': ofRepo(),
  'release-updated': ofRepo(),
  'release-deleted': ofRepo(),
  'upload-removed': ofRepo(),
  'upload-group-created': ofRepo(),
  'upload-group-deleted': ofRepo(),
  'attachment-created': ofRepo(),
  'attachment-deleted': ofRepo(),
  // timers: a timer's own events are about the timer (a team's timers are its owners'); a
  // firing and a deletion are decided on the timer's owner scope (the timer may be gone), with
  // the team owner role a team timer needs, so they reach exactly the timer's readers
  // A user's timer is private to that user, staff included, in every reader (onlyFor).
  'timer-created': { subject: field('timer', 'timer_uuid'), names: [], onlyFor: userTimerOwner },
  'timer-updated': { subject: field('timer', 'timer_uuid'), names: [], onlyFor: userTimerOwner },
  'timer-deleted': { subject: ownerScope('timer'), teamRole: () => 'owner', names: [], onlyFor: userTimerOwner },
  'timer-fired': { subject: ownerScope('timer'), teamRole: () => 'owner', names: [], onlyFor: userTimerOwner },
  // webhooks: in the hook's repo or team scope (a team's hooks are for its owners); site hooks emit none
  'hook-created': ofHook,
  'hook-updated': ofHook,
  'hook-deleted': ofHook,
  'hook-disabled': ofHook,
} satisfies Record<string, KindRule>;

export type EventKind = keyof typeof EVENT_KINDS;

/** The rules by kind; `Record<EventKind, KindRule>` so a kind without a rule does not compile. */
export const KIND_RULES: Record<EventKind, KindRule> = EVENT_KINDS;

export const isEventKind = (kind: string): kind is EventKind => Object.hasOwn(EVENT_KINDS, kind);

/** Refuses (a programming error) to record an event whose kind has no privacy rule. */
export function assertDeclaredKind(kind: string): asserts kind is EventKind {
  if (!isEventKind(kind)) throw new Error(`event kind "${kind}" has no entry in src/events/kinds.ts`);
}

/**
 * Refuses (a programming error) to record an event whose kind has no rule, or whose subject is
 * not one of its scopes: so an event none of whose scopes the caller may read is hidden from
 * them, which lets a feed skip it on its scopes alone (access/events.ts `mayShow`).
 */
export function assertDeclaredEvent(event: { kind: string } & EventView): void {
  assertDeclaredKind(event.kind);
  const subject = EVENT_KINDS[event.kind].subject(event);
  if (subject !== null && !event.scopes.includes(subject)) {
    throw new Error(`event ${event.kind}: its subject ${subject} is not one of its scopes`);
  }
}
