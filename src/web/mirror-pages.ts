import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../deps.ts';
import {
  createPushMirror,
  deletePushMirror,
  getImport,
  listPushMirrors,
  requestMirrorSync,
  syncPushMirror,
  updateMirror,
} from '../mirrors/service.ts';
import { MAX_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS, recentSyncs, sourceFields } from '../mirrors/source.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from './forms.ts';
import { html, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { pageRepo, pageRepoRef, repoHeader, repoRoute } from './repo-common.ts';
import { FormBody, type FormFields, text } from './settings-common.ts';
import { repoSettingsPage, settingsRepo } from './settings-repo.ts';

const PUSH_FIELDS = ['url', 'username', 'password', 'sync_on_push'] as const;
const PULL_FIELDS = ['interval_seconds', 'username', 'password', 'clear_credentials'] as const;
const Uuid = Type.String({ minLength: 1, maxLength: 100 });

/**
 * Import and mirror pages (docs/bring-in.md): `{repo}/import` (an import's status and progress,
 * a pull mirror's state and its "Sync now" button) and `{repo}/settings/mirrors` (a pull mirror's
 * interval and credentials, push mirrors).
 */
export async function mirrorPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const importPage = async (reply: FastifyReply, c: PageCaller, request: FastifyRequest, state?: FormState) => {
    const { at, repo, can } = await pageRepo(deps, c.viewer, request);
    const s = await getImport(deps, c.viewer, at);
    const base = repoHref(repo);
    const importing = s.import_status === 'importing';
    const status = html`<section
      id="import-status"
      class="box"
      aria-labelledby="import-h"
      aria-live="polite"
      ${importing ? html` hx-get="${base}/import" hx-trigger="every 2s" hx-select="#import-status" hx-swap="outerHTML"` : ''}
    >
      <h2 id="import-h">Import</h2>
      <ul class="plain">
        <li>Source: ${s.url}</li>
        <li>
          Status: <strong>${s.import_status}</strong>${
            importing && s.import_progress ? html` <span class="muted">${s.import_progress}</span>` : ''
          }
        </li>
        ${s.import_error ? html`<li class="error" role="alert">${s.import_error}</li>` : ''}
      </ul>
      ${importing ? html`<p><a href="${base}/import">Refresh</a></p>` : ''}
      ${s.import_status === 'done' ? html`<p><a href="${base}">Go to the code</a></p>` : ''}
    </section>`;
    const syncs = s.mirror ? await recentSyncs(deps.db, repo.uuid) : [];
    const history = syncs.length
      ? html`<h3>Recent syncs</h3>
          <ul class="plain" id="mirror-syncs">
            ${syncs.map(
              (h) =>
                html`<li>
                  ${when(h.started_at)} · ${h.trigger === 'timer' ? 'timed' : h.trigger === 'demand' ? 'on demand' : 'import'} ·
                  ${
                    h.finished_at === null
                      ? html`<span class="muted">running, or cut short</span>`
                      : h.error
                        ? html`<span class="error">failed</span>`
                        : html`${h.refs_moved ?? 0} refs moved`
                  }
                </li>`,
            )}
          </ul>`
      : '';
    const mirror = s.mirror
      ? html`<section class="box" aria-labelledby="mirror-h">
          <h2 id="mirror-h">Pull mirror</h2>
          <p>This repo follows ${s.mirror.url} every ${s.mirror.interval_seconds} seconds; pushes to it are refused.</p>
          <p>
            Last sync:
            ${s.mirror.last_sync_at ? when(s.mirror.last_sync_at) : 'never'}${
              s.mirror.last_error ? html` <span class="error">${s.mirror.last_error}</span>` : ''
            }
          </p>
          ${formMessage(state)}
          ${
            can.write
              ? html`<form method="post" action="${base}/mirror/sync">
                  ${csrfField(c)}
                  <button type="submit">Sync now</button>
                </form>`
              : ''
          }
          ${history}
        </section>`
      : '';
    return sendPage(
      reply,
      layout({ title: `Import · ${repo.full_name}`, caller: c }, html`${repoHeader(repo, 'code', can)} ${status} ${mirror}`),
      state?.status ?? 200,
    );
  };

  repoRoute(app, 'GET', '/import', {}, async (request, reply) => importPage(reply, requirePage(request), request));

  repoRoute(app, 'POST', '/mirror/sync', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, [], () => requestMirrorSync(deps, c.viewer, pageRepoRef(request)));
    if (!done.ok) return importPage(reply, c, request, done.state);
    const { repo } = await pageRepo(deps, c.viewer, request);
    return seeOther(reply, `${repoHref(repo)}/import`);
  });

  const mirrorsPage = async (
    reply: FastifyReply,
    c: PageCaller,
    request: FastifyRequest,
    state?: FormState,
    pullState?: FormState,
  ) => {
    const repo = await settingsRepo(deps, c, request);
    const rows = await listPushMirrors(deps, c.viewer, pageRepoRef(request));
    const base = `${repoHref(repo)}/settings/mirrors`;
    const source = await sourceFields(deps.db, repo.uuid);
    const pull = 'mirror' in source && source.mirror ? source.mirror : null;
    const pullForm = pull
      ? html`<section class="box" aria-labelledby="pull-h">
          <h2 id="pull-h">Pull mirror</h2>
          <p>This repo follows <code>${pull.url}</code>. <a href="${repoHref(repo)}/import">Sync status</a></p>
          ${formMessage(pullState)}
          <form class="stack" method="post" action="${base}/pull" id="pull-mirror-form">
            ${csrfField(c)}
            ${field(pullState, {
              name: 'interval_seconds',
              label: 'Sync every (seconds)',
              type: 'number',
              value: pull.interval_seconds,
              required: true,
              hint: `From ${MIN_INTERVAL_SECONDS} to ${MAX_INTERVAL_SECONDS}.`,
              idPrefix: 'pull',
            })}
            ${field(pullState, { name: 'username', label: 'New username (optional)', maxlength: 255, idPrefix: 'pull' })}
            ${field(pullState, {
              name: 'password',
              label: 'New password or token (optional)',
              type: 'password',
              maxlength: 4096,
              hint: 'Stored encrypted; never shown again. Left empty, the stored credentials stay.',
              idPrefix: 'pull',
            })}
            ${field(pullState, {
              name: 'clear_credentials',
              label: 'Remove the stored credentials',
              type: 'checkbox',
              value: false,
              idPrefix: 'pull',
            })}
            <div><button type="submit" class="primary">Save pull mirror</button></div>
          </form>
        </section>`
      : '';
    const body = html`${pullForm}
      <section class="box" aria-labelledby="push-h">
        <h2 id="push-h">Push mirrors</h2>
        <p class="muted">
          Every branch and tag is pushed to each mirror after each push (deleted ones too), retried when it fails.
        </p>
        ${
          rows.length
            ? html`<ul class="plain">
                ${rows.map(
                  (m) =>
                    html`<li>
                      <code>${m.url}</code>
                      <span class="muted"
                        >${m.sync_on_push ? 'after each push' : 'on demand'} · last push
                        ${m.last_sync_at ? when(m.last_sync_at) : 'never'}</span
                      >
                      ${m.last_error ? html`<span class="error">${m.last_error}</span>` : ''}
                      <form class="inline" method="post" action="${base}/${m.uuid}/sync">
                        ${csrfField(c)}<button type="submit">Push now</button>
                      </form>
                      <form class="inline" method="post" action="${base}/${m.uuid}/delete">
                        ${csrfField(c)}<button type="submit">Remove</button>
                      </form>
                    </li>`,
                )}
              </ul>`
            : html`<p class="muted">No push mirrors.</p>`
        }
        <h3>Add a push mirror</h3>
        ${formMessage(state)}
        <form class="stack" method="post" action="${base}">
          ${csrfField(c)}
          ${field(state, { name: 'url', label: 'URL (http, https, ssh or git)', required: true, maxlength: 2000 })}
          ${field(state, { name: 'username', label: 'Username (optional)', maxlength: 255 })}
          ${field(state, {
            name: 'password',
            label: 'Password or token (optional)',
            type: 'password',
            maxlength: 4096,
            hint: 'Stored encrypted; never shown again.',
          })}
          ${field(state, { name: 'sync_on_push', label: 'Push after each push', type: 'checkbox', value: true })}
          <div><button type="submit" class="primary">Add push mirror</button></div>
        </form>
      </section>`;
    return sendPage(reply, repoSettingsPage(c, repo, base, body), (state ?? pullState)?.status ?? 200);
  };

  const back = async (request: FastifyRequest, reply: FastifyReply, c: PageCaller) =>
    seeOther(reply, `${repoHref(await settingsRepo(deps, c, request))}/settings/mirrors`);

  repoRoute(app, 'GET', '/settings/mirrors', {}, async (request, reply) => mirrorsPage(reply, requirePage(request), request));

  repoRoute(app, 'POST', '/settings/mirrors/pull', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as FormFields;
    const interval = text(b, 'interval_seconds').trim();
    const clear = text(b, 'clear_credentials') === 'on';
    const username = text(b, 'username').trim();
    const password = text(b, 'password');
    const input = {
      // a number the service refuses beside the field when it is not a whole number in range
      ...(interval === '' ? {} : { interval_seconds: /^-?\d+$/.test(interval) ? Number(interval) : Number.NaN }),
      ...(clear ? { username: null, password: null } : {}),
      ...(!clear && username ? { username } : {}),
      ...(!clear && password ? { password } : {}),
    };
    const done = await attempt(typedValues(b), PULL_FIELDS, () => updateMirror(deps, c.viewer, pageRepoRef(request), input));
    if (!done.ok) return mirrorsPage(reply, c, request, undefined, done.state);
    return back(request, reply, c);
  });

  repoRoute(app, 'POST', '/settings/mirrors', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as FormFields;
    const input = {
      url: text(b, 'url').trim(),
      username: text(b, 'username').trim() || null,
      password: text(b, 'password') || null,
      sync_on_push: text(b, 'sync_on_push') !== 'off',
    };
    const done = await attempt(typedValues(b), PUSH_FIELDS, () => createPushMirror(deps, c.viewer, pageRepoRef(request), input));
    if (!done.ok) {
      if (done.state.status === 400 && done.state.message) {
        done.state.errors = { url: done.state.message };
        done.state.message = undefined;
      }
      return mirrorsPage(reply, c, request, done.state);
    }
    return back(request, reply, c);
  });

  const one = { params: { mirror_uuid: Uuid }, body: FormBody };
  repoRoute(app, 'POST', '/settings/mirrors/:mirror_uuid/sync', one, async (request, reply) => {
    const c = requirePage(request);
    await syncPushMirror(deps, c.viewer, pageRepoRef(request), (request.params as { mirror_uuid: string }).mirror_uuid);
    return back(request, reply, c);
  });
  repoRoute(app, 'POST', '/settings/mirrors/:mirror_uuid/delete', one, async (request, reply) => {
    const c = requirePage(request);
    await deletePushMirror(deps, c.viewer, pageRepoRef(request), (request.params as { mirror_uuid: string }).mirror_uuid);
    return back(request, reply, c);
  });
}
