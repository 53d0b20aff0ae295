import type { Generated } from 'kysely';

/** Notifications, their fan-out cursor and the subscriptions (migration 440, docs/notifications.md). */
export interface NotificationsTable {
  uuid: string;
  user_uuid: string;
  /** thread | pull */
  subject_kind: string;
  subject_uuid: string;
  repo_uuid: string;
  /** the reason of the latest activity */
  reason: string;
  /** JSON array: every reason that applied, oldest first */
  reasons: string;
  unread: number;
  done: number;
  updated_at: string;
  last_event_id: number;
  last_actor_uuid: string | null;
  last_actor_username: string | null;
  created_at: string;
  /** the last event a mail told of (migration 441) */
  mailed_event_id: Generated<number>;
}

export interface NotificationDispatchTable {
  id: number;
  last_event_id: number;
  /** the last event of a batch written in chunks, while it is in progress */
  batch_end: number | null;
  /** the last recipient (uuid order) of that batch whose chunk is written */
  done_user: string | null;
}

export interface RepoSubscriptionsTable {
  user_uuid: string;
  repo_uuid: string;
  /** watching | participating | ignoring */
  level: string;
  created_at: string;
  /** watching: the `watch_activity.seq` this user's inbox has taken in (migration 770) */
  caught_up: Generated<number>;
}

/** A subject's latest activity for its repo's watchers (migration 770): one row per subject. */
export interface WatchActivityTable {
  subject_uuid: string;
  subject_kind: string;
  repo_uuid: string;
  event_id: number;
  actor_uuid: string | null;
  actor_username: string | null;
  /** the fan-out's cursor after the batch that wrote it */
  seq: number;
  updated_at: string;
}

export interface SubjectSubscriptionsTable {
  user_uuid: string;
  subject_uuid: string;
  /** 1 subscribed, 0 unsubscribed (explicit, over the repo level) */
  subscribed: number;
  created_at: string;
}

/** A user's notification mail settings (migration 441); no row: the defaults. */
export interface UserMailSettingsTable {
  user_uuid: string;
  /** off | instant | daily */
  email_notifications: string;
  /** IANA time zone of the daily digest's 08:00 */
  timezone: string;
  /** 1 after a permanent (5xx) refusal: no mail until the address is confirmed */
  email_bouncing: number;
  bounce_detail: string | null;
  updated_at: string;
}

/** An inbound mail that became a reply or a review (migration 541): posted once. */
export interface InboundMailSeenTable {
  /** sha256 of the Message-ID and the notification answered */
  mail_key: string;
  created_at: string;
}

export interface NotificationsTables {
  inbound_mail_seen: InboundMailSeenTable;
  user_mail_settings: UserMailSettingsTable;
  notifications: NotificationsTable;
  notification_dispatch: NotificationDispatchTable;
  repo_subscriptions: RepoSubscriptionsTable;
  subject_subscriptions: SubjectSubscriptionsTable;
  watch_activity: WatchActivityTable;
}
