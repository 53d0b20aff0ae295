import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { HookScopeRef } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { repoRef } from '../http/repo-paths.ts';
import { getRepo } from '../repos/service.ts';
import { getTeam } from '../teams/service.ts';
import type { Viewer } from '../viewer.ts';
import { type Html, html, seg } from './html.ts';
import { repoHref } from './home-pages.ts';
import { PageSlug as Slug, pageRoute, type PageRouteSchema } from './page-route.ts';

/** A hook's or delivery's uuid in a page address (an unknown one is the service's 404). */
export const UuidParam = Type.String({ minLength: 1, maxLength: 100 });

type Params = Record<string, string>;

/**
 * The places hooks are managed from (README "Web interface"), each the page twin of an API
 * scope (README "Webhooks"): a repo's hooks under its settings (both owner forms), a team's under
 * the team's settings, and the site's under the staff pages. Access is the hooks service's own.
 */
interface HookScopeForm {
  prefix: string;
  params: Record<string, TSchema>;
  ref(p: Params): HookScopeRef;
  /** the hooks pages' address for these parameters */
  base(p: Params): string;
  /** the crumbs above a page's heading (read after the hooks service has let the caller in) */
  crumbs(deps: Deps, viewer: Viewer, p: Params): Promise<Html>;
}

const repoCrumbs = async (deps: Deps, viewer: Viewer, p: Params): Promise<Html> => {
  const repo = await getRepo(deps, viewer, repoRef(p as unknown as Parameters<typeof repoRef>[0]));
  return html`<a href="${repoHref(repo)}">${repo.full_name}</a> / <a href="${repoHref(repo)}/settings">Settings</a> /`;
};

export const HOOK_SCOPES: HookScopeForm[] = [
  {
    prefix: '/teams/:team_slug/:repo_slug/settings/hooks',
    params: { team_slug: Slug, repo_slug: Slug },
    ref: (p) => ({ kind: 'repo', repo: repoRef(p as unknown as Parameters<typeof repoRef>[0]) }),
    base: (p) => `/teams/${seg(p.team_slug!)}/${seg(p.repo_slug!)}/settings/hooks`,
    crumbs: repoCrumbs,
  },
  {
    prefix: '/users/:username/:repo_slug/settings/hooks',
    params: { username: Slug, repo_slug: Slug },
    ref: (p) => ({ kind: 'repo', repo: repoRef(p as unknown as Parameters<typeof repoRef>[0]) }),
    base: (p) => `/users/${seg(p.username!)}/${seg(p.repo_slug!)}/settings/hooks`,
    crumbs: repoCrumbs,
  },
  {
    prefix: '/teams/:team_slug/-/settings/hooks',
    params: { team_slug: Slug },
    ref: (p) => ({ kind: 'team', teamSlug: p.team_slug! }),
    base: (p) => `/teams/${seg(p.team_slug!)}/-/settings/hooks`,
    crumbs: async (deps, viewer, p) => {
      const team = await getTeam(deps, viewer, p.team_slug!);
      const href = `/teams/${seg(team.slug)}`;
      return html`<a href="${href}">${team.name}</a> / <a href="${href}/settings">Settings</a> /`;
    },
  },
  {
    prefix: '/admin/hooks',
    params: {},
    ref: () => ({ kind: 'site' }),
    base: () => '/admin/hooks',
    crumbs: async () => html`<a href="/admin">Staff</a> / Site hooks /`,
  },
];

export interface HookPageContext {
  form: HookScopeForm;
  params: Params;
  ref: HookScopeRef;
  base: string;
}

/** Registers a page route under every hooks scope (`suffix` after the scope's hooks address). */
export function hookRoute(
  app: FastifyInstance,
  method: 'GET' | 'POST',
  suffix: string,
  schema: PageRouteSchema,
  handler: (request: FastifyRequest, reply: FastifyReply, h: HookPageContext) => Promise<FastifyReply>,
): void {
  for (const form of HOOK_SCOPES) {
    const run: RouteHandlerMethod = (request, reply) => {
      const params = request.params as Params;
      return handler(request, reply, { form, params, ref: form.ref(params), base: form.base(params) });
    };
    pageRoute(app, method, `${form.prefix}${suffix}`, form.params, schema, run);
  }
}
