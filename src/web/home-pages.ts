import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { teamActivity, userActivity } from '../activity/service.ts';
import type { Deps } from '../deps.ts';
import { listRepos } from '../repos/service.ts';
import type { RepoJson } from '../repos/view.ts';
import { listMembers } from '../teams/members-service.ts';
import { getTeam, listTeams } from '../teams/service.ts';
import { getUser } from '../users/service.ts';
import { pageWindow, requirePage, sendPage } from './context.ts';
import { html, pager, seg, when } from './html.ts';
import { layout } from './layout.ts';
import { liveFeed, resumePoint } from './live.ts';
import { loginPageFor } from './auth-pages.ts';
import { PageSlug as Slug } from './page-route.ts';

const PageQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);

/** A repo's page address: `/teams/{t}/{slug}` or `/users/{u}/{slug}`. */
export const repoHref = (repo: RepoJson): string =>
  `/${repo.owner.kind === 'team' ? 'teams' : 'users'}/${seg(repo.owner.slug_or_username)}/${seg(repo.slug)}`;

export const repoItem = (repo: RepoJson) =>
  html`<li>
    <a href="${repoHref(repo)}">${repo.full_name}</a> <span class="badge">${repo.visibility}</span>${
      repo.description ? html` <span class="muted">${repo.description}</span>` : ''
    }
  </li>`;

/**
 * How many repos of the dashboard are followed live, beside the user's own scope and the user's
 * own actions anywhere (`actor:UUID`), all in one stream.
 */
const LIVE_REPOS = 4;

/** The dashboard, the team page and the user page (README "Web interface"). */
export async function homePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get('/', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    // Not signed in: the sign-in page itself.
    if (!request.page) return loginPageFor(reply, deps, '/');
    const c = request.page;
    const after = await resumePoint(deps);
    const teams = await listTeams(deps, c.viewer, { offset: 0, limit: 31 });
    const mine = await listRepos(deps, c.viewer, 'user', c.viewer.username, { offset: 0, limit: 31 });
    const teamRepos: RepoJson[] = [];
    for (const team of teams.slice(0, 10)) {
      teamRepos.push(...(await listRepos(deps, c.viewer, 'team', team.slug, { offset: 0, limit: 10 })));
    }
    const repos = [...mine.slice(0, 30), ...teamRepos];
    const activity = (await userActivity(deps, c.viewer, c.viewer.username, { offset: 0, limit: 20 })).events;
    const followed = [...repos].sort((a, b) => b.updated_at.localeCompare(a.updated_at)).slice(0, LIVE_REPOS);
    const body = html`<h1>Dashboard</h1>
      <div class="grid">
        <div>
          <section class="box" aria-labelledby="teams-h">
            <h2 id="teams-h">My teams</h2>
            ${
              teams.length
                ? html`<ul class="plain">
                    ${teams.slice(0, 30).map((t) => html`<li><a href="/teams/${seg(t.slug)}">${t.name}</a> <span class="muted">${t.slug}</span></li>`)}
                  </ul>`
                : html`<p class="muted">No teams yet.</p>`
            }
          </section>
          <section class="box" aria-labelledby="repos-h">
            <h2 id="repos-h">My repos</h2>
            ${
              repos.length
                ? html`<ul class="plain">
                    ${repos.map(repoItem)}
                  </ul>`
                : html`<p class="muted">No repos yet.</p>`
            }
            ${mine.length > 30 ? html`<p><a href="/users/${seg(c.viewer.username)}">All my repos</a></p>` : ''}
          </section>
        </div>
        ${liveFeed({
          id: 'dashboard-feed',
          label: 'Live activity',
          scopes: [`user:${c.viewer.uuid}`, `actor:${c.viewer.uuid}`, ...followed.map((repo) => `repo:${repo.uuid}`)],
          after,
          events: activity,
        })}
      </div>`;
    return sendPage(reply, layout({ title: 'Dashboard', caller: c }, body));
  });

  r.get(
    '/teams/:team_slug',
    { config: { public: true }, schema: { hide: true, params: Type.Object({ team_slug: Slug }), querystring: PageQuery } },
    async (request, reply) => {
      const c = requirePage(request);
      const team = await getTeam(deps, c.viewer, request.params.team_slug);
      const w = pageWindow(request.query);
      const after = await resumePoint(deps);
      const repos = await listRepos(deps, c.viewer, 'team', team.slug, w);
      const members = await listMembers(deps, c.viewer, team.slug, { offset: 0, limit: 101 });
      const activity = (await teamActivity(deps, c.viewer, team.slug, { offset: 0, limit: 20 })).events;
      const body = html`<p class="crumbs">Team</p>
        <h1>${team.name}</h1>
        <p><a href="/teams/${seg(team.slug)}/-/settings">Team settings</a></p>
        <div class="grid">
          <div>
            <section class="box" aria-labelledby="repos-h">
              <h2 id="repos-h">Repos</h2>
              ${
                repos.length
                  ? html`<ul class="plain">
                      ${repos.slice(0, w.perPage).map(repoItem)}
                    </ul>`
                  : html`<p class="muted">No repos yet.</p>`
              }
              ${pager(`/teams/${seg(team.slug)}`, w.page, repos.length > w.perPage)}
            </section>
            <section class="box" aria-labelledby="members-h">
              <h2 id="members-h">Members</h2>
              <ul class="plain">
                ${members.slice(0, 100).map((m) => html`<li><a href="/users/${seg(m.username)}">${m.username}</a> <span class="badge">${m.role}</span></li>`)}
              </ul>
              ${members.length > 100 ? html`<p class="muted">The first 100 members are shown.</p>` : ''}
            </section>
          </div>
          ${liveFeed({ id: 'team-feed', label: 'Activity', scopes: [`team:${team.uuid}`], after, events: activity })}
        </div>`;
      return sendPage(reply, layout({ title: team.name, caller: c }, body));
    },
  );

  r.get(
    '/users/:username',
    { config: { public: true }, schema: { hide: true, params: Type.Object({ username: Slug }), querystring: PageQuery } },
    async (request, reply) => {
      const c = requirePage(request);
      const user = await getUser(deps, c.viewer, request.params.username);
      const w = pageWindow(request.query);
      const repos = await listRepos(deps, c.viewer, 'user', user.username, w);
      const activity = (await userActivity(deps, c.viewer, user.username, { offset: 0, limit: 20 })).events;
      const body = html`<p class="crumbs">User</p>
        <h1>${user.display_name || user.username} <span class="muted">${user.username}</span></h1>
        <p class="muted">Joined ${when(user.created_at)}</p>
        <div class="grid">
          <section class="box" aria-labelledby="repos-h">
            <h2 id="repos-h">Repos</h2>
            ${
              repos.length
                ? html`<ul class="plain">
                    ${repos.slice(0, w.perPage).map(repoItem)}
                  </ul>`
                : html`<p class="muted">No repos to show.</p>`
            }
            ${pager(`/users/${seg(user.username)}`, w.page, repos.length > w.perPage)}
          </section>
          <section class="box" aria-labelledby="act-h">
            <h2 id="act-h">Recent activity</h2>
            ${
              activity.length
                ? html`<ul class="plain">
                    ${activity.map((e) => html`<li><strong>${e.kind}</strong> ${when(e.created_at)}</li>`)}
                  </ul>`
                : html`<p class="muted">Nothing to show.</p>`
            }
          </section>
        </div>`;
      return sendPage(reply, layout({ title: user.username, caller: c }, body));
    },
  );
}
