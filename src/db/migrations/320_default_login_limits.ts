import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';

/**
 * Default rate-limit rules for signing in (README "Rate limits"): failed sign-ins (the API's
 * `POST /auth/login` and the sign-in page) per client address (`api:login`) and per account
 * (`api:login-account`). Successful sign-ins are not counted. A deployment that already stored a
 * rule for `api:login` keeps it; staff change or disable them like any rule.
 */
export const DEFAULT_LOGIN_RULES = [
  { scope: 'api:login', max_requests: 30, window_seconds: 900 },
  { scope: 'api:login-account', max_requests: 10, window_seconds: 900 },
] as const;

export async function up(db: Kysely<unknown>): Promise<void> {
  const now = new Date().toISOString();
  for (const rule of DEFAULT_LOGIN_RULES) {
    await sql`insert into rate_limit_rules (uuid, scope, max_requests, window_seconds, is_enabled, created_at, updated_at)
      select ${randomUUID()}, ${rule.scope}, ${rule.max_requests}, ${rule.window_seconds}, 1, ${now}, ${now}
      where not exists (select 1 from rate_limit_rules where scope = ${rule.scope})`.execute(db);
  }
}
