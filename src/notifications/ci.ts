/**
 * The CI reason (docs/notifications.md "CI runs"): a run that completes failed, or succeeded
 * after the previous completed run of the same workflow on the same branch (or pull) failed,
 * notifies the run's actor, and only them, with reason `ci`. The subject is the pull for a pull's
 * run, else the run itself (subject kind `run`). Read by the fan-out (fanout.ts, beside
 * concerned.ts) from the `run-completed` events: exactly once, as every other reason. Reads only.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import type { CursorEvent } from '../events/follow.ts';
import type { Concerned, Subject, Touch } from './concerned.ts';
import { readersOf } from './readers.ts';

export const CI_KINDS = ['run-completed'] as const;

const FAILED = new Set(['failure', 'timed_out', 'startup_failure']);

/** A run's conclusion counts as failed. */
export const runFailed = (conclusion: string | null | undefined): boolean => FAILED.has(conclusion ?? '');

/** The title of a run subject: "Workflow CI failed on branch main". */
export function runTitle(run: { workflow_name: string; head_branch: string | null; conclusion: string | null }): string {
  const what = runFailed(run.conclusion)
    ? 'failed'
    : run.conclusion === 'success'
      ? 'succeeded'
      : (run.conclusion ?? 'completed');
  return `Workflow ${run.workflow_name} ${what}${run.head_branch ? ` on branch ${run.head_branch}` : ''}`;
}

interface RunPayload {
  uuid?: string;
  number?: number;
  workflow?: { path?: string; name?: string };
  head_branch?: string | null;
  pull_number?: number | null;
  actor?: { uuid?: string; username?: string };
  conclusion?: string | null;
}

/** The touches of a batch's `run-completed` events (one per run that notifies). */
export async function ciTouches(db: Kysely<DB>, raw: CursorEvent[]): Promise<Touch[]> {
  const out: Touch[] = [];
  for (const e of raw) {
    if (e.kind !== 'run-completed') continue;
    const payload = JSON.parse(e.payload) as { repo_uuid?: string; run?: RunPayload };
    const run = payload.run;
    const repo = payload.repo_uuid;
    const actor = run?.actor?.uuid ?? e.actor_uuid;
    if (!run?.uuid || !repo || !actor || typeof run.number !== 'number' || !run.workflow?.path) continue;
    if (!runFailed(run.conclusion)) {
      if (run.conclusion !== 'success') continue;
      // passes after failing: the previous completed run of the workflow on the same branch or pull
      let q = db
        .selectFrom('ci_runs')
        .select('conclusion')
        .where('repo_uuid', '=', repo)
        .where('workflow_path', '=', run.workflow.path)
        .where('status', '=', 'completed')
        .where('number', '<', run.number);
      q =
        typeof run.pull_number === 'number'
          ? q.where('pull_number', '=', run.pull_number)
          : q.where('pull_number', 'is', null).where('head_branch', '=', run.head_branch ?? '');
      const previous = await q.orderBy('number', 'desc').limit(1).executeTakeFirst();
      if (!previous || !runFailed(previous.conclusion)) continue;
    }
    let subject: Subject = { kind: 'run', uuid: run.uuid, repo_uuid: repo, author_uuid: actor };
    if (typeof run.pull_number === 'number') {
      const pull = await db
        .selectFrom('pulls')
        .select(['uuid', 'author_uuid'])
        .where('repo_uuid', '=', repo)
        .where('number', '=', run.pull_number)
        .executeTakeFirst();
      if (pull) subject = { kind: 'pull', uuid: pull.uuid, repo_uuid: repo, author_uuid: pull.author_uuid };
    }
    // the user's own settings: muting the subject, or ignoring the repo, silences it
    const muted = await db
      .selectFrom('subject_subscriptions')
      .select('subscribed')
      .where('subject_uuid', '=', subject.uuid)
      .where('user_uuid', '=', actor)
      .executeTakeFirst();
    if (muted?.subscribed === 0) continue;
    if (!muted) {
      const level = await db
        .selectFrom('repo_subscriptions')
        .select('level')
        .where('repo_uuid', '=', repo)
        .where('user_uuid', '=', actor)
        .executeTakeFirst();
      if (level?.level === 'ignoring') continue;
    }
    // only what the actor may read now (the repo rule)
    if (!(await readersOf(db, repo, [actor])).has(actor)) continue;
    out.push({
      user: actor,
      subject,
      reasons: ['ci'],
      eventId: Number(e.id),
      actor: { uuid: actor, username: run.actor?.username ?? e.actor_username ?? '' },
    });
  }
  return out;
}

/**
 * A batch's CI touches (ciTouches) added to what concerned.ts found: merged into a touch of the
 * same (user, subject) (one row per (user, subject) in an upsert), and their users left out of the
 * subject's bulk (they are written as touches).
 */
export async function withCi(db: Kysely<DB>, raw: CursorEvent[], found: Concerned): Promise<Concerned> {
  const ci = await ciTouches(db, raw);
  for (const c of ci) {
    const t = found.touches.find((x) => x.user === c.user && x.subject.uuid === c.subject.uuid);
    if (!t) found.touches.push(c);
    else if (c.eventId >= t.eventId) {
      t.reasons = [...t.reasons.filter((r) => r !== 'ci'), 'ci'];
      t.eventId = c.eventId;
      t.actor = c.actor;
    } else if (!t.reasons.includes('ci')) t.reasons = ['ci', ...t.reasons];
    for (const b of found.bulk) if (b.subject.uuid === c.subject.uuid && !b.special.includes(c.user)) b.special.push(c.user);
  }
  return found;
}
