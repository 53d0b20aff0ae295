/**
 * The staff page of site runners (docs/ci.md "Runners"): runners that take the jobs of every repo,
 * listed with their state, registered with a single-use token and removed, through the API's own
 * services (src/ci/runners.ts, protocol.ts): staff only, 403 to others, as the /admin API routes.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { createSiteRegistrationToken } from '../ci/protocol.ts';
import { assertSiteRunnersStaff, listSiteRunners, removeSiteRunner } from '../ci/runners.ts';
import type { Deps } from '../deps.ts';
import { adminPage } from './admin-common.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt } from './forms.ts';
import { runnersSection } from './settings-ci.ts';
import { FormBody } from './settings-common.ts';

const RunnerParams = Type.Object({ runner_uuid: Type.String({ maxLength: 100 }) });
const BASE = '/admin/runners';

export async function adminRunnerPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const page = async (
    reply: FastifyReply,
    c: PageCaller,
    o: { token?: { token: string; expires_at: string }; state?: FormState } = {},
  ) => {
    assertSiteRunnersStaff(c.viewer);
    const runners = await listSiteRunners(deps, c.viewer);
    const body = runnersSection(deps, c, runners, BASE, false, o, 'the jobs of every repo of the site');
    return sendPage(reply, adminPage(c, 'runners', 'Site runners', body), o.state?.status ?? (o.token ? 201 : 200));
  };

  app.get(BASE, { config: { public: true }, schema: { hide: true } }, async (request, reply) =>
    page(reply, requirePage(request)),
  );

  app.post(`${BASE}/token`, { config: { public: true }, schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, [], () => createSiteRegistrationToken(deps, c.viewer));
    // the answer page is the only place the token is shown: no redirect
    return page(reply, c, done.ok ? { token: done.value } : { state: done.state });
  });

  app.post(
    `${BASE}/:runner_uuid/remove`,
    { config: { public: true }, schema: { hide: true, params: RunnerParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const done = await attempt({}, [], () =>
        removeSiteRunner(deps, c.viewer, (request.params as { runner_uuid: string }).runner_uuid),
      );
      if (!done.ok) return page(reply, c, { state: done.state });
      return seeOther(reply, BASE);
    },
  );
}
