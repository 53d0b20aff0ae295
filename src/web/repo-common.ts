import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import { type RepoAbilities, repoAbilities } from '../access/abilities.ts';
import { type RepoRef, readRepo } from '../access/index.ts';
import { getRepo } from '../repos/service.ts';
import type { Deps } from '../deps.ts';
import type { RepoContext, Viewer } from '../viewer.ts';
import { repoRef } from '../http/repo-paths.ts';
import type { RepoJson } from '../repos/view.ts';
import { type Html, html, seg } from './html.ts';
import { repoHref } from './home-pages.ts';
import { PageSlug, pageRoute, type PageRouteExtra, type PageRouteSchema } from './page-route.ts';

const FORMS: Array<{ prefix: string; params: Record<string, TSchema> }> = [
  { prefix: '/teams/:team_slug/:repo_slug', params: { team_slug: PageSlug, repo_slug: PageSlug } },
  { prefix: '/users/:username/:repo_slug', params: { username: PageSlug, repo_slug: PageSlug } },
];

/** The repo a page's path names (`/teams/{t}/{slug}` or `/users/{u}/{slug}`). */
export const pageRepoRef = (request: FastifyRequest): RepoRef =>
  repoRef(request.params as { team_slug?: string; username?: string; repo_slug: string });

/** Registers a page route under both forms of a repo's address. */
export function repoRoute(
  app: FastifyInstance,
  method: 'GET' | 'POST',
  suffix: string,
  schema: PageRouteSchema,
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>,
  /** more route options (`compress: false` for bytes served as they are) */
  extra: PageRouteExtra = {},
): void {
  for (const form of FORMS) {
    pageRoute(app, method, `${form.prefix}${suffix}`, form.params, schema, handler as RouteHandlerMethod, extra);
  }
}

export type RepoTab = 'code' | 'pulls' | 'threads' | 'commits' | 'branches' | 'actions' | 'settings';

/**
 * A repo page's repo, resolved once (the page's one access decision, src/access/repo-read.ts): the
 * context every service on the page receives, the repo as the API shows it, and what the viewer
 * may do there (src/access/abilities.ts), so no part of the page decides access again.
 */
export async function pageRepo(deps: Deps, viewer: Viewer, request: FastifyRequest): Promise<PageRepo> {
  const at = await readRepo(deps.database, viewer, pageRepoRef(request));
  return { at, repo: await getRepo(deps, viewer, at), can: repoAbilities(at, viewer) };
}

export interface PageRepo {
  at: RepoContext;
  repo: RepoJson;
  can: RepoAbilities;
}

/** The repo's header: its name, visibility and tabs (Settings only where the viewer may manage the repo). */
export function repoHeader(repo: RepoJson, tab: RepoTab, can: Pick<RepoAbilities, 'manage'>): Html {
  const base = repoHref(repo);
  const owner = `/${repo.owner.kind === 'team' ? 'teams' : 'users'}/${seg(repo.owner.slug_or_username)}`;
  const item = (name: RepoTab, label: string, href: string) =>
    html`<a href="${href}" ${tab === name ? html` aria-current="page"` : ''}>${label}</a>`;
  return html`<p class="crumbs"><a href="${owner}">${repo.owner.slug_or_username}</a> /</p>
    <h1>
      <a href="${base}">${repo.slug}</a>
      <span class="badge">${repo.visibility}</span>${repo.is_archived ? html` <span class="badge">archived</span>` : ''}
    </h1>
    <nav class="tabs" aria-label="Repo">
      ${item('code', 'Code', base)}${item('commits', 'Commits', `${base}/commits/${seg(repo.default_branch)}`)}${item('pulls', 'Pulls', `${base}/pulls`)}${item('threads', 'Issues', `${base}/threads`)}${item('branches', 'Branches', `${base}/branches`)}${item('actions', 'Actions', `${base}/actions`)}<a
        href="${base}/tags"
        >Tags</a
      ><a href="${base}/releases">Releases</a>${can.manage ? item('settings', 'Settings', `${base}/settings`) : ''}
    </nav>
    ${repo.is_archived ? html`<p class="muted" role="note">This repo is archived: it is read-only.</p>` : ''}`;
}

/** An integer path parameter 1..2^31-1 as the API takes it. */
export const NumberParam = Type.Integer({ minimum: 1, maximum: 2147483647 });
