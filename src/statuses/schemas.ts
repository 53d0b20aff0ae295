import { Type } from '@sinclair/typebox';
import { NoControl, NullableString, StrictObject, Timestamp, UserRef } from '../http/schemas.ts';

export const STATUS_STATES = ['pending', 'success', 'failure', 'error'] as const;
export type StatusState = (typeof STATUS_STATES)[number];

const State = Type.Union(
  STATUS_STATES.map((s) => Type.Literal(s)),
  { description: 'pending, success, failure or error' },
);

export const CommitStatus = Type.Object(
  {
    uuid: Type.String(),
    sha: Type.String({ description: 'the commit, 40 hex digits' }),
    state: State,
    context: Type.String({ description: 'what reported it (a CI job name); "default" when not given' }),
    description: NullableString(),
    target_url: NullableString({ description: 'where the details are (http or https)' }),
    creator: UserRef,
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'CommitStatus' },
);

export const CreateStatusBody = StrictObject({
  state: State,
  context: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: NoControl.pattern,
      description: '1-255 characters, no control characters; default "default"',
    }),
  ),
  description: Type.Optional(Type.String({ maxLength: 1000, description: 'at most 1,000 characters' })),
  target_url: Type.Optional(
    Type.String({ maxLength: 2048, pattern: '^[hH][tT][tT][pP][sS]?://[^\\s]+$', description: 'an http(s) URL' }),
  ),
});

export const CombinedStatus = Type.Object(
  {
    sha: Type.String(),
    state: Type.Union(
      (['pending', 'success', 'failure'] as const).map((s) => Type.Literal(s)),
      {
        description:
          '`failure` if any latest status is failure or error; else `pending` if any is pending or there is none; else `success`',
      },
    ),
    total_count: Type.Integer({ description: 'the number of contexts' }),
    statuses: Type.Array(CommitStatus, { description: 'the latest status of each context, sorted by context' }),
  },
  { additionalProperties: false, title: 'CombinedCommitStatus' },
);

export const ShaParam = {
  sha: Type.String({ pattern: '^[0-9a-fA-F]{40}$', description: 'a full commit sha: 40 hex digits (else 400)' }),
};
export const RefParam = {
  ref: Type.String({
    minLength: 1,
    maxLength: 1024,
    description: 'a branch, a tag or a commit sha (full, or 7+ hex digits); a ref holding `/` is sent percent-encoded (%2F)',
  }),
};
