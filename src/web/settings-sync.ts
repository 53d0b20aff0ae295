import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { TEAM_ROLES, type TeamRole } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { enabledSources } from '../signin/sources.ts';
import { createSyncRule, deleteSyncRule, listSyncRules } from '../signin/sync.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { attempt, field, formMessage } from './forms.ts';
import { type Html, html, seg } from './html.ts';
import { csrfField } from './layout.ts';
import { PageSlug } from './page-route.ts';
import { FormBody, type FormFields, type States, stateOf, statusOf, text } from './settings-common.ts';
import { teamSettingsPage } from './settings-team.ts';

/**
 * Team settings, Sync (docs/signin.md "Group sync"): the team's group sync rules, listed, added
 * and deleted with plain forms, for the team's owners (as the API's sync-rules routes).
 */
const TeamParams = Type.Object({ team_slug: PageSlug });
const RuleParams = Type.Object({ team_slug: PageSlug, rule_uuid: Type.String({ maxLength: 100 }) });
const ROLE_OPTIONS = TEAM_ROLES.map((r) => [r, r] as const);

export async function teamSyncPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const page = async (reply: FastifyReply, c: PageCaller, slug: string, states: States = {}) => {
    const rules = await listSyncRules(deps, c.viewer, slug);
    const sources = await enabledSources(deps);
    const base = `/teams/${seg(slug)}/-/settings/sync`;
    const add = stateOf(states, 'add');
    const list: Html = rules.length
      ? html`<ul class="plain" id="sync-rules" aria-label="Rules">
          ${rules.map(
            (r) =>
              html`<li id="rule-${r.uuid}">
                <strong>${r.source}</strong> group <code>${r.group}</code> gives the role <strong>${r.role}</strong>
                <form method="post" action="${base}/${r.uuid}/delete" class="row">
                  ${csrfField(c)}
                  <button type="submit" class="danger" aria-label="Delete the rule for ${r.group} (${r.role})">Delete</button>
                </form>
              </li>`,
          )}
        </ul>`
      : html`<p id="sync-none" class="muted">No rule: membership is managed by hand only.</p>`;
    const form = sources.length
      ? html`${formMessage(add)}
          <form class="stack" method="post" action="${base}" aria-labelledby="add-rule-h">
            ${csrfField(c)}
            ${field(add, {
              name: 'source',
              label: 'Sign-in source',
              type: 'select',
              value: sources[0]!.row.name,
              options: sources.map((s) => [s.row.name, s.row.display_name] as const),
              idPrefix: 'rule',
            })}
            ${field(add, { name: 'group', label: 'Group', required: true, maxlength: 500, idPrefix: 'rule' })}
            ${field(add, { name: 'role', label: 'Role', type: 'select', value: 'member', options: ROLE_OPTIONS, idPrefix: 'rule' })}
            <div><button type="submit" class="primary">Add the rule</button></div>
          </form>`
      : html`<p class="muted">There is no sign-in source yet: staff add them under Staff, Sign-in sources.</p>`;
    const body = html`<section aria-labelledby="sync-h">
        <h2 id="sync-h">Group sync</h2>
        <p>
          At each sign-in through a source, its members of a group join this team with the rule's role (the highest when several
          match). Memberships added by hand are never changed, and the last owner is kept.
        </p>
        ${formMessage(stateOf(states, 'delete'))} ${list}
      </section>
      <section aria-labelledby="add-rule-h">
        <h2 id="add-rule-h">Add a rule</h2>
        ${form}
      </section>`;
    return sendPage(reply, teamSettingsPage(c, { slug, name: slug }, base, body), statusOf(states));
  };
  const hide = { config: { public: true }, schema: { hide: true, params: TeamParams } };

  app.get('/teams/:team_slug/-/settings/sync', hide, async (request, reply) =>
    page(reply, requirePage(request), (request.params as { team_slug: string }).team_slug),
  );

  app.post(
    '/teams/:team_slug/-/settings/sync',
    { config: { public: true }, schema: { hide: true, params: TeamParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const slug = (request.params as { team_slug: string }).team_slug;
      const b = request.body as FormFields;
      const values = { source: text(b, 'source'), group: text(b, 'group'), role: text(b, 'role') };
      const role = (TEAM_ROLES as readonly string[]).includes(values.role) ? (values.role as TeamRole) : 'member';
      const done = await attempt(values, ['source', 'group', 'role'], () =>
        createSyncRule(deps, c.viewer, slug, { source: values.source, group: values.group, role }),
      );
      if (!done.ok) return page(reply, c, slug, { add: done.state });
      return seeOther(reply, `/teams/${seg(slug)}/-/settings/sync`);
    },
  );

  app.post(
    '/teams/:team_slug/-/settings/sync/:rule_uuid/delete',
    { config: { public: true }, schema: { hide: true, params: RuleParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const { team_slug: slug, rule_uuid: uuid } = request.params as { team_slug: string; rule_uuid: string };
      const done = await attempt({}, [], () => deleteSyncRule(deps, c.viewer, slug, uuid));
      if (!done.ok) return page(reply, c, slug, { delete: done.state });
      return seeOther(reply, `/teams/${seg(slug)}/-/settings/sync`);
    },
  );
}
