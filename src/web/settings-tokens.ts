import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { getRepo } from '../repos/service.ts';
import { TOKEN_SCOPES } from '../token-scopes.ts';
import { CreateTokenBody } from '../tokens/schemas.ts';
import { type CreatedToken, createToken, listTokens, revokeToken } from '../tokens/service.ts';
import type { RepoRef } from '../viewer.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { EXPIRY_HINT, type FormState, attempt, field, formMessage, typedValues, tzField } from './forms.ts';
import { endOfDayOrAsIs } from '../time.ts';
import { html, pager, when } from './html.ts';
import { csrfField } from './layout.ts';
import { FormBody, type FormFields, checkBody, confirmButton, lines, many, text } from './settings-common.ts';
import { settingsPage } from './settings-user.ts';

const PageQuery = Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) });
const UuidParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });
const SCOPE_HINTS: Record<string, string> = {
  'read:user': 'read your account, pings, timers, keys',
  'write:user': 'change them, and make tokens and invites',
  'read:repo': 'read repos, pulls, threads; git fetch',
  'write:repo': 'change them; git push',
  'read:team': 'read teams and members',
  'write:team': 'change teams and members',
  'read:events': 'events and live streams',
  admin: 'staff routes (does nothing for non-staff)',
};

/**
 * A repo named on the token form: `teams/{t}/{slug}` or `users/{u}/{slug}` (a page address or
 * the clone path, with or without a leading `/`, a `/git` prefix or `.git`).
 */
function repoRefOf(line: string): RepoRef | null {
  const m = /^(?:https?:\/\/[^/]+)?\/?(?:git\/)?(teams|users)\/([^/\s]+)\/([^/\s]+?)(?:\.git)?\/?$/.exec(line.trim());
  if (!m) return null;
  return { ownerKind: m[1] === 'teams' ? 'team' : 'user', ownerName: m[2]!, repoSlug: m[3]! };
}

/** `/settings/tokens`: list, create (the secret shown once, on the answer page), revoke; the API's `/api-tokens`. */
export async function tokenSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const tokensPage = async (reply: FastifyReply, c: PageCaller, page: number, create?: FormState, created?: CreatedToken) => {
    const w = pageWindow({ page });
    const tokens = await listTokens(deps, c.viewer, { ordering: '-created_at', offset: w.offset, limit: w.limit });
    const ticked = create ? many(create.values as FormFields, 'scopes') : [];
    const body = html`${
        created
          ? html`<section class="box" aria-labelledby="created-h">
              <h2 id="created-h">Token "${created.name}" created</h2>
              <p>Copy the secret now: it is shown this once and never again.</p>
              <p><label for="new-token">Secret</label> <input id="new-token" type="text" readonly value="${created.token}" /></p>
            </section>`
          : ''
      }
      <section aria-labelledby="tokens-h">
        <h2 id="tokens-h">API tokens</h2>
        ${
          tokens.length
            ? html`<ul class="plain">
                ${tokens.slice(0, w.perPage).map(
                  (t) =>
                    html`<li>
                      <strong>${t.name}</strong>
                      ${t.revoked_at ? html`<span class="badge">revoked</span>` : ''}
                      <br /><span class="muted"
                        >scopes: ${t.scopes ? t.scopes.join(', ') || 'none' : 'every scope'} · repos:
                        ${t.repos ? `${t.repos.length} only` : 'all'} · created ${when(t.created_at)} · last used
                        ${t.last_used_at ? when(t.last_used_at) : 'never'}${t.expires_at ? html` · expires ${when(t.expires_at)}` : ''}</span
                      >
                      ${
                        t.revoked_at
                          ? ''
                          : confirmButton({
                              action: `/settings/tokens/${t.uuid}/revoke`,
                              csrf: c.csrf,
                              label: 'Revoke',
                              question: `Revoke "${t.name}"? Requests with it will be refused.`,
                            })
                      }
                    </li>`,
                )}
              </ul>`
            : html`<p class="muted">No API tokens yet.</p>`
        }
        ${pager('/settings/tokens', w.page, tokens.length > w.perPage)}
      </section>
      <section aria-labelledby="new-token-h">
        <h2 id="new-token-h">New token</h2>
        ${formMessage(create)}
        <form class="stack" method="post" action="/settings/tokens">
          ${csrfField(c)} ${field(create, { name: 'name', label: 'Name', required: true, maxlength: 100 })}
          ${field(create, { name: 'expires_at', label: 'Expires at (optional)', hint: `${EXPIRY_HINT} Empty: never.` })}
          ${tzField()}
          <fieldset>
            <legend>Scopes</legend>
            <p class="muted" id="scopes-hint">None ticked: every scope. write:X includes read:X.</p>
            ${TOKEN_SCOPES.map(
              (s) =>
                html`<div class="check">
                  <input id="scope-${s}" type="checkbox" name="scopes" value="${s}" ${ticked.includes(s) ? html` checked` : ''} />
                  <label for="scope-${s}">${s}</label> <small class="muted">${SCOPE_HINTS[s] ?? ''}</small>
                </div>`,
            )}
            ${create?.errors.scopes ? html`<p class="field-error" role="alert">${create.errors.scopes}</p>` : ''}
          </fieldset>
          ${field(create, {
            name: 'repos',
            label: 'Only these repos (optional)',
            type: 'textarea',
            hint: 'One per line, as teams/{t}/{slug} or users/{u}/{slug}; empty: every repo you can reach.',
          })}
          <div><button type="submit" class="primary">Create token</button></div>
        </form>
      </section>`;
    return sendPage(reply, settingsPage(c, 'API tokens', '/settings/tokens', body), create?.status ?? 200);
  };

  app.get(
    '/settings/tokens',
    { config: { public: true }, schema: { hide: true, querystring: PageQuery } },
    async (request, reply) => tokensPage(reply, requirePage(request), (request.query as { page?: number }).page ?? 1),
  );

  app.post('/settings/tokens', { config: { public: true }, schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const values: Record<string, string | string[]> = typedValues(body);
    values.scopes = many(body, 'scopes');
    const state = (err: AppError, field?: string): FormState => ({
      values: values as Record<string, string>,
      errors: field ? { [field]: err.detail } : {},
      message: field ? undefined : err.detail,
      code: err.code,
      status: err.status,
    });
    // repos by their addresses, resolved as the caller may read them (404 beside the field otherwise)
    const repos: string[] = [];
    for (const line of lines(text(body, 'repos'))) {
      const ref = repoRefOf(line);
      if (!ref)
        return tokensPage(
          reply,
          c,
          1,
          state(new AppError(400, 'invalid_request', `repos: "${line}" is not teams/{t}/{slug} or users/{u}/{slug}.`), 'repos'),
        );
      try {
        repos.push((await getRepo(deps, c.viewer, ref)).uuid);
      } catch (err) {
        if (err instanceof AppError && err.status === 404) {
          return tokensPage(
            reply,
            c,
            1,
            state(new AppError(404, 'not_found', `repos: no repo ${line} that you can read.`), 'repos'),
          );
        }
        throw err;
      }
    }
    const scopes = many(body, 'scopes');
    const input = {
      name: text(body, 'name'),
      ...(text(body, 'expires_at').trim()
        ? { expires_at: endOfDayOrAsIs(text(body, 'expires_at').trim(), text(body, 'tz')) }
        : {}),
      ...(scopes.length ? { scopes } : {}),
      ...(repos.length ? { repos } : {}),
    };
    const done = await attempt(values as Record<string, string>, ['name', 'expires_at', 'scopes', 'repos'], async () => {
      checkBody(CreateTokenBody, input);
      return createToken(deps, c.viewer, input);
    });
    if (!done.ok) return tokensPage(reply, c, 1, done.state);
    // the answer page shows the secret once (no redirect: it is never shown again)
    return tokensPage(reply, c, 1, undefined, done.value);
  });

  app.post(
    '/settings/tokens/:uuid/revoke',
    { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      await revokeToken(deps, c.viewer, (request.params as { uuid: string }).uuid);
      return seeOther(reply, '/settings/tokens');
    },
  );
}
