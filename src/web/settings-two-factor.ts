import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import {
  type RequirementJson,
  getSiteRequirement,
  getTeamRequirement,
  setSiteRequirement,
  setTeamRequirement,
} from '../signin/requirement.ts';
import { adminPage } from './admin-common.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, formMessage } from './forms.ts';
import { type Html, html, seg } from './html.ts';
import { csrfField } from './layout.ts';
import { FormBody, type FormFields, text } from './settings-common.ts';
import { teamSettingsPage } from './settings-team.ts';
import { PageSlug } from './page-route.ts';

/**
 * Requiring a second factor (docs/signin.md "Requiring it"): a team's (Team settings, Two-factor)
 * and the site's (Staff, Two-factor). The page lists who is refused while it is on, before the
 * button that turns it on.
 */
const TeamParams = Type.Object({ team_slug: PageSlug });

function requirementSection(c: PageCaller, action: string, who: string, req: RequirementJson, state?: FormState): Html {
  const list = req.affected.length
    ? html`<p>${req.enabled ? 'Refused now' : 'Would be refused'} until they set up a second factor (${req.affected_count}):</p>
        <ul class="plain" id="affected" aria-label="Affected">
          ${req.affected.map(
            (a) =>
              html`<li>
                <a href="/users/${seg(a.username)}">${a.username}</a>
                ${a.display_name ? html`<span class="muted">${a.display_name}</span>` : ''}
                ${a.role ? html`<span class="muted">(${a.role})</span>` : ''}
              </li>`,
          )}
        </ul>`
    : html`<p id="affected-none">Every ${who} has a second factor: nobody would be refused.</p>`;
  return html`<section aria-labelledby="require-h">
    <h2 id="require-h">Require a second factor</h2>
    <p id="require-state">
      The requirement is <strong>${req.enabled ? 'on' : 'off'}</strong>. While it is on, a ${who} without a second factor is
      refused on the web pages, the API and git over HTTP and SSH, and is asked to set one up in Settings, Security.
    </p>
    ${list} ${formMessage(state)}
    <form method="post" action="${action}">
      ${csrfField(c)}<input type="hidden" name="enabled" value="${req.enabled ? 'off' : 'on'}" />
      <button type="submit" class="${req.enabled ? '' : 'primary'}">
        ${req.enabled ? 'Stop requiring a second factor' : 'Require a second factor'}
      </button>
    </form>
  </section>`;
}

export async function twoFactorRequirementPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const teamPage = async (reply: FastifyReply, c: PageCaller, slug: string, state?: FormState) => {
    const req = await getTeamRequirement(deps, c.viewer, slug);
    const base = `/teams/${seg(slug)}/-/settings/two-factor`;
    const body = requirementSection(c, base, 'member', req, state);
    return sendPage(reply, teamSettingsPage(c, { slug, name: slug }, base, body), state?.status ?? 200);
  };
  const sitePage = async (reply: FastifyReply, c: PageCaller, state?: FormState) => {
    const req = await getSiteRequirement(deps, c.viewer);
    const body = requirementSection(c, '/admin/two-factor', 'user', req, state);
    return sendPage(reply, adminPage(c, 'two-factor', 'Two-factor', body), state?.status ?? 200);
  };
  const get = { config: { public: true }, schema: { hide: true, params: TeamParams } };
  const post = { config: { public: true }, schema: { hide: true, params: TeamParams, body: FormBody } };

  app.get('/teams/:team_slug/-/settings/two-factor', get, async (request, reply) =>
    teamPage(reply, requirePage(request), (request.params as { team_slug: string }).team_slug),
  );
  app.post('/teams/:team_slug/-/settings/two-factor', post, async (request, reply) => {
    const c = requirePage(request);
    const slug = (request.params as { team_slug: string }).team_slug;
    const enabled = text(request.body as FormFields, 'enabled') === 'on';
    const done = await attempt({}, [], () => setTeamRequirement(deps, c.viewer, slug, enabled));
    if (!done.ok) return teamPage(reply, c, slug, done.state);
    return seeOther(reply, `/teams/${seg(slug)}/-/settings/two-factor`);
  });

  app.get('/admin/two-factor', { config: { public: true }, schema: { hide: true } }, async (request, reply) =>
    sitePage(reply, requirePage(request)),
  );
  app.post('/admin/two-factor', { config: { public: true }, schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const c = requirePage(request);
    const enabled = text(request.body as FormFields, 'enabled') === 'on';
    const done = await attempt({}, [], () => setSiteRequirement(deps, c.viewer, enabled));
    if (!done.ok) return sitePage(reply, c, done.state);
    return seeOther(reply, '/admin/two-factor');
  });
}
