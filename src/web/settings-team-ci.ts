/**
 * A team's CI settings (docs/ci.md "Pages"): its runners, secrets and variables, for the jobs of
 * every repo of the team, for the team's maintain level (maintainer role, owner, staff) as the API: 404 to
 * whoever is not in the team, 403 to a member below maintainer. The same sections as a repo's
 * (src/web/settings-ci.ts `namedSection`) over the team's services (src/ci/secrets.ts), so the
 * checks and their wording are the API's; a secret's value is never sent back.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { requireTeam } from '../access/index.ts';
import { createTeamRegistrationToken } from '../ci/protocol.ts';
import { listTeamRunners, removeTeamRunner } from '../ci/runners.ts';
import { deleteIn, listIn, type NamedKind, putIn, type ScopeRef } from '../ci/secrets.ts';
import type { Deps } from '../deps.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, typedValues } from './forms.ts';
import { seg } from './html.ts';
import { PageSlug as Slug } from './page-route.ts';
import { namedSection, runnersSection } from './settings-ci.ts';
import { FormBody, type FormFields, text } from './settings-common.ts';
import { teamSettingsPage } from './settings-team.ts';

const TeamParams = Type.Object({ team_slug: Slug });
const RunnerParams = Type.Object({ team_slug: Slug, runner_uuid: Type.String({ maxLength: 100 }) });
const PLURAL: Record<NamedKind, string> = { secret: 'secrets', variable: 'variables' };
const INTRO: Record<NamedKind, string> = {
  secret:
    "The jobs of every repo of the team read a secret as secrets.NAME (a repo's own of the same name wins); its value is " +
    'masked as *** in logs and never shown again, here or in the API. Runs of pulls from forks get no secrets.',
  variable:
    "The jobs of every repo of the team read a variable as vars.NAME (a repo's own of the same name wins); unlike a " +
    'secret, its value is readable by any member of the team.',
};

export async function teamCiSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const get = { config: { public: true }, schema: { hide: true, params: TeamParams } };
  const post = { config: { public: true }, schema: { hide: true, params: TeamParams, body: FormBody } };
  const slugOf = (params: unknown) => (params as { team_slug: string }).team_slug;
  const at = (teamSlug: string): ScopeRef => ({ kind: 'team', teamSlug });

  // ------------------------------------------------------------------ runners

  const runnersPage = async (
    reply: FastifyReply,
    c: PageCaller,
    slug: string,
    o: { token?: { token: string; expires_at: string }; state?: FormState } = {},
  ) => {
    const { team, role } = await requireTeam(deps.db, c.viewer, slug, 'maintainer');
    const runners = await listTeamRunners(deps, c.viewer, team.slug);
    const base = `/teams/${seg(team.slug)}/-/settings/runners`;
    const ro = team.is_active !== 1;
    const mayAdd = c.viewer.isStaff || role === 'owner';
    const body = runnersSection(deps, c, runners, base, ro, o, 'the jobs of every repo of the team', mayAdd);
    return sendPage(reply, teamSettingsPage(c, team, base, body), o.state?.status ?? (o.token ? 201 : 200));
  };

  app.get('/teams/:team_slug/-/settings/runners', get, async (request, reply) =>
    runnersPage(reply, requirePage(request), slugOf(request.params)),
  );

  app.post('/teams/:team_slug/-/settings/runners/token', post, async (request, reply) => {
    const c = requirePage(request);
    const slug = slugOf(request.params);
    const done = await attempt({}, [], () => createTeamRegistrationToken(deps, c.viewer, slug));
    // the answer page is the only place the token is shown: no redirect
    return runnersPage(reply, c, slug, done.ok ? { token: done.value } : { state: done.state });
  });

  app.post(
    '/teams/:team_slug/-/settings/runners/:runner_uuid/remove',
    { config: { public: true }, schema: { hide: true, params: RunnerParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const { team_slug, runner_uuid } = request.params as { team_slug: string; runner_uuid: string };
      const done = await attempt({}, [], () => removeTeamRunner(deps, c.viewer, team_slug, runner_uuid));
      if (!done.ok) return runnersPage(reply, c, team_slug, { state: done.state });
      return seeOther(reply, `/teams/${seg(team_slug)}/-/settings/runners`);
    },
  );

  // ------------------------------------------------------------------ secrets and variables

  for (const kind of ['secret', 'variable'] as const) {
    const path = `/teams/:team_slug/-/settings/${PLURAL[kind]}`;
    const page = async (
      reply: FastifyReply,
      c: PageCaller,
      slug: string,
      states: { set?: FormState; remove?: FormState } = {},
    ) => {
      // the settings pages are the team's maintain level, also for variables (any member reads those through the API)
      const { team } = await requireTeam(deps.db, c.viewer, slug, 'maintainer');
      const items = await listIn(deps, c.viewer, at(team.slug), kind);
      const base = `/teams/${seg(team.slug)}/-/settings/${PLURAL[kind]}`;
      const ro = team.is_active !== 1 && !c.viewer.isStaff;
      const body = namedSection(c, kind, items, base, ro, states, INTRO[kind]);
      return sendPage(reply, teamSettingsPage(c, team, base, body), states.set?.status ?? states.remove?.status ?? 200);
    };

    app.get(path, get, async (request, reply) => page(reply, requirePage(request), slugOf(request.params)));

    app.post(path, post, async (request, reply) => {
      const c = requirePage(request);
      const slug = slugOf(request.params);
      const body = request.body as FormFields;
      const name = text(body, 'name').trim();
      // a secret's value is never sent back, also not to the form that was refused
      const values = typedValues(body, kind === 'secret' ? ['value'] : []);
      const done = await attempt(values, ['name', 'value'], () =>
        putIn(deps, c.viewer, at(slug), kind, name, text(body, 'value')),
      );
      if (!done.ok) return page(reply, c, slug, { set: done.state });
      return seeOther(reply, `/teams/${seg(slug)}/-/settings/${PLURAL[kind]}`);
    });

    app.post(`${path}/delete`, post, async (request, reply) => {
      const c = requirePage(request);
      const slug = slugOf(request.params);
      const name = text(request.body as FormFields, 'name');
      const done = await attempt({}, [], () => deleteIn(deps, c.viewer, at(slug), kind, name));
      if (!done.ok) return page(reply, c, slug, { remove: done.state });
      return seeOther(reply, `/teams/${seg(slug)}/-/settings/${PLURAL[kind]}`);
    });
  }
}
