import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AddApproverBody, CreateProtectionBody, UpdateProtectionBody } from '../protections/schemas.ts';
import {
  addApprover,
  createProtection,
  deleteProtection,
  listApprovers,
  listProtections,
  removeApprover,
  updateProtection,
} from '../protections/service.ts';
import { type PageCaller, requirePage, seeOther } from './context.ts';
import { sendPage } from './context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from './forms.ts';
import { html } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField } from './layout.ts';
import { pageRepoRef, repoRoute } from './repo-common.ts';
import {
  FormBody,
  type FormFields,
  type States,
  checkBody,
  confirmButton,
  lines,
  stateOf,
  statusOf,
  text,
} from './settings-common.ts';
import { repoSettingsPage, settingsRepo } from './settings-repo.ts';
import { createTimerFromForm, deleteTimerFromForm, timersOf, timersSection } from './settings-timers.ts';

const Uuid = Type.String({ maxLength: 100 });
const PageQuery = Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) });
const PROTECTION_FIELDS = ['branch', 'required_approvals', 'required_status_contexts'] as const;
const SHOWN = 100;

type P = { protection_uuid: string; user_uuid?: string; timer_uuid?: string };

/** A protection form's input: the number as a number when it is one (else the API's 400 names it). */
function protectionInput(body: FormFields) {
  const approvals = text(body, 'required_approvals').trim();
  return {
    branch: text(body, 'branch').trim(),
    ...(approvals
      ? { required_approvals: /^[0-9]+$/.test(approvals) ? Number(approvals) : (approvals as unknown as number) }
      : {}),
    required_status_contexts: lines(text(body, 'required_status_contexts')),
  };
}

const protectionFields = (
  state: FormState | undefined,
  p: { branch: string; required_approvals: number; required_status_contexts: string[] } | null,
  idPrefix: string,
) =>
  html`${field(state, { name: 'branch', label: 'Branch or pattern', value: p?.branch, required: true, maxlength: 255, idPrefix, hint: 'An exact name or a glob such as release/*.' })}
  ${field(state, { name: 'required_approvals', label: 'Required approvals', type: 'number', value: p?.required_approvals ?? 1, idPrefix })}
  ${field(state, {
    name: 'required_status_contexts',
    label: 'Required status checks',
    type: 'textarea',
    value: p?.required_status_contexts.join('\n') ?? '',
    idPrefix,
    hint: 'Status contexts (one per line) that must be success on a pull head before it merges.',
  })}`;

/** `{repo}/settings/protections` (branch protections with approvers and required checks) and `{repo}/settings/timers`. */
export async function repoProtectionPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const protectionsPage = async (reply: FastifyReply, c: PageCaller, request: FastifyRequest, states: States = {}) => {
    const repo = await settingsRepo(deps, c, request);
    const ref = pageRepoRef(request);
    const protections = await listProtections(deps, c.viewer, ref, { offset: 0, limit: SHOWN });
    const approvers = await Promise.all(
      protections.map((p) => listApprovers(deps, c.viewer, ref, p.uuid, { offset: 0, limit: SHOWN })),
    );
    const base = `${repoHref(repo)}/settings/protections`;
    const ro = repo.is_archived;
    const create = stateOf(states, 'new');
    const body = html`<p class="muted">
        A protected branch takes changes only through pulls with the required approvals (from the listed approvers, or anyone with
        write access when none are listed) and the required status checks.
      </p>
      ${protections.length === 0 ? html`<p class="muted">No branch protections.</p>` : ''}
      ${protections.map((p, i) => {
        const edit = states[`edit:${p.uuid}`];
        const approver = states[`approver:${p.uuid}`];
        const id = `p${i + 1}`;
        return html`<section class="box" aria-labelledby="${id}-h">
          <h2 id="${id}-h">${p.branch}</h2>
          ${
            ro
              ? html`<p>${p.required_approvals} approvals; checks: ${p.required_status_contexts.join(', ') || 'none'}</p>`
              : html`${formMessage(edit)}
                  <form class="stack" method="post" action="${base}/${p.uuid}">
                    ${csrfField(c)} ${protectionFields(edit, p, id)}
                    <div><button type="submit" class="primary">Save protection</button></div>
                  </form>`
          }
          <h3>Approvers</h3>
          ${
            approvers[i]!.length
              ? html`<ul class="plain">
                  ${approvers[i]!.map(
                    (a) =>
                      html`<li>
                        ${a.username}
                        ${ro ? '' : confirmButton({ action: `${base}/${p.uuid}/approvers/${a.user_uuid}/remove`, csrf: c.csrf, label: 'Remove', question: `Remove ${a.username} as an approver?` })}
                      </li>`,
                  )}
                </ul>`
              : html`<p class="muted">None: anyone with write access approves.</p>`
          }
          ${
            ro
              ? ''
              : html`${formMessage(approver)}
                  <form class="row" method="post" action="${base}/${p.uuid}/approvers">
                    ${csrfField(c)}
                    ${field(approver, { name: 'username', label: 'Add approver', required: true, idPrefix: `${id}-a` })}
                    <button type="submit">Add</button>
                  </form>
                  ${confirmButton({ action: `${base}/${p.uuid}/delete`, csrf: c.csrf, label: 'Delete protection', question: `Stop protecting ${p.branch}?` })}`
          }
        </section>`;
      })}
      ${
        ro
          ? ''
          : html`<section aria-labelledby="new-protection-h">
              <h2 id="new-protection-h">Protect a branch</h2>
              ${formMessage(create)}
              <form class="stack" method="post" action="${base}">
                ${csrfField(c)} ${protectionFields(create, null, 'new')}
                <div><button type="submit" class="primary">Add protection</button></div>
              </form>
            </section>`
      }`;
    return sendPage(reply, repoSettingsPage(c, repo, base, body), statusOf(states));
  };

  const back = (request: FastifyRequest, reply: FastifyReply, c: PageCaller) =>
    settingsRepo(deps, c, request).then((repo) => seeOther(reply, `${repoHref(repo)}/settings/protections`));

  repoRoute(app, 'GET', '/settings/protections', {}, async (request, reply) =>
    protectionsPage(reply, requirePage(request), request),
  );

  repoRoute(app, 'POST', '/settings/protections', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const input = protectionInput(body);
    const done = await attempt(typedValues(body), PROTECTION_FIELDS, async () => {
      checkBody(CreateProtectionBody, input);
      return createProtection(deps, c.viewer, pageRepoRef(request), input);
    });
    if (!done.ok) return protectionsPage(reply, c, request, { new: done.state });
    return back(request, reply, c);
  });

  const one = { params: { protection_uuid: Uuid }, body: FormBody };
  repoRoute(app, 'POST', '/settings/protections/:protection_uuid', one, async (request, reply) => {
    const c = requirePage(request);
    const { protection_uuid } = request.params as P;
    const body = request.body as FormFields;
    const input = protectionInput(body);
    const done = await attempt(typedValues(body), PROTECTION_FIELDS, async () => {
      checkBody(UpdateProtectionBody, input);
      return updateProtection(deps, c.viewer, pageRepoRef(request), protection_uuid, input);
    });
    if (!done.ok) return protectionsPage(reply, c, request, { [`edit:${protection_uuid}`]: done.state });
    return back(request, reply, c);
  });

  repoRoute(app, 'POST', '/settings/protections/:protection_uuid/delete', one, async (request, reply) => {
    const c = requirePage(request);
    await deleteProtection(deps, c.viewer, pageRepoRef(request), (request.params as P).protection_uuid);
    return back(request, reply, c);
  });

  repoRoute(app, 'POST', '/settings/protections/:protection_uuid/approvers', one, async (request, reply) => {
    const c = requirePage(request);
    const { protection_uuid } = request.params as P;
    const body = request.body as FormFields;
    const input = { username: text(body, 'username').trim() };
    const done = await attempt(typedValues(body), ['username'], async () => {
      checkBody(AddApproverBody, input);
      return addApprover(deps, c.viewer, pageRepoRef(request), protection_uuid, input.username);
    });
    if (!done.ok) return protectionsPage(reply, c, request, { [`approver:${protection_uuid}`]: done.state });
    return back(request, reply, c);
  });

  repoRoute(
    app,
    'POST',
    '/settings/protections/:protection_uuid/approvers/:user_uuid/remove',
    { params: { protection_uuid: Uuid, user_uuid: Uuid }, body: FormBody },
    async (request, reply) => {
      const c = requirePage(request);
      const { protection_uuid, user_uuid } = request.params as Required<P>;
      await removeApprover(deps, c.viewer, pageRepoRef(request), protection_uuid, user_uuid);
      return back(request, reply, c);
    },
  );

  // ------------------------------------------------------------------ timers

  const timersPage = async (reply: FastifyReply, c: PageCaller, request: FastifyRequest, page: number, state?: FormState) => {
    const repo = await settingsRepo(deps, c, request);
    const list = await timersOf(deps, c, { kind: 'repo', repo: pageRepoRef(request) }, page);
    const base = `${repoHref(repo)}/settings/timers`;
    return sendPage(
      reply,
      repoSettingsPage(c, repo, base, timersSection(c, base, list, state, repo.is_archived)),
      state?.status ?? 200,
    );
  };

  repoRoute(app, 'GET', '/settings/timers', { querystring: PageQuery }, async (request, reply) =>
    timersPage(reply, requirePage(request), request, (request.query as { page?: number }).page ?? 1),
  );

  repoRoute(app, 'POST', '/settings/timers', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const done = await createTimerFromForm(deps, c, { kind: 'repo', repo: pageRepoRef(request) }, request.body as FormFields);
    if (!done.ok) return timersPage(reply, c, request, 1, done.state);
    const repo = await settingsRepo(deps, c, request);
    return seeOther(reply, `${repoHref(repo)}/settings/timers`);
  });

  repoRoute(
    app,
    'POST',
    '/settings/timers/:timer_uuid/delete',
    { params: { timer_uuid: Uuid }, body: FormBody },
    async (request, reply) => {
      const c = requirePage(request);
      await deleteTimerFromForm(deps, c, { kind: 'repo', repo: pageRepoRef(request) }, (request.params as P).timer_uuid!);
      const repo = await settingsRepo(deps, c, request);
      return seeOther(reply, `${repoHref(repo)}/settings/timers`);
    },
  );
}
