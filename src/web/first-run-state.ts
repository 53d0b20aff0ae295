import { randomBytes } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { type Html, html } from './html.ts';

/** First run (web/first-run.ts): whether it is one, and this process's one-time set-up code. */
const SETUP_CODE = randomBytes(24).toString('base64url');

/** The one-time set-up link's code of this process (printed in the log at start-up on a first run). */
export const firstRunCode = (): string => SETUP_CODE;

/** Whether no active staff user can sign in with a password yet. */
export async function isFirstRun(deps: Deps): Promise<boolean> {
  const row = await deps.db
    .selectFrom('users')
    .select('uuid')
    .where('is_staff', '=', 1)
    .where('is_active', '=', 1)
    .where('password_hash', 'is not', null)
    .limit(1)
    .executeTakeFirst();
  return row === undefined;
}

/** The sign-in page's note on a first run. */
export const firstRunNote = (): Html =>
  html`<div class="box" role="note">
    <p><strong>First run.</strong> No staff user can sign in yet.</p>
    <p>
      <a href="/setup">Set the admin&rsquo;s password</a> with the server&rsquo;s console token (BOOTSTRAP_ADMIN_TOKEN) or the
      set-up link in its log.
    </p>
  </div>`;
