/**
 * The subscription controls of the pages (docs/notifications.md "Subscriptions"): Watch on the
 * repo page (watching, participating, ignoring) and Subscribe / Unsubscribe on the thread and pull
 * pages. Plain forms that post and come back to the page without JavaScript; with htmx the form
 * swaps itself for the answer (the control as saved, its status announced).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { badRequest } from '../../errors.ts';
import type { WatchLevel } from '../../notifications/service.ts';
import { putPullSubscription, putRepoWatch, putThreadSubscription } from '../../notifications/subscriptions.ts';
import { readRepo } from '../../access/index.ts';
import { getRepo } from '../../repos/service.ts';
import { requirePage, seeOther, sendPage } from '../context.ts';
import { repoHref } from '../home-pages.ts';
import { type Html, html } from '../html.ts';
import { NumberParam, pageRepoRef, repoRoute } from '../repo-common.ts';
import { FormBody, type FormFields, text } from '../settings-common.ts';

const LEVELS: ReadonlyArray<readonly [WatchLevel, string]> = [
  ['participating', 'Participating'],
  ['watching', 'Watching'],
  ['ignoring', 'Ignoring'],
];

const hx = (action: string, id: string) => html`hx-post="${action}" hx-target="#${id}" hx-swap="outerHTML"`;

/** The Watch control of a repo page (`base` is the repo's page address). */
export function watchControl(base: string, csrf: string, level: WatchLevel, saved = false): Html {
  const action = `${base}/watch`;
  return html`<form id="watch" class="row" method="post" action="${action}" ${hx(action, 'watch')}>
    <input type="hidden" name="_csrf" value="${csrf}" />
    <label for="watch-level">Notifications</label>
    <select id="watch-level" name="level">
      ${LEVELS.map(([v, label]) => html`<option value="${v}" ${v === level ? 'selected' : ''}>${label}</option>`)}
    </select>
    <button type="submit">Watch</button>
    <small class="muted"
      >Participating: what you take part in. Watching: every thread and pull. Ignoring: only direct mentions and review
      requests.</small
    >
    <span class="muted" role="status">${saved ? `Saved: ${level}.` : ''}</span>
  </form>`;
}

/** Subscribe / Unsubscribe on a thread or pull page (`base` is its page address). */
export function subscribeControl(
  base: string,
  csrf: string,
  sub: { subscribed: boolean; explicit: boolean; level: WatchLevel },
  saved = false,
): Html {
  const action = `${base}/subscription`;
  const why = sub.explicit
    ? sub.subscribed
      ? 'You subscribed.'
      : 'You unsubscribed.'
    : sub.subscribed
      ? sub.level === 'watching'
        ? 'You watch this repo.'
        : 'You take part in this.'
      : 'You get only direct mentions and review requests.';
  return html`<form id="subscribe" class="row" method="post" action="${action}" ${hx(action, 'subscribe')}>
    <input type="hidden" name="_csrf" value="${csrf}" />
    <input type="hidden" name="subscribed" value="${sub.subscribed ? 'false' : 'true'}" />
    <button type="submit">${sub.subscribed ? 'Unsubscribe' : 'Subscribe'}</button>
    <span class="muted" role="status">${saved ? (sub.subscribed ? 'Subscribed. ' : 'Unsubscribed. ') : ''}${why}</span>
  </form>`;
}

const isHtmx = (request: FastifyRequest): boolean => request.headers['hx-request'] === 'true';

const onOff = (body: FormFields): boolean => {
  const v = text(body, 'subscribed');
  if (v !== 'true' && v !== 'false') throw badRequest('subscribed must be true or false.');
  return v === 'true';
};

export async function subscriptionPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const pageBase = async (request: FastifyRequest): Promise<string> => {
    const c = requirePage(request);
    return repoHref(await getRepo(deps, c.viewer, await readRepo(deps.database, c.viewer, pageRepoRef(request))));
  };
  const answer = async (request: FastifyRequest, reply: FastifyReply, where: string, fragment: () => Html) =>
    isHtmx(request) ? sendPage(reply, fragment()) : seeOther(reply, where);

  repoRoute(app, 'POST', '/watch', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const value = text(request.body as FormFields, 'level');
    if (!LEVELS.some(([v]) => v === value)) throw badRequest('level must be watching, participating or ignoring.');
    const saved = await putRepoWatch(deps, c.viewer, pageRepoRef(request), value as WatchLevel);
    const base = await pageBase(request);
    return answer(request, reply, base, () => watchControl(base, c.csrf, saved.level, true));
  });

  const Params = { number: NumberParam };
  for (const kind of ['threads', 'pulls'] as const) {
    repoRoute(app, 'POST', `/${kind}/:number/subscription`, { params: Params, body: FormBody }, async (request, reply) => {
      const c = requirePage(request);
      const { number } = request.params as { number: number };
      const on = onOff(request.body as FormFields);
      const put = kind === 'threads' ? putThreadSubscription : putPullSubscription;
      const sub = await put(deps, c.viewer, pageRepoRef(request), number, on);
      const base = `${await pageBase(request)}/${kind}/${number}`;
      return answer(request, reply, base, () => subscribeControl(base, c.csrf, sub, true));
    });
  }
}
