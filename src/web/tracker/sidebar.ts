/**
 * A thread page's side bar and timeline (docs/tracker.md "Pages"). Each change is a small form
 * that posts without JavaScript (and with htmx swaps the thread's part of the page in place);
 * a form is shown only to a viewer the service would let make that change (the same access
 * functions as PATCH {repo}/threads/{n}: src/access/tracker.ts).
 */
import { levelAtLeast, type RepoLevel } from '../../access/index.ts';
import type { ThreadJson } from '../../threads/schemas.ts';
import type { TimelineEntry } from '../../tracker/timeline.ts';
import type { LabelJson } from '../../tracker/labels.ts';
import type { MilestoneJson } from '../../tracker/milestones.ts';
import type { Viewer } from '../../viewer.ts';
import type { PageCaller } from '../context.ts';
import type { FormState } from '../forms.ts';
import { type Html, html, seg, when } from '../html.ts';
import { csrfField } from '../layout.ts';
import { inWords } from '../words.ts';
import { labelChip } from './common.ts';

/** What the viewer may change on a thread: the rules of src/access/tracker.ts, read from the level. */
export function threadPowers(level: RepoLevel, viewer: Viewer, thread: ThreadJson, archived: boolean) {
  const live = !archived && thread.removed_at === null;
  const triage = live && levelAtLeast(level, 'write');
  return { triage, state: live && (triage || thread.author_uuid === viewer.uuid) };
}

const REASONS: Array<[string, string]> = [
  ['completed', 'Completed'],
  ['not_planned', 'Not planned'],
  ['duplicate', 'Duplicate'],
];

/**
 * The htmx attributes of a side bar form: post, then swap the thread's part of the answer in, a
 * refusal (4xx: the page again with the error beside the field) too (`data-refusals`, web/assets.ts).
 */
const swap = html`hx-target="#thread-main" hx-select="#thread-main" hx-swap="outerHTML" data-refusals="inline"`;

function fieldError(state: FormState | undefined, name: string): Html {
  const e = state?.errors[name];
  return e ? html`<p id="side-${name}-error" class="field-error" role="alert">${inWords(e)}</p>` : html``;
}
const invalid = (state: FormState | undefined, name: string) =>
  state?.errors[name] ? html` aria-invalid="true" aria-describedby="side-${name}-error"` : '';

export function sidebar(o: {
  c: PageCaller;
  base: string;
  thread: ThreadJson;
  powers: { triage: boolean; state: boolean };
  labels: LabelJson[];
  milestones: MilestoneJson[];
  state?: FormState;
}): Html {
  const { c, thread, powers, state } = o;
  const action = `${o.base}/threads/${thread.number}`;
  const on = new Set(thread.labels.map((l) => l.uuid));
  const form = (path: string, inner: Html, label: string) =>
    html`<form method="post" action="${action}/${path}" class="stack" hx-post="${action}/${path}" ${swap} aria-label="${label}">
      ${csrfField(c)} ${inner}
    </form>`;
  return html`<aside class="sidebar" aria-label="Issue details">
    <section aria-labelledby="side-labels">
      <h3 id="side-labels">Labels</h3>
      ${
        thread.labels.length
          ? html`<p class="row">
              ${thread.labels.map((l) => labelChip(l, `${o.base}/threads?labels=${encodeURIComponent(l.name)}`))}
            </p>`
          : html`<p class="muted">None yet</p>`
      }
      ${
        powers.triage && o.labels.length
          ? html`<details ${state?.errors.labels ? html` open` : ''}>
              <summary>Edit labels</summary>
              ${form(
                'labels',
                html`<fieldset ${invalid(state, 'labels')}>
                    <legend>Labels on this issue</legend>
                    <input type="hidden" name="labels" value="" />
                    ${o.labels.map(
                      (l, i) =>
                        html`<div class="check">
                          <input
                            id="side-label-${i}"
                            type="checkbox"
                            name="labels"
                            value="${l.name}"
                            ${on.has(l.uuid) ? html` checked` : ''}
                          /><label for="side-label-${i}">${labelChip(l)}</label>
                        </div>`,
                    )}
                  </fieldset>
                  ${fieldError(state, 'labels')}
                  <div><button type="submit">Save labels</button></div>`,
                'Labels',
              )}
            </details>`
          : ''
      }
    </section>
    <section aria-labelledby="side-assignees">
      <h3 id="side-assignees">Assignees</h3>
      ${
        thread.assignees.length
          ? html`<p>
              ${thread.assignees.map((a, i) => html`${i ? ', ' : ''}<a href="/users/${seg(a.username)}">${a.username}</a>`)}
            </p>`
          : html`<p class="muted">No one</p>`
      }
      ${
        powers.triage
          ? form(
              'assignees',
              html`<label for="side-assignees-input">Assignees (usernames, comma-separated)</label>
                <input
                  id="side-assignees-input"
                  name="assignees"
                  type="text"
                  maxlength="1000"
                  value="${state?.values.assignees ?? thread.assignees.map((a) => a.username).join(', ')}"
                  ${invalid(state, 'assignees')}
                />
                ${fieldError(state, 'assignees')}
                <div><button type="submit">Save assignees</button></div>`,
              'Assignees',
            )
          : ''
      }
    </section>
    <section aria-labelledby="side-milestone">
      <h3 id="side-milestone">Milestone</h3>
      ${
        thread.milestone
          ? html`<p><a href="${o.base}/milestones/${thread.milestone.number}">${thread.milestone.title}</a></p>`
          : html`<p class="muted">None</p>`
      }
      ${
        powers.triage
          ? form(
              'milestone',
              html`<label for="side-milestone-input">Set the milestone</label>
                <select id="side-milestone-input" name="milestone" ${invalid(state, 'milestone')}>
                  <option value="">None</option>
                  ${o.milestones.map(
                    (m) =>
                      html`<option value="${m.number}" ${thread.milestone?.number === m.number ? html` selected` : ''}>
                        ${m.title}
                      </option>`,
                  )}
                </select>
                ${fieldError(state, 'milestone')}
                <div><button type="submit">Save milestone</button></div>`,
              'Milestone',
            )
          : ''
      }
    </section>
    <section aria-labelledby="side-state">
      <h3 id="side-state">State</h3>
      <p>
        <span class="badge ${thread.state}">${thread.state === 'open' ? 'Open' : 'Closed'}</span>
        ${thread.state === 'closed' ? closedWords(o.base, thread) : ''}${thread.locked ? html` <span class="badge">Locked</span>` : ''}
      </p>
      ${
        powers.state
          ? thread.state === 'open'
            ? form(
                'state',
                html`<input type="hidden" name="state" value="closed" /><label for="side-reason">Reason</label>
                  <select id="side-reason" name="state_reason">
                    ${REASONS.map(([v, l]) => html`<option value="${v}">${l}</option>`)}
                  </select>
                  <div><button type="submit">Close issue</button></div>`,
                'Close',
              )
            : form(
                'state',
                html`<input type="hidden" name="state" value="open" />
                  <div><button type="submit">Reopen issue</button></div>`,
                'Reopen',
              )
          : ''
      }
      ${
        powers.triage
          ? form(
              'lock',
              html`<input type="hidden" name="locked" value="${thread.locked ? 'false' : 'true'}" />
                <div><button type="submit">${thread.locked ? 'Unlock conversation' : 'Lock conversation'}</button></div>`,
              thread.locked ? 'Unlock' : 'Lock',
            )
          : ''
      }
      ${state?.message ? html`<p class="error" role="alert">${inWords(state.message)}</p>` : ''}
    </section>
  </aside>`;
}

function closedWords(base: string, t: ThreadJson): Html {
  const by = t.closed_by;
  const reason = t.state_reason === 'not_planned' ? 'not planned' : t.state_reason;
  return html`<span class="muted"
    >${reason ? `(${reason})` : ''}${
      by
        ? html` by
          ${by.username}${
            by.pull_number !== null
              ? html` with <a href="${base}/pulls/${by.pull_number}">pull !${by.pull_number}</a>`
              : by.commit_sha
                ? html` in commit <a href="${base}/commit/${by.commit_sha}"><code>${by.commit_sha.slice(0, 10)}</code></a>`
                : ''
          }`
        : ''
    }
    ${when(t.closed_at)}</span
  >`;
}

/** The source of a `referenced` entry as a link (the reader can read it: the timeline already hid the rest). */
function sourceLink(s: Record<string, unknown>, repoPaths: Map<string, string>): Html {
  const repo = String(s.repo ?? '');
  const kind = String(s.kind ?? '');
  const href = (rest: string) => `${repoPaths.get(String(s.repo_uuid)) ?? ''}${rest}`;
  if (kind === 'commit')
    return html`commit <a href="${href(`/commit/${seg(String(s.sha))}`)}"><code>${String(s.sha).slice(0, 10)}</code></a> in
      ${repo}`;
  const pull = kind === 'pull' || kind === 'review';
  const mark = pull ? '!' : '#';
  return html`${kind === 'reply' ? 'a reply in ' : kind === 'review' ? 'a review of ' : ''}<a
      href="${href(`/${pull ? 'pulls' : 'threads'}/${seg(Number(s.number))}`)}"
      >${repo}${mark}${Number(s.number)} ${String(s.title ?? '')}</a
    >`;
}

const name = (v: unknown, key: string) => String((v as Record<string, unknown> | null)?.[key] ?? '');

/** One timeline entry in words ("ann added the label bug"); replies are shown as replies. */
export function timelineEntry(base: string, e: TimelineEntry, repoPaths: Map<string, string>): Html | null {
  const who = e.actor ? html`<strong>${e.actor.username}</strong>` : html`<strong>someone</strong>`;
  let what: Html | string;
  switch (e.kind) {
    case 'labeled':
    case 'unlabeled':
      what = html`${e.kind === 'labeled' ? 'added' : 'removed'} the label
      ${labelChip({ name: name(e.label, 'name'), color: name(e.label, 'color') || 'ededed' })}`;
      break;
    case 'assigned':
    case 'unassigned':
      what = `${e.kind} ${name(e.assignee, 'username')}`;
      break;
    case 'milestoned':
      what = html`added this to the milestone
        <a href="${base}/milestones/${name(e.milestone, 'number')}">${name(e.milestone, 'title')}</a>`;
      break;
    case 'demilestoned':
      what = `removed this from the milestone ${name(e.milestone, 'title')}`;
      break;
    case 'closed': {
      const by = e.closed_by as { pull_number?: number | null; commit_sha?: string | null } | null;
      const reason = e.state_reason === 'not_planned' ? 'not planned' : String(e.state_reason ?? 'completed');
      what = html`closed this as
      ${reason}${
        by?.pull_number
          ? html` with <a href="${base}/pulls/${by.pull_number}">pull !${by.pull_number}</a>`
          : by?.commit_sha
            ? html` in commit <a href="${base}/commit/${by.commit_sha}"><code>${by.commit_sha.slice(0, 10)}</code></a>`
            : ''
      }`;
      break;
    }
    case 'reopened':
      what = 'reopened this';
      break;
    case 'locked':
      what = 'locked the conversation';
      break;
    case 'unlocked':
      what = 'unlocked the conversation';
      break;
    case 'renamed':
      what = html`changed the title from <del>${String(e.from ?? '')}</del> to <ins>${String(e.to ?? '')}</ins>`;
      break;
    case 'referenced':
      what = html`referenced this from ${sourceLink((e.source ?? {}) as Record<string, unknown>, repoPaths)}`;
      break;
    default:
      return null;
  }
  return html`<li class="timeline-entry">${who} ${what} ${when(e.created_at)}</li>`;
}
