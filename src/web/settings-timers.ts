import type { TimerScopeRef } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { WEEK_DAYS } from '../timers/schedule.ts';
import { CreateTimerBody } from '../timers/schemas.ts';
import { type TimerJson, createTimer, deleteTimer, listTimers } from '../timers/service.ts';
import type { PageCaller } from './context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from './forms.ts';
import { type Html, html, pager, when } from './html.ts';
import { csrfField } from './layout.ts';
import { type FormFields, checkBody, confirmButton, many, text } from './settings-common.ts';

/**
 * A team's or repo's timers on its settings pages (README "Timers"): listed, created and deleted
 * through the timers service, with its access (a team's owners; a repo's maintainers).
 */
export const TIMERS_PER_PAGE = 30;

export async function timersOf(deps: Deps, c: PageCaller, ref: TimerScopeRef, page: number) {
  const offset = (page - 1) * TIMERS_PER_PAGE;
  const timers = await listTimers(deps, c.viewer, ref, undefined, { offset, limit: TIMERS_PER_PAGE + 1 });
  return { timers: timers.slice(0, TIMERS_PER_PAGE), more: timers.length > TIMERS_PER_PAGE, page };
}

/** The list with a delete button each, and the form for a new timer (none when `readOnly`). */
export function timersSection(
  c: PageCaller,
  base: string,
  list: { timers: TimerJson[]; more: boolean; page: number },
  state: FormState | undefined,
  readOnly = false,
): Html {
  const days = state ? many(state.values as FormFields, 'days_of_week') : [];
  return html`<section aria-labelledby="timers-h">
      <h2 id="timers-h">Timers</h2>
      ${readOnly ? formMessage(state) : ''}
      ${
        list.timers.length
          ? html`<ul class="plain">
              ${list.timers.map(
                (t) =>
                  html`<li>
                    <strong>${t.message}</strong> <span class="badge">${t.status}</span><br />
                    <span class="muted">${t.schedule} · next ${when(t.next_run_at)} · ran ${t.run_count} times</span>
                    ${
                      readOnly
                        ? ''
                        : confirmButton({
                            action: `${base}/${t.uuid}/delete`,
                            csrf: c.csrf,
                            label: 'Delete',
                            question: 'Delete this timer?',
                          })
                    }
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No timers.</p>`
      }
      ${pager(base, list.page, list.more)}
    </section>
    ${
      readOnly
        ? ''
        : html`<section aria-labelledby="new-timer-h">
            <h2 id="new-timer-h">New timer</h2>
            <p class="muted">
              One schedule: once (run in, such as 2h), an interval (every so many seconds), or weekly (a time and days).
            </p>
            ${formMessage(state)}
            <form class="stack" method="post" action="${base}">
              ${csrfField(c)} ${field(state, { name: 'message', label: 'Message', required: true, maxlength: 4000 })}
              ${field(state, { name: 'run_in', label: 'Once, in', hint: 'A duration such as 90s, 15m, 2h, 1d.' })}
              ${field(state, { name: 'every_seconds', label: 'Or every (seconds)', type: 'number' })}
              ${field(state, { name: 'time_of_day', label: 'Or weekly at (HH:MM)' })}
              <fieldset>
                <legend>On days (weekly)</legend>
                <div class="row">
                  ${WEEK_DAYS.map(
                    (d) =>
                      html`<span class="check"
                        ><input
                          id="day-${d}"
                          type="checkbox"
                          name="days_of_week"
                          value="${d}"
                          ${days.includes(d) ? html` checked` : ''}
                        /><label for="day-${d}">${d}</label></span
                      >`,
                  )}
                </div>
                ${state?.errors.days_of_week ? html`<p class="field-error" role="alert">${state.errors.days_of_week}</p>` : ''}
              </fieldset>
              ${field(state, { name: 'timezone', label: 'Time zone', value: 'UTC', hint: 'An IANA name such as Europe/Berlin.' })}
              <div><button type="submit" class="primary">Create timer</button></div>
            </form>
          </section>`
    }`;
}

const TIMER_FIELDS = ['message', 'run_in', 'run_at', 'every_seconds', 'time_of_day', 'days_of_week', 'timezone'] as const;

/** Creates a timer from the form: its result, or the form state to render again. */
export async function createTimerFromForm(deps: Deps, c: PageCaller, ref: TimerScopeRef, body: FormFields) {
  const values: Record<string, string | string[]> = typedValues(body);
  values.days_of_week = many(body, 'days_of_week');
  const input: Record<string, unknown> = { message: text(body, 'message') };
  for (const name of ['run_in', 'time_of_day', 'timezone'] as const) {
    if (text(body, name).trim()) input[name] = text(body, name).trim();
  }
  const every = text(body, 'every_seconds').trim();
  if (every) input.every_seconds = /^[0-9]+$/.test(every) ? Number(every) : every;
  const days = many(body, 'days_of_week');
  if (days.length) input.days_of_week = days;
  return attempt(values as Record<string, string>, TIMER_FIELDS, async () => {
    checkBody(CreateTimerBody, input);
    return createTimer(deps, c.viewer, ref, input as Parameters<typeof createTimer>[3]);
  });
}

export const deleteTimerFromForm = (deps: Deps, c: PageCaller, ref: TimerScopeRef, uuid: string) =>
  deleteTimer(deps, c.viewer, ref, uuid);
