import { Type } from '@sinclair/typebox';
import { NullableInteger, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';
import { WEEK_DAYS } from './schedule.ts';

const Enum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );

export const TIMER_STATUSES = ['active', 'paused', 'completed', 'cancelled'] as const;
const Day = Enum(WEEK_DAYS);

export const Timer = Type.Object(
  {
    uuid: Type.String(),
    message: Type.String(),
    scope: Enum(['user', 'team', 'repo'] as const),
    schedule_kind: Enum(['once', 'interval', 'weekly'] as const),
    schedule: Type.String({ description: 'human summary, e.g. `Every Mon, Wed at 09:00 (Europe/Berlin)`' }),
    run_at: NullableTimestamp,
    every_seconds: NullableInteger(),
    time_of_day: Type.String({ description: 'HH:MM; for once and interval timers the first run, in `timezone`' }),
    days_of_week: Type.Array(Day),
    timezone: Type.String({ description: 'IANA time zone name' }),
    status: Enum(TIMER_STATUSES),
    next_run_at: Timestamp,
    last_run_at: NullableTimestamp,
    run_count: Type.Integer({ minimum: 0 }),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'Timer' },
);

const scheduleFields = {
  run_in: Type.Optional(
    Type.String({
      maxLength: 40,
      description: 'once: a duration such as `90s`, `15m`, `2h`, `1d`, `1h30m` or `PT1H30M`; 1 second to 10 years',
    }),
  ),
  run_at: Type.Optional(
    Type.String({ maxLength: 40, description: 'once: a future timestamp; interval: the optional first run (future)' }),
  ),
  every_seconds: Type.Optional(Type.Integer({ description: 'interval: seconds between runs, 60 to 315360000 (10 years)' })),
  time_of_day: Type.Optional(Type.String({ maxLength: 10, description: 'weekly: HH:MM, 24-hour (00:00-23:59)' })),
  days_of_week: Type.Optional(
    Type.Array(Day, { minItems: 1, maxItems: 7, uniqueItems: true, description: 'weekly: non-empty, unique' }),
  ),
  timezone: Type.Optional(Type.String({ maxLength: 100, description: 'IANA zone name; default UTC' })),
};

// Longer raw messages are accepted by the schema and measured after trimming (at most 4,000).
const Message = Type.String({ maxLength: 100_000, description: 'trimmed; 1 to 4,000 characters after trimming' });

export const CreateTimerBody = StrictObject({
  message: Message,
  status: Type.Optional(Enum(['active', 'paused'] as const, 'default active')),
  ...scheduleFields,
});

export const UpdateTimerBody = StrictObject({
  message: Type.Optional(Message),
  status: Type.Optional(Enum(['active', 'paused', 'cancelled'] as const)),
  ...scheduleFields,
});

export const ListTimersQuery = Type.Object({ ...PageQuery, status: Type.Optional(Enum(TIMER_STATUSES)) });
export const TimerParam = { timer_uuid: Type.String({ maxLength: 100 }) };
