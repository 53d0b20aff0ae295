/**
 * The payload of every event kind as a JSON Schema (README "Events", docs/webhooks.md): what
 * `GET /events/{id}` shows in `payload` and a webhook delivery sends in `event.payload`. The
 * OpenAPI document publishes them in its `webhooks` section (src/hooks/openapi-webhooks.ts).
 * Typed `Record<EventKind, …>`, so a new kind in kinds.ts does not compile without its schema
 * here; test/event-privacy.test.ts checks every payload it produces against its kind's schema.
 *
 * The fields a privacy rule may clear (kinds.ts `names`) are made nullable where the document is
 * built; the schemas below describe the payload as written.
 */
import type { EventKind } from './kinds.ts';

export type PayloadSchema = Record<string, unknown>;

const str = (description?: string): PayloadSchema => ({ type: 'string', ...(description ? { description } : {}) });
const strOrNull = (description?: string): PayloadSchema => ({
  type: ['string', 'null'],
  ...(description ? { description } : {}),
});
const int = { type: 'integer' };
const bool = { type: 'boolean' };
const uuid = { type: 'string', format: 'uuid' };
const uuidOrNull = { type: ['string', 'null'], format: 'uuid' };
const time = { type: 'string', format: 'date-time' };
const timeOrNull = { type: ['string', 'null'], format: 'date-time' };
const strings = (description?: string): PayloadSchema => ({
  type: 'array',
  items: { type: 'string' },
  ...(description ? { description } : {}),
});

/** An object with these properties, every one required except those named in `optional`. */
function obj(properties: Record<string, PayloadSchema>, optional: string[] = []): PayloadSchema {
  return { type: 'object', required: Object.keys(properties).filter((k) => !optional.includes(k)), properties };
}

const userRef = obj({ uuid, username: str() });
const fields = strings('the fields the write changed');
const sha = str('a 40-hex commit id');

// CI runs (docs/ci.md "Events"): the run as GET {repo}/runs/{number} shows it, without its jobs
const ciRun = obj({
  uuid,
  number: int,
  workflow: obj({ path: str(), name: str() }),
  event: str(),
  head_sha: sha,
  head_branch: strOrNull(),
  pull_number: { type: ['integer', 'null'] },
  actor: userRef,
  status: str('waiting, queued, in_progress or completed'),
  conclusion: strOrNull('success, failure, cancelled, skipped, timed_out, startup_failure or null'),
  attempt: int,
  created_at: time,
  started_at: timeOrNull,
  completed_at: timeOrNull,
});

// teams and repos
const teamMember = { team_uuid: uuid, team_slug: str(), user_uuid: uuid, username: str(), role: str() };

// threads and replies
const thread = { repo_uuid: uuid, thread_uuid: uuid, number: int, title: str() };
const reply = {
  repo_uuid: uuid,
  thread_uuid: uuid,
  thread_number: int,
  reply_uuid: uuid,
  number: int,
  version: int,
  kind: str(),
  status: str(),
};
const releaseEvent = obj({
  repo_uuid: uuid,
  repo: obj({ uuid, full_name: str() }),
  release: obj({ uuid, tag_name: str(), name: str(), prerelease: bool }),
});
const reviewComment = {
  repo_uuid: uuid,
  pull_uuid: uuid,
  pull_number: int,
  comment_uuid: uuid,
  review_uuid: uuidOrNull,
  in_reply_to: uuidOrNull,
  path: str(),
  line: int,
  side: str('LEFT or RIGHT'),
  start_line: { type: ['integer', 'null'] },
  start_side: strOrNull(),
  commit_sha: sha,
  body: str(),
  author_username: str(),
};
const conversation = obj({
  repo_uuid: uuid,
  pull_uuid: uuid,
  pull_number: int,
  comment_uuid: uuid,
  path: str(),
  line: int,
  side: str('LEFT or RIGHT'),
});
const labelRef = obj({ uuid, name: str(), color: str() });
const milestoneRef = obj({ number: int, title: str(), state: str() });
const reference = obj({
  kind: str('thread or pull'),
  repo: str('the full name of the source repo'),
  repo_uuid: uuid,
  number: int,
  title: str(),
});

// pulls and reviews
const pull = {
  repo_uuid: uuid,
  pull_uuid: uuid,
  number: int,
  title: str(),
  status: str(),
  source_branch: str(),
  target_branch: str(),
  author_username: str(),
  source_repo: { ...obj({ uuid, full_name: strOrNull() }), description: 'a pull from another repo (a fork): that repo' },
};
const pullEvent = (extra: Record<string, PayloadSchema> = {}, optional: string[] = []) =>
  obj({ ...pull, ...extra }, ['source_repo', ...optional]);
const review = {
  repo_uuid: uuid,
  pull_uuid: uuid,
  pull_number: int,
  review_uuid: uuid,
  status: str(),
  author_username: str(),
  target_branch: str(),
  head_sha: sha,
  base_sha: strOrNull('the target branch tip the review saw'),
};

// records carried whole
const label = obj({ uuid, name: str(), color: str(), description: str(), scope: str('repo or team'), created_at: time });
const milestone = obj({ uuid, number: int, title: str(), state: str() });
const invite = obj({
  uuid,
  email: strOrNull(),
  expires_at: time,
  status: str(),
  created_at: time,
  created_by_username: str(),
  accepted_at: timeOrNull,
  accepted_by_uuid: uuidOrNull,
  accepted_by_username: strOrNull(),
});
const rule = obj({
  uuid,
  scope: str(),
  max_requests: int,
  window_seconds: int,
  is_enabled: bool,
  created_at: time,
  updated_at: time,
});
const timer = obj({
  uuid,
  message: str(),
  scope: str(),
  schedule_kind: str(),
  schedule: str('in words'),
  run_at: timeOrNull,
  every_seconds: { type: ['integer', 'null'] },
  time_of_day: str('HH:MM'),
  days_of_week: strings(),
  timezone: str(),
  status: str(),
  next_run_at: time,
  last_run_at: timeOrNull,
  run_count: int,
  created_at: time,
});
const hook = obj({ uuid, url: str(), events: strings(), active: bool });
const hookOwner = { repo_uuid: uuid, team_uuid: uuid };
const attachment = {
  repo_uuid: uuid,
  attachment_uuid: uuid,
  upload_uuid: uuid,
  group_uuid: uuidOrNull,
  target_kind: str(),
  target_uuid: uuid,
};
const token = { token_uuid: uuid, name: str(), username: str() };
const sshKey = { key_uuid: uuid, title: str(), key_type: str(), fingerprint: str() };
const deployKey = { repo_uuid: uuid, ...sshKey, read_only: bool };
const protection = { repo_uuid: uuid, protection_uuid: uuid, branch: str() };
const protectionRules = { ...protection, required_approvals: int, required_status_contexts: strings() };
const approver = { ...protection, user_uuid: uuid, username: str() };

export const EVENT_PAYLOADS: Record<EventKind, PayloadSchema> = {
  'user-created': obj({ user_uuid: uuid, username: str() }),
  'user-updated': obj({ user_uuid: uuid, username: str(), fields }),
  'user-mention': obj({ from: userRef, to: userRef, body: str(), body_html: str() }),
  'notification-updated': obj({
    user_uuid: uuid,
    notification_uuids: { type: 'array', items: uuid, description: 'the notifications that changed' },
    change: { type: 'string', enum: ['activity', 'read', 'unread', 'done', 'undone'] },
  }),
  'token-created': obj({ ...token, expires_at: timeOrNull }),
  'token-deleted': obj(token),
  'token-revoked': obj(token),
  'ssh-key-added': obj(sshKey),
  'ssh-key-deleted': obj(sshKey),
  'deploy-key-added': obj(deployKey),
  'deploy-key-deleted': obj(deployKey),
  'invite-created': obj({ invite }),
  'invite-updated': obj({ invite }),
  'invite-deleted': obj({ invite }),
  'invite-accepted': obj({ invite_uuid: uuid, user_uuid: uuid, username: str() }),
  'settings-updated': obj({
    changed: strings('the settings the write changed'),
    settings: { type: 'object', description: 'every site setting after the write, as GET /site-settings shows them' },
  }),
  'rate-limit-created': obj({ rule }),
  'rate-limit-updated': obj({ rule }),
  'rate-limit-deleted': obj({ rule }),
  'team-created': obj({ team_uuid: uuid, slug: str(), name: str() }),
  'team-updated': obj({ team_uuid: uuid, slug: str(), name: str(), is_active: bool, fields }),
  'member-added': obj(teamMember),
  'member-updated': obj({ ...teamMember, previous_role: str() }),
  'member-removed': obj({ ...teamMember, left: { type: 'boolean', description: 'true when the member left on their own' } }),
  'repo-created': obj({ repo_uuid: uuid, full_name: str(), name: str(), visibility: str(), fork_of_uuid: uuidOrNull }),
  'repo-updated': obj(
    {
      repo_uuid: uuid,
      full_name: str(),
      fields,
      changes: { type: 'object', description: 'the changed fields with their new values, as GET of the repo shows them' },
      action: str('fork_source_deleted: the fork was detached from its deleted source'),
      source_repo_uuid: uuid,
    },
    ['full_name', 'action', 'source_repo_uuid'],
  ),
  'repo-deleted': obj({
    repo_uuid: uuid,
    full_name: str(),
    is_active: bool,
    detached_fork_uuids: strings('forks detached from it'),
  }),
  'fork-created': obj({ fork_uuid: uuid, repo_uuid: uuid, full_name: str(), source_repo_uuid: uuid, source_full_name: str() }),
  'branch-pushed': obj({
    repo_uuid: uuid,
    repo: obj({ uuid, full_name: str() }),
    ref: str('refs/heads/<branch>'),
    before: { ...sha, description: '40 zeros when the branch was created' },
    after: { ...sha, description: '40 zeros when the branch was deleted' },
    forced: bool,
    pusher: userRef,
  }),
  'protection-created': obj(protectionRules),
  'protection-updated': obj({ ...protectionRules, fields }),
  'protection-deleted': obj(protection),
  'protection-approver-added': obj(approver),
  'protection-approver-removed': obj(approver),
  'pull-opened': pullEvent({ head_sha: strOrNull(), base_sha: strOrNull() }),
  'pull-updated': pullEvent(
    {
      action: str('edited, closed, reopened or synchronized (its head moved)'),
      changed: strings('the fields that changed'),
      renamed: obj({ from: str(), to: str() }),
      head_sha: str('synchronized: the new head'),
      before: strOrNull('synchronized: the previous head'),
    },
    ['renamed', 'head_sha', 'before'],
  ),
  'pull-merged': pullEvent({
    head_sha: sha,
    base_sha: strOrNull(),
    merge_strategy: str(),
    merge_commit_sha: sha,
    merged_by_username: str(),
  }),
  'auto-merge-enabled': pullEvent({
    merge_strategy: str('merge, squash, rebase or fast_forward'),
    enabled_by: userRef,
    enabled_at: time,
  }),
  'auto-merge-disabled': pullEvent({
    merge_strategy: str(),
    enabled_by: userRef,
    reason: str(
      'turned_off (DELETE), closed (the pull was closed), access_lost (the user who turned it on can no longer merge), ' +
        'conflict (the source does not merge cleanly) or merge_refused (the merge was refused: `code` says why)',
    ),
    code: strOrNull('merge_refused: the refusal code of the merge (for example not_fast_forward); else null'),
  }),
  'status-created': obj({
    repo_uuid: uuid,
    status: obj({
      uuid,
      sha,
      state: str(),
      context: str(),
      description: strOrNull(),
      target_url: strOrNull(),
      creator: userRef,
      created_at: time,
    }),
    branches: strings('the branches whose tip is the commit'),
  }),
  'run-created': obj({ repo_uuid: uuid, run: ciRun }),
  'run-completed': obj({ repo_uuid: uuid, run: ciRun }),
  'job-completed': obj({
    repo_uuid: uuid,
    run: obj({ uuid, number: int, attempt: int, workflow: obj({ path: str(), name: str() }) }),
    job: obj({
      uuid,
      name: str(),
      matrix: { type: ['object', 'null'], description: 'the matrix values of this job instance' },
      conclusion: strOrNull('success, failure, cancelled, skipped, timed_out or startup_failure'),
      runner_name: strOrNull(),
      started_at: timeOrNull,
      completed_at: timeOrNull,
    }),
    head_sha: sha,
  }),
  'review-submitted': obj(review),
  'review-removed': obj({ ...review, removed_at: time }),
  'thread-created': obj(thread),
  'thread-updated': obj({ ...thread, fields, renamed: obj({ from: str(), to: str() }) }, ['renamed']),
  'thread-removed': obj(thread),
  'thread-closed': obj({
    ...thread,
    state_reason: str(),
    closed_by: obj({ uuid, username: str(), pull_number: { type: ['integer', 'null'] }, commit_sha: strOrNull() }),
  }),
  'thread-reopened': obj(thread),
  'thread-labeled': obj({ ...thread, label: labelRef }),
  'thread-unlabeled': obj({ ...thread, label: labelRef }),
  'thread-assigned': obj({ ...thread, assignee: userRef }),
  'thread-unassigned': obj({ ...thread, assignee: userRef }),
  'thread-milestoned': obj({ ...thread, milestone: milestoneRef }),
  'thread-demilestoned': obj({ ...thread, milestone: milestoneRef }),
  'thread-locked': obj(thread),
  'thread-unlocked': obj(thread),
  'thread-referenced': obj({ repo_uuid: uuid, thread_uuid: uuid, number: int, source: reference }),
  'pull-referenced': obj({ repo_uuid: uuid, pull_uuid: uuid, number: int, source: reference }),
  'label-created': obj({ ...hookOwner, label }, ['repo_uuid', 'team_uuid']),
  'label-updated': obj({ ...hookOwner, label, changed: strings() }, ['repo_uuid', 'team_uuid']),
  'label-deleted': obj({ ...hookOwner, label }, ['repo_uuid', 'team_uuid']),
  'milestone-created': obj({ repo_uuid: uuid, milestone }),
  'milestone-updated': obj({ repo_uuid: uuid, milestone, changed: strings() }),
  'milestone-closed': obj({ repo_uuid: uuid, milestone, changed: strings() }),
  'milestone-deleted': obj({ repo_uuid: uuid, milestone }),
  'pull-labeled': pullEvent({ label: labelRef }),
  'pull-unlabeled': pullEvent({ label: labelRef }),
  'pull-assigned': pullEvent({ assignee: userRef }),
  'pull-unassigned': pullEvent({ assignee: userRef }),
  'pull-milestoned': pullEvent({ milestone: milestoneRef }),
  'pull-demilestoned': pullEvent({ milestone: milestoneRef }),
  'pull-ready-for-review': pullEvent({ draft: bool }),
  'pull-converted-to-draft': pullEvent({ draft: bool }),
  'review-requested': pullEvent({ reviewer: userRef }),
  'review-request-removed': pullEvent({ reviewer: userRef }),
  'reply-created': obj(reply),
  'reply-edited': obj({ ...reply, fields }),
  'reply-removed': obj(reply),
  'upload-created': obj({ repo_uuid: uuid, upload_uuid: uuid, filename: str(), size_bytes: int, group_uuid: uuidOrNull }),
  'upload-removed': obj({ repo_uuid: uuid, upload_uuid: uuid, filename: str() }),
  'upload-group-created': obj({ repo_uuid: uuid, group_uuid: uuid, name: str() }),
  'upload-group-deleted': obj({ repo_uuid: uuid, group_uuid: uuid }),
  'attachment-created': obj(attachment),
  'attachment-deleted': obj(attachment),
  'timer-created': obj({ timer_uuid: uuid, timer }),
  'timer-updated': obj({ timer_uuid: uuid, timer, fields }),
  'timer-deleted': obj({ timer_uuid: uuid }),
  'timer-fired': obj({
    timer_uuid: uuid,
    message: str(),
    message_html: str(),
    mentions: { type: 'array', items: userRef },
    run_count: int,
    scheduled_for: time,
  }),
  'hook-created': obj({ ...hookOwner, hook }, ['repo_uuid', 'team_uuid']),
  'hook-updated': obj({ ...hookOwner, hook, fields }, ['repo_uuid', 'team_uuid']),
  'hook-deleted': obj({ ...hookOwner, hook }, ['repo_uuid', 'team_uuid']),
  'release-published': releaseEvent,
  'release-updated': releaseEvent,
  'release-deleted': releaseEvent,
  'review-comment-created': obj(reviewComment),
  'review-comment-edited': obj(reviewComment),
  'review-comment-deleted': obj({
    repo_uuid: uuid,
    pull_uuid: uuid,
    pull_number: int,
    comment_uuid: uuid,
    review_uuid: uuidOrNull,
    in_reply_to: uuidOrNull,
    path: str(),
    author_username: str(),
  }),
  'conversation-resolved': conversation,
  'conversation-unresolved': conversation,
  'hook-disabled': obj({ ...hookOwner, hook_uuid: uuid, reason: str('failures, gone or creator_lost_access') }, [
    'repo_uuid',
    'team_uuid',
  ]),
};
