import { Type } from '@sinclair/typebox';
import { PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';
import { REASONS } from './fanout.ts';

const ReasonSchema = Type.Union(
  REASONS.map((r) => Type.Literal(r)),
  {
    description:
      'author, assigned, mention (@username), team_mention (@team-slug of a team you belong to), review_requested, ' +
      'comment (you replied or reviewed before), state_change (a subject you authored was closed, reopened or merged), ' +
      'subscribed (you watch the repo or subscribed to the subject), ' +
      'ci (a run of yours failed, or passed after a failure: subject the pull, or the run, kind `run`)',
  },
);

export const Notification = Type.Object(
  {
    uuid: Type.String(),
    subject: Type.Object(
      {
        kind: Type.Union([Type.Literal('thread'), Type.Literal('pull'), Type.Literal('run')]),
        repo: Type.String({ description: '{owner}/{slug}' }),
        number: Type.Integer(),
        title: Type.String(),
        url: Type.String({ description: 'the page of the subject on PUBLIC_URL' }),
      },
      { additionalProperties: false },
    ),
    reason: ReasonSchema,
    reasons: Type.Array(ReasonSchema, { description: 'every reason that applied, oldest first' }),
    unread: Type.Boolean(),
    done: Type.Boolean(),
    updated_at: Timestamp,
    last_event_id: Type.String({ description: 'the id of the latest event that updated it' }),
    last_actor: Type.Union([
      Type.Object({ uuid: Type.String(), username: Type.String() }, { additionalProperties: false }),
      Type.Null(),
    ]),
  },
  { additionalProperties: false, title: 'Notification' },
);

export const NotificationListQuery = Type.Object({
  ...PageQuery,
  state: Type.Optional(
    Type.Union([Type.Literal('unread'), Type.Literal('read'), Type.Literal('done'), Type.Literal('all')], {
      description: 'unread, read, done or all; default unread and read (not done)',
    }),
  ),
  reason: Type.Optional(ReasonSchema),
  repo: Type.Optional(Type.String({ maxLength: 300, description: '{owner}/{slug}: that repo only' })),
  after: Type.Optional(
    Type.String({ maxLength: 200, description: 'a keyset cursor: the `next` link of the previous page carries it' }),
  ),
});

export const NotificationParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });

export const UpdateNotificationBody = StrictObject({
  unread: Type.Optional(Type.Boolean()),
  done: Type.Optional(Type.Boolean({ description: 'true also marks it read unless unread is given' })),
});

export const MarkReadBody = StrictObject({
  before: Type.Optional(Type.String({ format: 'date-time', description: 'only those updated at or before; default now' })),
  repo: Type.Optional(Type.String({ maxLength: 300, description: '{owner}/{slug}: that repo only' })),
});

export const UnreadCount = Type.Object({ unread: Type.Integer() }, { additionalProperties: false, title: 'UnreadCount' });
export const Marked = Type.Object({ marked: Type.Integer() }, { additionalProperties: false });

const Level = Type.Union([Type.Literal('watching'), Type.Literal('participating'), Type.Literal('ignoring')], {
  description:
    'watching: every thread, pull and run of the repo; participating (default): what you take part in; ' +
    'ignoring: nothing but direct mentions and review requests',
});
export const RepoSubscription = Type.Object({ level: Level }, { additionalProperties: false, title: 'RepoSubscription' });
export const PutRepoSubscriptionBody = StrictObject({ level: Level });

export const SubjectSubscription = Type.Object(
  {
    subscribed: Type.Boolean({ description: 'whether its activity reaches your inbox' }),
    explicit: Type.Boolean({ description: 'set on this subject (overrides the repo level both ways)' }),
    level: Level,
  },
  { additionalProperties: false, title: 'SubjectSubscription' },
);
export const PutSubjectSubscriptionBody = StrictObject({ subscribed: Type.Boolean() });

export const MailSettingsSchema = Type.Object(
  {
    email_notifications: Type.Union([Type.Literal('off'), Type.Literal('instant'), Type.Literal('daily')], {
      description:
        'instant (default): a mail per notification update, activity within a minute batched; daily: a digest at 08:00 in timezone; off',
    }),
    timezone: Type.String({ description: 'IANA time zone of the daily digest (default UTC)' }),
    email_bouncing: Type.Boolean({
      description: 'true after a permanent refusal of your address: no mail until you save these settings again (confirming it)',
    }),
  },
  { additionalProperties: false, title: 'MailSettings' },
);

export const PutMailSettingsBody = StrictObject({
  email_notifications: Type.Optional(Type.Union([Type.Literal('off'), Type.Literal('instant'), Type.Literal('daily')])),
  timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});
