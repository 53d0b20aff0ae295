import { type Static, Type } from '@sinclair/typebox';
import { NoControl, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const TITLE_MAX = 256;
export const BODY_MAX = 65_536;
export const LINKS_MAX = 50;
export const LINK_TARGET_MAX = 2000;
export const REPLY_KINDS = ['comment', 'question', 'answer', 'decision'] as const;
export const REPLY_STATUSES = ['open', 'resolved'] as const;
export const LINK_KINDS = ['thread', 'reply', 'pull', 'review', 'commit', 'url'] as const;

const Title = Type.String({
  minLength: 1,
  maxLength: TITLE_MAX,
  ...NoControl,
  description: `1-${TITLE_MAX} characters, trimmed, not blank, no control characters`,
});
const Body = Type.String({ maxLength: BODY_MAX, description: `Markdown, at most ${BODY_MAX} characters` });
const ReplyBody = Type.String({
  minLength: 1,
  maxLength: BODY_MAX,
  description: `Markdown, 1-${BODY_MAX} characters, not blank`,
});
const Kind = Type.Union(
  REPLY_KINDS.map((k) => Type.Literal(k)),
  { description: 'comment (default), question, answer or decision' },
);
const Status = Type.Union(
  REPLY_STATUSES.map((k) => Type.Literal(k)),
  { description: 'open (default) or resolved' },
);
export const Link = StrictObject({
  kind: Type.Union(LINK_KINDS.map((k) => Type.Literal(k))),
  target: Type.String({ minLength: 1, maxLength: LINK_TARGET_MAX }),
});
const Links = Type.Array(Link, { maxItems: LINKS_MAX, description: `at most ${LINKS_MAX} links` });

export const STATE_REASONS = ['completed', 'not_planned', 'duplicate'] as const;
export const MAX_SET = { labels: 50, assignees: 10 } as const;
export const LabelRef = Type.Object(
  { uuid: Type.String(), name: Type.String(), color: Type.String() },
  { additionalProperties: false, title: 'LabelRef' },
);
export const UserRef = Type.Object(
  { uuid: Type.String(), username: Type.String() },
  { additionalProperties: false, title: 'UserRef' },
);
export const MilestoneRef = Type.Object(
  { number: Type.Integer(), title: Type.String(), state: Type.String() },
  { additionalProperties: false, title: 'MilestoneRef' },
);
const ClosedBy = Type.Object(
  {
    username: Type.String(),
    pull_number: Type.Union([Type.Integer(), Type.Null()], { description: 'the merged pull that closed it' }),
    commit_sha: Type.Union([Type.String(), Type.Null()], { description: 'the pushed commit that closed it' }),
  },
  { additionalProperties: false, title: 'ClosedBy' },
);
const Name = Type.String({ minLength: 1, maxLength: 50 });
const Username = Type.String({ minLength: 1, maxLength: 64 });
export const LabelNames = Type.Array(Name, { maxItems: MAX_SET.labels, description: `label names (at most ${MAX_SET.labels})` });
export const Usernames = Type.Array(Username, {
  maxItems: MAX_SET.assignees,
  description: `usernames (at most ${MAX_SET.assignees})`,
});
const MilestoneNumber = Type.Union([Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }), Type.Null()], {
  description: 'a milestone number, or null for none',
});
const Tracking = {
  labels: Type.Optional(LabelNames),
  assignees: Type.Optional(Usernames),
  milestone: Type.Optional(MilestoneNumber),
};

export const Thread = Type.Object(
  {
    uuid: Type.String(),
    repo_uuid: Type.String(),
    number: Type.Integer(),
    title: Type.String(),
    body: Type.String(),
    body_html: Type.String({ description: 'body rendered as sanitised HTML' }),
    author_uuid: Type.String(),
    author_username: Type.String(),
    reply_count: Type.Integer({ description: 'replies not removed' }),
    state: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
    state_reason: Type.Union([...STATE_REASONS.map((r) => Type.Literal(r)), Type.Null()], { description: 'null while open' }),
    closed_at: NullableTimestamp,
    closed_by: Type.Union([ClosedBy, Type.Null()]),
    labels: Type.Array(LabelRef, { description: 'sorted by name' }),
    assignees: Type.Array(UserRef, { description: 'sorted by username' }),
    milestone: Type.Union([MilestoneRef, Type.Null()]),
    locked: Type.Boolean({ description: 'a locked thread takes replies from write access only (403 thread_locked)' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    removed_at: NullableTimestamp,
  },
  { additionalProperties: false, title: 'Thread' },
);
export type ThreadJson = Static<typeof Thread>;

export const Participant = Type.Object(
  {
    user_uuid: Type.String(),
    username: Type.String(),
    reply_count: Type.Integer(),
    first_participated_at: Timestamp,
  },
  { additionalProperties: false, title: 'ThreadParticipant' },
);
export type ParticipantJson = Static<typeof Participant>;

export const Reply = Type.Object(
  {
    uuid: Type.String(),
    thread_uuid: Type.String(),
    thread_number: Type.Integer(),
    number: Type.Integer(),
    author_uuid: Type.String(),
    author_username: Type.String(),
    body: Type.String(),
    body_html: Type.String({ description: 'body rendered as sanitised HTML' }),
    kind: Type.String(),
    status: Type.String(),
    links: Type.Array(Link),
    version: Type.Integer({ description: 'the current version; 1 as created' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    removed_at: NullableTimestamp,
  },
  { additionalProperties: false, title: 'Reply' },
);
export type ReplyJson = Static<typeof Reply>;

export const ReplyVersion = Type.Object(
  {
    reply_uuid: Type.String(),
    version: Type.Integer(),
    body: Type.String(),
    body_html: Type.String(),
    kind: Type.String(),
    status: Type.String(),
    links: Type.Array(Link),
    editor_username: Type.String(),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'ReplyVersion' },
);
export type ReplyVersionJson = Static<typeof ReplyVersion>;

export const CreateThreadBody = StrictObject({ title: Title, body: Type.Optional(Body), ...Tracking });
export type CreateThreadInput = Static<typeof CreateThreadBody>;
export const UpdateThreadBody = StrictObject({
  title: Type.Optional(Title),
  body: Type.Optional(Body),
  state: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed')])),
  state_reason: Type.Optional(
    Type.Union(
      STATE_REASONS.map((r) => Type.Literal(r)),
      { description: 'only with state "closed"; default completed' },
    ),
  ),
  ...Tracking,
  locked: Type.Optional(Type.Boolean()),
});
export const NamesBody = StrictObject({ names: Type.Array(Name, { minItems: 1, maxItems: MAX_SET.labels }) });
export const UsernamesBody = StrictObject({ usernames: Type.Array(Username, { minItems: 1, maxItems: MAX_SET.assignees }) });
/** The POST .../labels and .../assignees routes of threads and pulls: the set, its body and the body's key. */
export const SetBodies = [
  ['labels', NamesBody, 'names'],
  ['assignees', UsernamesBody, 'usernames'],
] as const;
const Csv = (description: string) => Type.Optional(Type.String({ maxLength: 2000, description }));
export const ThreadListQuery = Type.Object({
  ...PageQuery,
  state: Type.Optional(
    Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('all')], { description: 'default open' }),
  ),
  labels: Csv('comma-separated label names; every one must be on it'),
  assignee: Csv('a username, none or *'),
  milestone: Csv('a milestone number, none or *'),
  author: Csv('a username'),
  mentioned: Csv('a username @-mentioned in the body or a reply'),
  q: Csv('words in the title, body or replies (each must appear)'),
  sort: Type.Optional(
    Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('replies')], { description: 'default created' }),
  ),
  direction: Type.Optional(Type.Union([Type.Literal('desc'), Type.Literal('asc')], { description: 'default desc' })),
  after: Type.Optional(
    Type.String({ maxLength: 200, description: 'a keyset cursor: the `next` link of the previous page carries it' }),
  ),
});
export type UpdateThreadInput = Static<typeof UpdateThreadBody>;
export const CreateReplyBody = StrictObject({
  body: ReplyBody,
  kind: Type.Optional(Kind),
  status: Type.Optional(Status),
  links: Type.Optional(Links),
});
export type CreateReplyInput = Static<typeof CreateReplyBody>;
export const UpdateReplyBody = StrictObject({
  body: Type.Optional(ReplyBody),
  kind: Type.Optional(Kind),
  status: Type.Optional(Status),
  links: Type.Optional(Links),
});
export type UpdateReplyInput = Static<typeof UpdateReplyBody>;

export const ListQuery = Type.Object({ ...PageQuery });
export const VersionsQuery = Type.Object({
  ...PageQuery,
  after_version: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'only versions after this one; page counts from there' }),
  ),
});
const Num = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 });
export const ThreadParam = { number: Num };
export const ReplyParam = { number: Num, reply_number: Num };

export const TimelineEntry = Type.Object(
  {
    kind: Type.String({ description: 'reply, review, pushed, closed, reopened, merged, renamed, labeled, unlabeled, ...' }),
    actor: Type.Union([UserRef, Type.Null()]),
    created_at: Timestamp,
  },
  { additionalProperties: true, title: 'TimelineEntry' },
);
