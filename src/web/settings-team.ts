import { type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { TEAM_ROLES, type TeamRole, requireTeam } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { addMember, listMembers, removeMember, updateMember } from '../teams/members-service.ts';
import { AddMemberBody, UpdateMemberBody, UpdateTeamBody } from '../teams/schemas.ts';
import { updateTeam } from '../teams/service.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { attempt, field, formMessage, typedValues } from './forms.ts';
import { type Html, html, seg } from './html.ts';
import { csrfField, layout } from './layout.ts';
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
import { createTimerFromForm, deleteTimerFromForm, timersOf, timersSection } from './settings-timers.ts';
import { PageSlug as Slug } from './page-route.ts';

const TeamParams = Type.Object({ team_slug: Slug });
const MemberParams = Type.Object({ team_slug: Slug, username: Slug });
const TimerParams = Type.Object({ team_slug: Slug, timer_uuid: Type.String({ maxLength: 100 }) });
const PageQuery = Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) });
const ROLE_OPTIONS = TEAM_ROLES.map((r) => [r, r] as const);
const MEMBERS_SHOWN = 500;

type P = { team_slug: string; username?: string; timer_uuid?: string };

export function teamSettingsPage(c: PageCaller, team: { slug: string; name: string }, current: string, body: Html): Html {
  const base = `/teams/${seg(team.slug)}/-/settings`;
  return layout(
    { title: `Settings · ${team.name}`, caller: c },
    html`<p class="crumbs"><a href="/teams/${seg(team.slug)}">${team.name}</a> /</p>
      <h1>Team settings</h1>
      ${tabs(
        'Team settings',
        [
          [base, 'General and members'],
          [`${base}/timers`, 'Timers'],
          [`${base}/hooks`, 'Hooks'],
          [`${base}/two-factor`, 'Two-factor'],
          [`${base}/sync`, 'Sync'],
          [`${base}/runners`, 'Runners'],
          [`${base}/secrets`, 'Secrets'],
          [`${base}/variables`, 'Variables'],
        ],
        current,
      )}${body}`,
  );
}

/**
 * `/teams/{t}/settings` (name, members and roles) and `/teams/{t}/settings/timers`: for the
 * team's owners and staff, as the API's team settings (403 to other members, 404 to outsiders).
 */
export async function teamSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const generalPage = async (reply: FastifyReply, c: PageCaller, slug: string, states: States = {}) => {
    // who may change the team's settings may see this page (README "Teams and access")
    const { team } = await requireTeam(deps.db, c.viewer, slug, 'owner');
    const members = await listMembers(deps, c.viewer, team.slug, { offset: 0, limit: MEMBERS_SHOWN });
    const base = `/teams/${seg(team.slug)}/-/settings`;
    const general = stateOf(states, 'general');
    const add = stateOf(states, 'add');
    const body = html`${team.is_active ? '' : html`<p class="error" role="status">The team is inactive: only staff can change it.</p>`}
      <section aria-labelledby="general-h">
        <h2 id="general-h">Name</h2>
        ${formMessage(general)}
        <form class="stack" method="post" action="${base}">
          ${csrfField(c)} ${field(general, { name: 'name', label: 'Name', value: team.name, required: true, maxlength: 100 })}
          ${field(general, { name: 'slug', label: 'Slug (in addresses)', value: team.slug, required: true, maxlength: 100 })}
          <div><button type="submit" class="primary">Save</button></div>
        </form>
      </section>
      <section aria-labelledby="members-h">
        <h2 id="members-h">Members</h2>
        ${formMessage(states.members)}
        <ul class="plain">
          ${members.map((m) => {
            const id = `m-${m.username}`;
            const mine = states[`member:${m.username}`];
            return html`<li>
              <a href="/users/${seg(m.username)}">${m.username}</a>
              ${m.display_name ? html`<span class="muted">${m.display_name}</span>` : ''} ${formMessage(mine)}
              <form class="row" method="post" action="${base}/members/${seg(m.username)}/role">
                ${csrfField(c)}
                ${field(mine, { name: 'role', label: `Role of ${m.username}`, type: 'select', value: m.role, options: ROLE_OPTIONS, idPrefix: id })}
                <button type="submit">Change role</button>
              </form>
              ${confirmButton({
                action: `${base}/members/${seg(m.username)}/remove`,
                csrf: c.csrf,
                label: 'Remove',
                question: `Remove ${m.username} from the team?`,
              })}
            </li>`;
          })}
        </ul>
        ${members.length >= MEMBERS_SHOWN ? html`<p class="muted">The first ${MEMBERS_SHOWN} members are shown.</p>` : ''}
      </section>
      <section aria-labelledby="add-h">
        <h2 id="add-h">Add a member</h2>
        ${formMessage(add)}
        <form class="stack" method="post" action="${base}/members">
          ${csrfField(c)} ${field(add, { name: 'username', label: 'Username', required: true, idPrefix: 'add' })}
          ${field(add, { name: 'role', label: 'Role', type: 'select', value: 'member', options: ROLE_OPTIONS, idPrefix: 'add' })}
          <div><button type="submit" class="primary">Add member</button></div>
        </form>
      </section>`;
    return sendPage(reply, teamSettingsPage(c, team, base, body), statusOf(states));
  };

  const get = { config: { public: true }, schema: { hide: true, params: TeamParams } };
  const post = (params: TSchema = TeamParams) => ({ config: { public: true }, schema: { hide: true, params, body: FormBody } });

  app.get('/teams/:team_slug/-/settings', get, async (request, reply) =>
    generalPage(reply, requirePage(request), (request.params as P).team_slug),
  );

  app.post('/teams/:team_slug/-/settings', post(), async (request, reply) => {
    const c = requirePage(request);
    const slug = (request.params as P).team_slug;
    const body = request.body as FormFields;
    const input = { name: text(body, 'name'), slug: text(body, 'slug') };
    const done = await attempt(typedValues(body), ['name', 'slug'], async () => {
      checkBody(UpdateTeamBody, input);
      return updateTeam(deps, c.viewer, slug, input);
    });
    if (!done.ok) return generalPage(reply, c, slug, { general: done.state });
    return seeOther(reply, `/teams/${seg(done.value.slug)}/-/settings`);
  });

  app.post('/teams/:team_slug/-/settings/members', post(), async (request, reply) => {
    const c = requirePage(request);
    const slug = (request.params as P).team_slug;
    const body = request.body as FormFields;
    const input = { username: text(body, 'username').trim(), role: text(body, 'role') as TeamRole };
    const done = await attempt(typedValues(body), ['username', 'role'], async () => {
      checkBody(AddMemberBody, input);
      return addMember(deps, c.viewer, slug, input);
    });
    if (!done.ok) return generalPage(reply, c, slug, { add: done.state });
    return seeOther(reply, `/teams/${seg(slug)}/-/settings`);
  });

  app.post('/teams/:team_slug/-/settings/members/:username/role', post(MemberParams), async (request, reply) => {
    const c = requirePage(request);
    const { team_slug, username } = request.params as Required<P>;
    const body = request.body as FormFields;
    const input = { role: text(body, 'role') as TeamRole };
    const done = await attempt(typedValues(body), [], async () => {
      checkBody(UpdateMemberBody, input);
      return updateMember(deps, c.viewer, team_slug, username, input);
    });
    if (!done.ok) return generalPage(reply, c, team_slug, { [`member:${username.toLowerCase()}`]: done.state });
    return seeOther(reply, `/teams/${seg(team_slug)}/-/settings`);
  });

  app.post('/teams/:team_slug/-/settings/members/:username/remove', post(MemberParams), async (request, reply) => {
    const c = requirePage(request);
    const { team_slug, username } = request.params as Required<P>;
    const done = await attempt({}, [], () => removeMember(deps, c.viewer, team_slug, username));
    if (!done.ok) return generalPage(reply, c, team_slug, { [`member:${username.toLowerCase()}`]: done.state });
    // leaving the team oneself: its settings are no longer one's own
    if (username.toLowerCase() === c.viewer.username) return seeOther(reply, '/');
    return seeOther(reply, `/teams/${seg(team_slug)}/-/settings`);
  });

  // ------------------------------------------------------------------ timers

  const timersPage = async (
    reply: FastifyReply,
    c: PageCaller,
    slug: string,
    page: number,
    state?: ReturnType<typeof stateOf>,
  ) => {
    const ref = { kind: 'team', teamSlug: slug } as const;
    const list = await timersOf(deps, c, ref, page);
    const { team } = await requireTeam(deps.db, c.viewer, slug, 'owner');
    const base = `/teams/${seg(team.slug)}/-/settings/timers`;
    const body = timersSection(c, base, list, state, team.is_active !== 1 && !c.viewer.isStaff);
    return sendPage(reply, teamSettingsPage(c, team, base, body), state?.status ?? 200);
  };

  app.get(
    '/teams/:team_slug/-/settings/timers',
    { config: { public: true }, schema: { hide: true, params: TeamParams, querystring: PageQuery } },
    async (request, reply) =>
      timersPage(reply, requirePage(request), (request.params as P).team_slug, (request.query as { page?: number }).page ?? 1),
  );

  app.post('/teams/:team_slug/-/settings/timers', post(), async (request, reply) => {
    const c = requirePage(request);
    const slug = (request.params as P).team_slug;
    const done = await createTimerFromForm(deps, c, { kind: 'team', teamSlug: slug }, request.body as FormFields);
    if (!done.ok) return timersPage(reply, c, slug, 1, done.state);
    return seeOther(reply, `/teams/${seg(slug)}/-/settings/timers`);
  });

  app.post('/teams/:team_slug/-/settings/timers/:timer_uuid/delete', post(TimerParams), async (request, reply) => {
    const c = requirePage(request);
    const { team_slug, timer_uuid } = request.params as Required<P>;
    await deleteTimerFromForm(deps, c, { kind: 'team', teamSlug: team_slug }, timer_uuid);
    return seeOther(reply, `/teams/${seg(team_slug)}/-/settings/timers`);
  });
}
