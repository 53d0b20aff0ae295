/**
 * The pull page's review requests and draft switch (docs/tracker.md "Pages"): small forms that post
 * without JavaScript (htmx swaps the section in place), shown only when the pull's abilities
 * (src/access/abilities.ts `pullAbilities`) say the viewer may make the change, and made through
 * the services of POST/DELETE {repo}/pulls/{n}/requested-reviewers and PUT {repo}/pulls/{n}
 * (`draft`). A refused form answers the pull page again with the error beside its field.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PullAbilities } from '../../access/abilities.ts';
import type { Deps } from '../../deps.ts';
import { AppError } from '../../errors.ts';
import { pullEventShape, updatePull } from '../../pulls/service.ts';
import { changeReviewRequests, type PullTracking } from '../../tracker/pulls.ts';
import { type PageCaller, requirePage, seeOther } from '../context.ts';
import { type Html, html, seg } from '../html.ts';
import { csrfField } from '../layout.ts';
import { inWords } from '../words.ts';
import { NumberParam, pageRepoRef, repoRoute } from '../repo-common.ts';
import { usernames } from './issues.ts';

/** A refused side form: which one, the error, what was typed. */
export interface PullSideRefusal {
  form: 'reviewers' | 'draft';
  err: AppError;
  typed?: string;
}

// a refusal (4xx: the page again with the error beside the form) is swapped in too (`data-refusals`, web/assets.ts)
const swap = html`hx-target="#pull-side" hx-select="#pull-side" hx-swap="outerHTML" data-refusals="inline"`;

/** The section: requested reviewers (request, withdraw) and the draft state (ready for review, back to draft). */
export function pullSide(o: {
  c: PageCaller;
  base: string;
  pull: PullTracking & { author_username: string };
  can: PullAbilities;
  refused?: PullSideRefusal;
}): Html {
  const { c, base, pull, can, refused } = o;
  const error = (form: PullSideRefusal['form']) =>
    refused?.form === form
      ? html`<p id="side-${form}-error" class="field-error" role="alert">${inWords(refused.err.detail)}</p>`
      : html``;
  const form = (path: string, label: string, inner: Html) =>
    html`<form method="post" action="${base}/${path}" hx-post="${base}/${path}" ${swap} class="row" aria-label="${label}">
      ${csrfField(c)} ${inner}
    </form>`;
  const bad = refused?.form === 'reviewers';
  return html`<section id="pull-side" class="box" aria-labelledby="pull-side-h">
    <h2 id="pull-side-h">Reviewers and draft</h2>
    <h3 id="side-reviewers">Requested reviewers</h3>
    ${
      pull.requested_reviewers.length
        ? html`<ul class="plain" aria-labelledby="side-reviewers">
            ${pull.requested_reviewers.map(
              (u) =>
                html`<li class="row">
                  <a href="/users/${seg(u.username)}">${u.username}</a>
                  ${
                    can.requestReviews
                      ? form(
                          'requested-reviewers/remove',
                          `Withdraw the request to ${u.username}`,
                          html`<input type="hidden" name="username" value="${u.username}" />
                            <button type="submit">Withdraw request to ${u.username}</button>`,
                        )
                      : ''
                  }
                </li>`,
            )}
          </ul>`
        : html`<p class="muted">No one</p>`
    }
    ${
      can.requestReviews
        ? form(
            'requested-reviewers',
            'Request reviews',
            html`<label for="side-reviewers-input">Request reviews from (usernames, comma-separated)</label>
              <input
                id="side-reviewers-input"
                name="usernames"
                type="text"
                maxlength="1000"
                required
                value="${bad ? (refused?.typed ?? '') : ''}"
                ${bad ? html` aria-invalid="true" aria-describedby="side-reviewers-error"` : ''}
              />
              <button type="submit">Request review</button>`,
          )
        : ''
    }
    ${error('reviewers')}
    <h3>Draft</h3>
    <p id="pull-draft">${pull.draft ? html`<span class="badge">Draft</span> not ready to merge` : html`Ready for review`}</p>
    ${
      can.setDraft
        ? form(
            'draft',
            pull.draft ? 'Ready for review' : 'Convert to draft',
            html`<input type="hidden" name="draft" value="${pull.draft ? 'false' : 'true'}" />
              <button type="submit">${pull.draft ? 'Ready for review' : 'Convert to draft'}</button>`,
          )
        : ''
    }
    ${error('draft')}
  </section>`;
}

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const Params = { number: NumberParam };

/**
 * The section's routes; `rerender` answers the pull page again after a refusal a person can act
 * on (4xx other than 401 and 404), the error beside its form.
 */
export function pullSideRoutes(
  app: FastifyInstance,
  deps: Deps,
  rerender: (request: FastifyRequest, reply: FastifyReply, refused: PullSideRefusal) => Promise<FastifyReply>,
  pullHref: (request: FastifyRequest, number: number) => Promise<string>,
): void {
  const actionable = (err: unknown): err is AppError =>
    err instanceof AppError && err.status >= 400 && err.status < 500 && err.status !== 404 && err.status !== 401;
  const route = (
    path: string,
    body: Record<string, ReturnType<typeof Type.String> | ReturnType<typeof Type.Union>>,
    form: PullSideRefusal['form'],
    act: (request: FastifyRequest, number: number, values: Record<string, string>) => Promise<unknown>,
  ) =>
    repoRoute(
      app,
      'POST',
      `/pulls/:number/${path}`,
      { params: Params, body: Type.Object({ _csrf: Csrf, ...body }, { additionalProperties: false }) },
      async (request, reply) => {
        const number = (request.params as { number: number }).number;
        const values = request.body as Record<string, string>;
        try {
          await act(request, number, values);
        } catch (err) {
          if (!actionable(err)) throw err;
          return rerender(request, reply, { form, err, typed: values.usernames });
        }
        return seeOther(reply, await pullHref(request, number));
      },
    );
  const people = (mode: 'add' | 'remove', names: string[]) => (request: FastifyRequest, number: number) =>
    changeReviewRequests(deps, requirePage(request).viewer, pageRepoRef(request), number, mode, names, pullEventShape);
  route('requested-reviewers', { usernames: Type.String({ minLength: 1, maxLength: 1000 }) }, 'reviewers', (r, n, v) =>
    people('add', usernames(v.usernames!))(r, n),
  );
  route('requested-reviewers/remove', { username: Type.String({ minLength: 1, maxLength: 200 }) }, 'reviewers', (r, n, v) =>
    people('remove', [v.username!])(r, n),
  );
  route('draft', { draft: Type.Union([Type.Literal('true'), Type.Literal('false')]) }, 'draft', (r, n, v) =>
    updatePull(deps, requirePage(r).viewer, pageRepoRef(r), n, { draft: v.draft === 'true' }),
  );
}
