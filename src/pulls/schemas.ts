import { type TLiteral, type TUnion, Type } from '@sinclair/typebox';
import { LabelNames, LabelRef, MilestoneRef, UserRef, Usernames, ThreadListQuery } from '../threads/schemas.ts';
import { NoControl, NullableString, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const PULL_STATUSES = ['open', 'closed', 'merged'] as const;
export const REVIEW_STATUSES = ['approved', 'changes_requested', 'commented'] as const;
export const MERGE_STRATEGIES = ['merge', 'squash', 'rebase', 'fast_forward'] as const;

export const TITLE_MAX = 256;
export const BODY_MAX = 65_536;

const literals = <T extends readonly string[]>(values: T, description?: string): TUnion<TLiteral<T[number]>[]> =>
  Type.Union(
    values.map((v) => Type.Literal(v as T[number])),
    description ? { description } : {},
  );

const BranchName = (what: string) =>
  Type.String({
    maxLength: 1000,
    description: `${what}: a valid git branch name (git check-ref-format --branch rules, at most 255 bytes); it need not exist yet`,
  });

export const AutoMerge = Type.Object(
  {
    enabled_by: Type.Object({ uuid: Type.String(), username: Type.String() }, { additionalProperties: false }),
    merge_strategy: Type.String({ description: 'merge, squash, rebase or fast_forward' }),
    enabled_at: Timestamp,
  },
  { additionalProperties: false, title: 'PullAutoMerge' },
);

export const Pull = Type.Object(
  {
    uuid: Type.String(),
    repo_uuid: Type.String(),
    number: Type.Integer({ description: 'per repo, from 1, gap-free' }),
    title: Type.String(),
    body: Type.String(),
    source_branch: Type.String(),
    target_branch: Type.String(),
    source_repo: Type.Object(
      {
        uuid: NullableString({ description: "the source repo's uuid" }),
        full_name: NullableString({ description: "the source repo's owner/slug" }),
      },
      {
        additionalProperties: false,
        description:
          'the repo the source branch lives in: this repo, or a repo of its fork network. Both fields are null when the ' +
          'caller cannot read that repo, or once it is deleted (the pull keeps its head: refs/pull/{number}/head).',
      },
    ),
    status: literals(PULL_STATUSES),
    author_username: Type.String(),
    author_uuid: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    closed_at: { ...NullableTimestamp, description: 'set when closed or merged; cleared on reopen' },
    merged_at: NullableTimestamp,
    merged_by_username: NullableString(),
    merge_commit_sha: NullableString({ description: 'the new target tip once merged; null until then' }),
    merge_strategy: NullableString({ description: 'merge, squash, rebase or fast_forward once merged; else null' }),
    head_sha: NullableString({
      description:
        "the source branch tip now; for a pull from another repo whose branch or repo is gone, the pull's kept head " +
        '(refs/pull/{number}/head); null while there is neither',
    }),
    base_sha: NullableString({ description: 'the target branch tip now; null while the branch does not exist' }),
    draft: Type.Boolean({ description: 'a draft is not merged (409 pull_is_draft)' }),
    labels: Type.Array(LabelRef, { description: 'sorted by name' }),
    assignees: Type.Array(UserRef, { description: 'sorted by username' }),
    milestone: Type.Union([MilestoneRef, Type.Null()]),
    requested_reviewers: Type.Array(UserRef, { description: 'sorted by username; a review by one ends their request' }),
    auto_merge: Type.Union([AutoMerge, Type.Null()], {
      description:
        'who turned auto-merge on, with which strategy and when (PUT .../auto-merge); null when it is off (docs/ci.md "Auto-merge")',
    }),
  },
  { additionalProperties: false, title: 'Pull' },
);

export const CreatePullBody = StrictObject({
  title: Type.String({
    maxLength: 4096,
    ...NoControl,
    description: `non-blank, at most ${TITLE_MAX} characters after trimming; no control characters`,
  }),
  body: Type.String({ maxLength: BODY_MAX, description: `Markdown, at most ${BODY_MAX} characters; may be empty` }),
  source_branch: BranchName('the branch to merge from'),
  target_branch: BranchName('the branch to merge into; must differ from source_branch when both are in this repo'),
  source_repo: Type.Optional(
    Type.String({
      format: 'uuid',
      description:
        "the uuid of the repo the source branch lives in (a fork record's repo.uuid or source_repo_uuid): this repo or a " +
        'repo of its fork network that the caller can read; absent means this repo',
    }),
  ),
  draft: Type.Optional(Type.Boolean({ description: 'open the pull as a draft' })),
});

export const UpdatePullBody = StrictObject({
  title: Type.Optional(
    Type.String({
      maxLength: 4096,
      ...NoControl,
      description: `non-blank, at most ${TITLE_MAX} characters after trimming; no control characters`,
    }),
  ),
  body: Type.Optional(Type.String({ maxLength: BODY_MAX })),
  status: Type.Optional(literals(PULL_STATUSES, 'open (reopen) or closed; merged is refused with 400: use the merge endpoint')),
  labels: Type.Optional(LabelNames),
  assignees: Type.Optional(Usernames),
  milestone: Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }), Type.Null()], { description: 'a milestone number, or null' }),
  ),
  draft: Type.Optional(Type.Boolean({ description: 'the author or write access' })),
});

const { state: _state, mentioned: _mentioned, q: _q, ...threadFilters } = ThreadListQuery.properties;
export const ListPullsQuery = Type.Object({
  ...threadFilters,
  mentioned: Type.Optional(
    Type.String({ maxLength: 2000, description: 'a username @-mentioned in the title, body or a submitted review' }),
  ),
  q: Type.Optional(
    Type.String({
      maxLength: 2000,
      description: 'words in the title, body or submitted reviews: whole words, any case, each must appear (at most 10 used)',
    }),
  ),
  state: Type.Optional(
    Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('all')], {
      description: 'open, closed (closed or merged) or all; default open once any filter of the tracker is given',
    }),
  ),
  status: Type.Optional(literals(PULL_STATUSES, 'only pulls in this state; other values are 400')),
  draft: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  review_requested: Type.Optional(Type.String({ maxLength: 64, description: 'a username whose review is requested' })),
  ...PageQuery,
});

export const PullNumber = Type.Integer({
  minimum: 1,
  maximum: 2_147_483_647,
  description: 'the pull number; a value that is not a positive integer is 400, an unknown number 404',
});

export const ReviewUuid = Type.String({ minLength: 1, maxLength: 100 });

export const Review = Type.Object(
  {
    uuid: Type.String(),
    pull_uuid: Type.String(),
    pull_number: Type.Integer(),
    status: literals([...REVIEW_STATUSES, 'pending'] as const, 'pending: collecting comments, visible to its author only'),
    body: Type.String(),
    author_username: Type.String(),
    author_uuid: Type.String(),
    created_at: { ...Timestamp, description: 'when it was submitted (created, while pending)' },
    removed_at: { ...NullableTimestamp, description: 'set once the review is removed; a removed review no longer counts' },
    commit_sha: NullableString({
      description: "the pull's head when the review was submitted (null while pending and for reviews made before line comments)",
    }),
  },
  { additionalProperties: false, title: 'PullReview' },
);

const Side = literals(
  ['LEFT', 'RIGHT'] as const,
  'RIGHT: the head (added and unchanged lines); LEFT: the merge base (removed and unchanged lines)',
);
const LineNumber = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

export const ReviewCommentInput = StrictObject({
  path: Type.String({ minLength: 1, maxLength: 4096, description: "a file of the pull's diff" }),
  line: { ...LineNumber, description: 'the (last) line: a line of the diff on `side` (400 naming it otherwise)' },
  side: Type.Optional(Side),
  start_line: Type.Optional({ ...LineNumber, description: 'a range: its first line, in the same hunk, not after `line`' }),
  start_side: Type.Optional(Side),
  body: Type.String({
    minLength: 1,
    maxLength: BODY_MAX,
    description: 'Markdown; a fenced ```suggestion block proposes the lines that replace the commented ones',
  }),
});

export const CreateReviewBody = StrictObject({
  status: Type.Optional(
    literals(
      REVIEW_STATUSES,
      "absent: a pending review (visible to its author only) until submitted; the pull's author may only use commented",
    ),
  ),
  body: Type.Optional(Type.String({ maxLength: BODY_MAX, description: 'Markdown; default empty' })),
  comments: Type.Optional(Type.Array(ReviewCommentInput, { maxItems: 100, description: 'line comments, at most 100' })),
});

export const SubmitReviewBody = StrictObject({
  status: literals(REVIEW_STATUSES, "the pull's author may only use commented"),
  body: Type.Optional(Type.String({ maxLength: BODY_MAX, description: "Markdown; default the pending review's body" })),
});

const Person = Type.Object({ uuid: Type.String(), username: Type.String() }, { additionalProperties: false });

export const ReviewComment = Type.Object(
  {
    uuid: Type.String(),
    review_uuid: NullableString({ description: 'the review that made it; null for a reply' }),
    path: Type.String(),
    line: Type.Integer({ description: 'its (last) line on the current diff; while outdated, the last line it had' }),
    side: Side,
    start_line: Type.Union([Type.Integer(), Type.Null()], { description: 'a range: its first line, else null' }),
    start_side: Type.Union([Side, Type.Null()]),
    commit_sha: Type.String({ description: "the pull's head when the comment was made" }),
    original_line: Type.Integer({ description: 'its line in the diff at commit_sha' }),
    original_start_line: Type.Union([Type.Integer(), Type.Null()]),
    position_outdated: Type.Boolean({ description: 'true once a later push changed its hunk' }),
    body: Type.String(),
    author: Person,
    created_at: Timestamp,
    updated_at: Timestamp,
    in_reply_to: NullableString({ description: "the conversation's first comment, for a reply" }),
    resolved: Type.Boolean({ description: "the conversation's state (carried by its first comment)" }),
    resolved_by: Type.Union([Person, Type.Null()]),
    pending: Type.Boolean({ description: 'part of a pending review (visible to its author only)' }),
  },
  { additionalProperties: false, title: 'ReviewComment' },
);

export const CommentUuid = Type.String({ minLength: 1, maxLength: 100 });
export const CommentBody = StrictObject({ body: Type.String({ minLength: 1, maxLength: BODY_MAX, description: 'Markdown' }) });
export const ApplySuggestionsBody = StrictObject({
  comment_uuids: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
    minItems: 1,
    maxItems: 100,
    description: 'comments with a ```suggestion block, on the RIGHT side',
  }),
});
export const AppliedSuggestions = Type.Object(
  {
    commit_sha: Type.String({ description: 'the new tip of the source branch' }),
    branch: Type.String(),
    comment_uuids: Type.Array(Type.String()),
  },
  { additionalProperties: false, title: 'AppliedSuggestions' },
);

export const PullProtection = Type.Object(
  {
    protected: Type.Boolean({ description: "whether a branch protection matches the pull's target branch" }),
    branch_pattern: NullableString({ description: 'the `branch` of the matching protection, or null' }),
    required_approvals: Type.Integer({ description: '0 when unprotected' }),
    approvers: Type.Array(Type.String(), {
      description: "usernames on the protection's approver list; empty means any user with write access",
    }),
    approved_by: Type.Array(Type.String(), { description: 'usernames whose approval counts, in order of approval' }),
    required_status_contexts: Type.Array(Type.String(), {
      description: 'the status contexts the protection requires, sorted; empty when unprotected',
    }),
    status_checks: Type.Array(
      Type.Object(
        {
          context: Type.String(),
          state: Type.String({ description: 'pending, success, failure, error, or missing when none was reported' }),
        },
        { additionalProperties: false },
      ),
      { description: "each required context's latest status on the pull's head_sha, sorted by context" },
    ),
    require_conversation_resolution: Type.Boolean({
      description: 'merges need every review conversation resolved (409 conversations_unresolved)',
    }),
    satisfied: Type.Boolean({
      description: 'approved_by has at least required_approvals entries and every status check is success',
    }),
  },
  { additionalProperties: false, title: 'PullProtection' },
);

export const MergeBody = StrictObject({
  merge_strategy: Type.Optional(literals(MERGE_STRATEGIES, 'default merge; other values are 400')),
});

export const AutoMergeBody = StrictObject({
  merge_strategy: Type.Optional(literals(MERGE_STRATEGIES, 'default merge; other values are 400')),
});

export const MergeResponse = Type.Object(
  {
    pull: Pull,
    merge_strategy: literals(MERGE_STRATEGIES),
    merge_commit_sha: Type.String({ description: 'the new tip of the target branch' }),
    merged_at: Timestamp,
    merged_by_username: Type.String(),
  },
  { additionalProperties: false, title: 'PullMerge' },
);
