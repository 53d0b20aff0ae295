/** Timers (migration 030): one row per timer; the row itself is the schedule the scheduler claims. */
export interface TimersTable {
  uuid: string;
  /** 'user' | 'team' | 'repo' */
  scope: string;
  /** the owning user, team or repo */
  owner_uuid: string;
  created_by_uuid: string;
  message: string;
  /** 'once' | 'interval' | 'weekly' */
  schedule_kind: string;
  /** once: when it runs; interval: the first run */
  run_at: string | null;
  every_seconds: number | null;
  /** HH:MM in `timezone` */
  time_of_day: string;
  /** comma-separated Mon..Sun in week order */
  days_of_week: string;
  timezone: string;
  /** 'active' | 'paused' | 'completed' | 'cancelled' */
  status: string;
  next_run_at: string;
  last_run_at: string | null;
  run_count: number;
  created_at: string;
  updated_at: string;
}

export interface TimersTables {
  timers: TimersTable;
}
