import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NEEDS } from '../access/abilities.ts';
import type { Deps } from '../deps.ts';
import { AppError, forbidden } from '../errors.ts';
import { listForks } from '../forks/service.ts';
import { PULL_POLICIES, UpdateRepoBody, VISIBILITIES } from '../repos/schemas.ts';
import { deleteRepo, getRepo, setArchived, updateRepo } from '../repos/service.ts';
import type { RepoJson } from '../repos/view.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { attempt, dangerForm, field, formMessage, typedValues } from './forms.ts';
import { type Html, html, seg } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { pageRepo, pageRepoRef, repoHeader, repoRoute } from './repo-common.ts';
import {
  FormBody,
  type FormFields,
  type States,
  checkBody,
  confirmButton,
  stateOf,
  statusOf,
  tabs,
  text,
} from './settings-common.ts';

const POLICY_LABELS: Record<string, string> = {
  any: 'any: anyone who can read the repo opens pulls',
  team: 'team: members of the owning team (public team repos only)',
  owner: 'owner: maintainers only',
};

/**
 * The repo a settings page is for, with the caller's right to change it: maintain level, as the
 * API's PUT {repo} (404 when the caller cannot read the repo, 403 below maintain).
 */
export async function settingsRepo(deps: Deps, c: PageCaller, request: FastifyRequest): Promise<RepoJson> {
  const { repo, can } = await pageRepo(deps, c.viewer, request);
  if (!can.manage) throw forbidden(`This needs ${NEEDS.manage} access to the repo.`);
  return repo;
}

/** A repo settings page: the repo's header, the settings tabs, the body. */
export function repoSettingsPage(c: PageCaller, repo: RepoJson, current: string, body: Html): Html {
  const base = `${repoHref(repo)}/settings`;
  return layout(
    { title: `Settings · ${repo.full_name}`, caller: c },
    html`${repoHeader(repo, 'settings', { manage: true })}
    ${tabs(
      'Repo settings',
      [
        [base, 'General'],
        [`${base}/protections`, 'Branch protections'],
        [`${base}/timers`, 'Timers'],
        [`${base}/runners`, 'Runners'],
        [`${base}/secrets`, 'Secrets'],
        [`${base}/variables`, 'Variables'],
        [`${base}/hooks`, 'Hooks'],
        [`${base}/mirrors`, 'Mirrors'],
      ],
      current,
    )}
    ${repo.is_archived ? html`<p class="error" role="status">This repo is archived: it is read-only until it is unarchived.</p>` : ''}
    ${body}`,
  );
}

/** `{repo}/settings`: about, visibility, default branch, pull policy, archive, forks, delete. */
export async function repoSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const generalPage = async (reply: FastifyReply, c: PageCaller, request: FastifyRequest, states: States = {}) => {
    const repo = await settingsRepo(deps, c, request);
    const forks = await listForks(deps, c.viewer, pageRepoRef(request), { offset: 0, limit: 100 });
    const base = `${repoHref(repo)}/settings`;
    const g = stateOf(states, 'general');
    const archive = stateOf(states, 'archive');
    const general = repo.is_archived
      ? html`<section aria-labelledby="general-h">
          <h2 id="general-h">General</h2>
          <dl>
            <dt>Description</dt>
            <dd>${repo.description ?? '—'}</dd>
            <dt>Visibility</dt>
            <dd>${repo.visibility}</dd>
            <dt>Default branch</dt>
            <dd>${repo.default_branch}</dd>
            <dt>Pull policy</dt>
            <dd>${repo.public_repo_pull_policy}</dd>
          </dl>
        </section>`
      : html`<section aria-labelledby="general-h">
          <h2 id="general-h">General</h2>
          ${formMessage(g)}
          <form class="stack" method="post" action="${base}">
            ${csrfField(c)} ${field(g, { name: 'description', label: 'Description', value: repo.description, maxlength: 2000 })}
            ${field(g, { name: 'about', label: 'About (Markdown)', type: 'textarea', value: repo.about })}
            ${field(g, { name: 'visibility', label: 'Visibility', type: 'select', value: repo.visibility, options: VISIBILITIES.map((v) => [v, v] as const) })}
            ${field(g, { name: 'default_branch', label: 'Default branch', value: repo.default_branch, required: true, maxlength: 255 })}
            ${field(g, {
              name: 'public_repo_pull_policy',
              label: 'Who may open pulls',
              type: 'select',
              value: repo.public_repo_pull_policy,
              options: PULL_POLICIES.map((p) => [p, POLICY_LABELS[p] ?? p] as const),
            })}
            <div><button type="submit" class="primary">Save</button></div>
          </form>
        </section>`;
    const body = html`${general}
      <section aria-labelledby="forks-h">
        <h2 id="forks-h">Forks</h2>
        ${
          forks.length
            ? html`<ul class="plain">
                ${forks.map((f) => html`<li><a href="${repoHref(f.repo)}">${f.repo.full_name}</a> <span class="muted">by ${f.created_by_username}</span></li>`)}
              </ul>`
            : html`<p class="muted">No forks you can see.</p>`
        }
      </section>
      <section aria-labelledby="archive-h">
        <h2 id="archive-h">${repo.is_archived ? 'Unarchive' : 'Archive'}</h2>
        <p class="muted">
          ${repo.is_archived ? 'Unarchiving makes the repo writable again.' : 'An archived repo is read-only: no pushes, pulls, threads or setting changes until it is unarchived.'}
        </p>
        ${formMessage(archive)}
        ${confirmButton({
          action: `${base}/archive`,
          csrf: c.csrf,
          label: repo.is_archived ? 'Unarchive' : 'Archive',
          question: repo.is_archived ? `Unarchive ${repo.full_name}?` : `Archive ${repo.full_name}?`,
          fields: html`<input type="hidden" name="archived" value="${repo.is_archived ? 'false' : 'true'}" />`,
        })}
      </section>
      <section aria-labelledby="delete-h">
        <h2 id="delete-h">Delete</h2>
        <p class="muted">
          Deleting removes the repo, its pulls, threads and uploads for good; its forks stay as standalone repos.
        </p>
        ${formMessage(states.delete)}
        ${dangerForm({ action: `${base}/delete`, csrf: c.csrf, label: 'Delete this repo', confirmWith: repo.full_name, state: states.delete })}
      </section>`;
    return sendPage(reply, repoSettingsPage(c, repo, base, body), statusOf(states));
  };

  repoRoute(app, 'GET', '/settings', {}, async (request, reply) => generalPage(reply, requirePage(request), request));

  repoRoute(app, 'POST', '/settings', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const description = text(body, 'description');
    const input = {
      description: description.trim() ? description : null,
      about: text(body, 'about'),
      visibility: text(body, 'visibility') as 'public' | 'private',
      default_branch: text(body, 'default_branch').trim(),
      public_repo_pull_policy: text(body, 'public_repo_pull_policy') as 'any' | 'team' | 'owner',
    };
    const fields = ['description', 'about', 'visibility', 'default_branch', 'public_repo_pull_policy'];
    const done = await attempt(typedValues(body), fields, async () => {
      checkBody(UpdateRepoBody, input);
      return updateRepo(deps, c.viewer, pageRepoRef(request), input);
    });
    if (!done.ok) return generalPage(reply, c, request, { general: done.state });
    return seeOther(reply, `${repoHref(done.value)}/settings`);
  });

  repoRoute(app, 'POST', '/settings/archive', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const archived = text(request.body as FormFields, 'archived') === 'true';
    const done = await attempt({}, [], () => setArchived(deps, c.viewer, pageRepoRef(request), archived));
    if (!done.ok) return generalPage(reply, c, request, { archive: done.state });
    return seeOther(reply, `${repoHref(done.value)}/settings`);
  });

  repoRoute(app, 'POST', '/settings/delete', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const typed = text(request.body as FormFields, 'confirm');
    const done = await attempt({ confirm: typed }, ['confirm'], async () => {
      // the typed confirmation, checked again here (the form works without JavaScript): exactly
      // owner/slug as shown, case and all (a display name or another case deletes nothing)
      const repo = await getRepo(deps, c.viewer, ref);
      if (typed.trim() !== repo.full_name) {
        throw new AppError(400, 'invalid_request', `To confirm, type the repo's full name exactly: ${repo.full_name}.`);
      }
      return deleteRepo(deps, c.viewer, ref);
    });
    if (!done.ok) {
      const s = done.state;
      if (s.status === 400) s.errors = { confirm: s.message ?? Object.values(s.errors)[0] ?? '' };
      if (s.status === 400) s.message = undefined;
      return generalPage(reply, c, request, { delete: s });
    }
    return seeOther(reply, `/${ref.ownerKind === 'team' ? 'teams' : 'users'}/${seg(ref.ownerName.toLowerCase())}`);
  });
}
