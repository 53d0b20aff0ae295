/**
 * A repo's CI settings (docs/ci.md "Pages"): runners, secrets and variables, for maintainers (as
 * the API: 404 to whoever cannot read the repo, 403 below maintain). Each goes through the API's
 * own services (src/ci/runners.ts, protocol.ts, secrets.ts), so the checks and their wording are
 * the API's; a refused form is the page again with the error beside its field and what was typed
 * kept (a secret's value excepted: it is never sent back). Plain forms: no JavaScript needed.
 *
 * Team settings: `namedSection` and `runnersSection` take no repo; a team's settings pages
 * (src/web/settings-team-ci.ts) show the same sections over the team's services.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createRepoRegistrationToken } from '../ci/protocol.ts';
import { listRepoRunners, removeRepoRunner, type RunnerJson } from '../ci/runners.ts';
import { deleteNamed, listNamed, type NamedKind, putNamed } from '../ci/secrets.ts';
import type { Deps } from '../deps.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from './forms.ts';
import { type Html, html, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField } from './layout.ts';
import { pageRepoRef, repoRoute } from './repo-common.ts';
import { FormBody, type FormFields, confirmButton, text } from './settings-common.ts';
import { repoSettingsPage, settingsRepo } from './settings-repo.ts';

const NAME_HINT = 'Upper-case letters, digits and _, not starting with a digit, WEFT_ or GITHUB_.';
const STATUS_WORDS: Record<RunnerJson['status'], string> = { idle: 'online', busy: 'busy', offline: 'offline' };

const KINDS: Record<NamedKind, { plural: string; title: string; intro: string }> = {
  secret: {
    plural: 'secrets',
    title: 'Secrets',
    intro:
      'Jobs read a secret as secrets.NAME; its value is masked as *** in logs and never shown again, here or in the API. ' +
      'Runs of pulls from forks get no secrets.',
  },
  variable: {
    plural: 'variables',
    title: 'Variables',
    intro: 'Jobs read a variable as vars.NAME; unlike a secret, its value is readable by anyone who can read the repo.',
  },
};

/** The registration token just made, shown once with the command that uses it. */
function tokenOnce(deps: Deps, t: { token: string; expires_at: string }): Html {
  const url = deps.config.publicUrl.replace(/\/$/, '');
  const cmd = `weft runner register --url ${url} --token ${t.token} --name NAME --labels linux`;
  return html`<div class="box" role="status" id="registration-token">
    <p>
      <strong>A registration token.</strong> Copy it now: it is not shown again. It registers one runner, once, until
      ${when(t.expires_at)}.
    </p>
    <p><code class="wrap" id="runner-token">${t.token}</code></p>
    <p>
      On the runner's machine (with the labels its jobs ask for in <code>runs-on</code>), then start it with
      <code>weft runner</code>:
    </p>
    <pre class="wrap" id="runner-command"><code>${cmd}</code></pre>
  </div>`;
}

/** The runners at `base` with their state and the form that makes a registration token (`{base}/token`). */
export function runnersSection(
  deps: Deps,
  c: PageCaller,
  runners: RunnerJson[],
  base: string,
  ro: boolean,
  o: { token?: { token: string; expires_at: string }; state?: FormState },
  whose = "this repo's jobs",
  /** Whether the viewer may make a registration token (a team's: the owner only). */
  mayAdd = true,
): Html {
  return html`<p class="muted">
      Runners run ${whose}: <code>weft runner</code> on any machine, taking the jobs whose <code>runs-on</code> labels are all
      among its own.
    </p>
    ${o.token ? tokenOnce(deps, o.token) : ''}
    <section aria-labelledby="runners-h">
      <h2 id="runners-h">Runners</h2>
      ${
        runners.length
          ? html`<ul class="plain runners">
              ${runners.map(
                (r) =>
                  html`<li>
                    <strong>${r.name}</strong>
                    <span class="badge state ${r.status === 'offline' ? '' : r.status === 'busy' ? 'pending' : 'success'}"
                      >${STATUS_WORDS[r.status]}</span
                    >
                    <span class="muted"
                      >${r.labels.length ? r.labels.join(', ') : 'no labels'} &middot; last seen ${when(r.last_seen_at)}
                      ${r.version ? html`&middot; ${r.version}` : ''}</span
                    >
                    ${
                      ro
                        ? ''
                        : confirmButton({
                            action: `${base}/${r.uuid}/remove`,
                            csrf: c.csrf,
                            label: 'Remove',
                            question: `Remove the runner ${r.name}? Its running jobs fail.`,
                          })
                    }
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No runners yet.</p>`
      }
    </section>
    ${
      ro
        ? ''
        : !mayAdd && !o.state
          ? html`<p class="muted">The team owner adds runners of the team.</p>`
          : html`<section aria-labelledby="add-runner-h">
              <h2 id="add-runner-h">Add a runner</h2>
              ${formMessage(o.state)}
              <p class="muted">A registration token works once, for one hour.</p>
              <form method="post" action="${base}/token">
                ${csrfField(c)}
                <button type="submit" class="primary">Create a registration token</button>
              </form>
            </section>`
    }`;
}

/**
 * The list and the set form of secrets or variables at `base` (`{base}` sets, `{base}/delete`
 * deletes). Scope-free: a team's settings page shows the same section over the team's services.
 */
export function namedSection(
  c: PageCaller,
  kind: NamedKind,
  items: Array<{ name: string; value?: string; updated_at: string }>,
  base: string,
  ro: boolean,
  states: { set?: FormState; remove?: FormState },
  intro?: string,
): Html {
  const k = KINDS[kind];
  return html`<p class="muted">${intro ?? k.intro}</p>
    <section aria-labelledby="${k.plural}-h">
      <h2 id="${k.plural}-h">${k.title}</h2>
      ${formMessage(states.remove)}
      ${
        items.length
          ? html`<ul class="plain named">
              ${items.map(
                (i) =>
                  html`<li>
                    <code>${i.name}</code>
                    ${i.value !== undefined ? html` = <code class="wrap">${i.value}</code>` : ''}
                    <span class="muted">updated ${when(i.updated_at)}</span>
                    ${
                      ro
                        ? ''
                        : confirmButton({
                            action: `${base}/delete`,
                            csrf: c.csrf,
                            label: 'Delete',
                            question: `Delete the ${kind} ${i.name}?`,
                            fields: html`<input type="hidden" name="name" value="${i.name}" />`,
                          })
                    }
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No ${k.plural}.</p>`
      }
    </section>
    ${
      ro
        ? ''
        : html`<section aria-labelledby="set-${kind}-h">
            <h2 id="set-${kind}-h">Set a ${kind}</h2>
            <p class="muted">A ${kind} of the same name is replaced.</p>
            ${formMessage(states.set)}
            <form class="stack" method="post" action="${base}">
              ${csrfField(c)}
              ${field(states.set, { name: 'name', label: 'Name', required: true, maxlength: 100, hint: NAME_HINT, autocomplete: 'off', idPrefix: kind })}
              ${field(states.set, { name: 'value', label: 'Value', type: 'textarea', idPrefix: kind, hint: 'At most 48 KiB.' })}
              <div><button type="submit" class="primary">Set ${kind}</button></div>
            </form>
          </section>`
    }`;
}

export async function repoCiSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  // ------------------------------------------------------------------ runners

  const runnersPage = async (
    reply: FastifyReply,
    c: PageCaller,
    request: FastifyRequest,
    o: { token?: { token: string; expires_at: string }; state?: FormState } = {},
  ) => {
    const repo = await settingsRepo(deps, c, request);
    const runners = await listRepoRunners(deps, c.viewer, pageRepoRef(request));
    const base = `${repoHref(repo)}/settings/runners`;
    const body = runnersSection(deps, c, runners, base, repo.is_archived, o);
    return sendPage(reply, repoSettingsPage(c, repo, base, body), o.state?.status ?? (o.token ? 201 : 200));
  };

  repoRoute(app, 'GET', '/settings/runners', {}, async (request, reply) => runnersPage(reply, requirePage(request), request));

  repoRoute(app, 'POST', '/settings/runners/token', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, [], () => createRepoRegistrationToken(deps, c.viewer, pageRepoRef(request)));
    if (!done.ok) return runnersPage(reply, c, request, { state: done.state });
    // the answer page is the only place the token is shown: no redirect (pages are not stored: private, no-store)
    return runnersPage(reply, c, request, { token: done.value });
  });

  repoRoute(
    app,
    'POST',
    '/settings/runners/:runner_uuid/remove',
    { params: { runner_uuid: Type.String({ maxLength: 100 }) }, body: FormBody },
    async (request, reply) => {
      const c = requirePage(request);
      const done = await attempt({}, [], () =>
        removeRepoRunner(deps, c.viewer, pageRepoRef(request), (request.params as { runner_uuid: string }).runner_uuid),
      );
      if (!done.ok) return runnersPage(reply, c, request, { state: done.state });
      const repo = await settingsRepo(deps, c, request);
      return seeOther(reply, `${repoHref(repo)}/settings/runners`);
    },
  );

  // ------------------------------------------------------------------ secrets and variables

  for (const kind of ['secret', 'variable'] as const) {
    const k = KINDS[kind];
    const page = async (
      reply: FastifyReply,
      c: PageCaller,
      request: FastifyRequest,
      states: { set?: FormState; remove?: FormState } = {},
    ) => {
      const repo = await settingsRepo(deps, c, request);
      const items = await listNamed(deps, c.viewer, pageRepoRef(request), kind);
      const base = `${repoHref(repo)}/settings/${k.plural}`;
      const body = namedSection(c, kind, items, base, repo.is_archived, states);
      const status = states.set?.status ?? states.remove?.status ?? 200;
      return sendPage(reply, repoSettingsPage(c, repo, base, body), status);
    };

    const back = async (request: FastifyRequest, reply: FastifyReply, c: PageCaller) => {
      const repo = await settingsRepo(deps, c, request);
      return seeOther(reply, `${repoHref(repo)}/settings/${k.plural}`);
    };

    repoRoute(app, 'GET', `/settings/${k.plural}`, {}, async (request, reply) => page(reply, requirePage(request), request));

    repoRoute(app, 'POST', `/settings/${k.plural}`, { body: FormBody }, async (request, reply) => {
      const c = requirePage(request);
      const body = request.body as FormFields;
      const name = text(body, 'name').trim();
      // a secret's value is never sent back, also not to the form that was refused
      const values = typedValues(body, kind === 'secret' ? ['value'] : []);
      const done = await attempt(values, ['name', 'value'], () =>
        putNamed(deps, c.viewer, pageRepoRef(request), kind, name, text(body, 'value')),
      );
      if (!done.ok) return page(reply, c, request, { set: done.state });
      return back(request, reply, c);
    });

    repoRoute(app, 'POST', `/settings/${k.plural}/delete`, { body: FormBody }, async (request, reply) => {
      const c = requirePage(request);
      const name = text(request.body as FormFields, 'name');
      const done = await attempt({}, [], () => deleteNamed(deps, c.viewer, pageRepoRef(request), kind, name));
      if (!done.ok) return page(reply, c, request, { remove: done.state });
      return back(request, reply, c);
    });
  }
}
