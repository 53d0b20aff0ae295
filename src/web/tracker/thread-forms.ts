/**
 * The side bar's forms on a thread page (docs/tracker.md "Pages"): each posts one change through
 * PATCH {repo}/threads/{n}'s service (`updateThread`), which decides access as the API does. A
 * refused form answers the thread page again with the error beside its field and what was typed.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.ts';
import { STATE_REASONS, type UpdateThreadInput } from '../../threads/schemas.ts';
import { updateThread } from '../../threads/service.ts';
import { requirePage, seeOther, sendPage } from '../context.ts';
import { attempt, typedValues } from '../forms.ts';
import { repoHref } from '../home-pages.ts';
import { NumberParam, pageRepo, pageRepoRef, repoRoute } from '../repo-common.ts';
import { renderThreadPage } from '../thread-pages.ts';
import { Many, many, usernames } from './issues.ts';

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const Params = { number: NumberParam };
const form = (fields: Parameters<typeof Type.Object>[0]) =>
  Type.Object({ _csrf: Csrf, ...fields }, { additionalProperties: false });

/** Each side bar form: its path, its body, and the PATCH it makes. */
const FORMS: Array<{ path: string; body: ReturnType<typeof form>; patch: (b: Record<string, unknown>) => UpdateThreadInput }> = [
  { path: 'labels', body: form({ labels: Many }), patch: (b) => ({ labels: many(b.labels as string[]).filter(Boolean) }) },
  {
    path: 'assignees',
    body: form({ assignees: Type.String({ maxLength: 1000 }) }),
    patch: (b) => ({ assignees: usernames(b.assignees as string) }),
  },
  {
    path: 'milestone',
    body: form({ milestone: Type.Union([Type.Literal(''), Type.String({ pattern: '^[1-9][0-9]{0,9}$' })]) }),
    patch: (b) => ({ milestone: b.milestone ? Number(b.milestone) : null }),
  },
  {
    path: 'state',
    body: form({
      state: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
      state_reason: Type.Optional(Type.Union(STATE_REASONS.map((r) => Type.Literal(r)))),
    }),
    patch: (b) =>
      b.state === 'closed'
        ? { state: 'closed', state_reason: (b.state_reason as UpdateThreadInput['state_reason']) ?? 'completed' }
        : { state: 'open' },
  },
  {
    path: 'lock',
    body: form({ locked: Type.Union([Type.Literal('true'), Type.Literal('false')]) }),
    patch: (b) => ({ locked: b.locked === 'true' }),
  },
];

export async function threadFormPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  for (const f of FORMS) {
    repoRoute(app, 'POST', `/threads/:number/${f.path}`, { params: Params, body: f.body }, async (request, reply) => {
      const c = requirePage(request);
      const ref = pageRepoRef(request);
      const { number } = request.params as { number: number };
      const body = request.body as Record<string, unknown>;
      const result = await attempt(typedValues(body), ['labels', 'assignees', 'milestone', 'state', 'locked'], () =>
        updateThread(deps, c.viewer, ref, number, f.patch(body)),
      );
      const page = await pageRepo(deps, c.viewer, request);
      if (!result.ok)
        return sendPage(reply, await renderThreadPage(deps, c, page, number, undefined, result.state), result.state.status);
      return seeOther(reply, `${repoHref(page.repo)}/threads/${number}`);
    });
  }
}
