import { type Kysely, sql } from 'kysely';

/**
 * Emails are unique among users, compared case-insensitively (README "Limits", 409 email_taken):
 * a unique index on lower(email), so two concurrent creates cannot both take one. A deployment
 * that already holds two users with one address keeps a plain index instead (the services still
 * refuse a taken email; only a race between two writes could pass there) until they are told apart.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const dupes = await sql<{ n: number | string }>`
    select count(*) as n from (select lower(email) from users group by lower(email) having count(*) > 1) d`.execute(db);
  const unique = Number(dupes.rows[0]?.n ?? 0) === 0 ? sql.raw('unique') : sql.raw('');
  await sql`create ${unique} index users_email_lower_idx on users (lower(email))`.execute(db);
}
