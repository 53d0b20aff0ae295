import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../deps.ts';
import { listBranches } from '../code/refs.ts';
import { latestReleaseName } from '../releases/service.ts';
import { activityOfScope } from './activity.ts';
import { treeView } from './code-pages.ts';
import { isSignedOut, pageWindow, readerPage, sendPage } from './context.ts';
import { html, pager, seg } from './html.ts';
import { repoHref } from './home-pages.ts';
import { layout } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { liveFeed, resumePoint } from './live.ts';
import { pageRepo, repoHeader, repoRoute } from './repo-common.ts';
import { watchControl } from './notifications/controls.ts';
import { archiveLinks, refNames, refSwitcher } from './code-view.ts';
import { pageRoute } from './page-route.ts';
import { getRepoByUuid } from '../repos/service.ts';
import { type RepoJson, loadRepoJson } from '../repos/view.ts';
import { NoResultError } from 'kysely';
import { getRepoWatch } from '../notifications/subscriptions.ts';

const PageQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);

const RepoUuid = Type.String({ pattern: '^[0-9a-fA-F-]{36}$' });

/** "forked from owner/slug", linking to the source (null: not a fork, or a source the viewer may not read). */
function forkNote(source: RepoJson | null) {
  return source
    ? html`<p class="muted" id="fork-source">forked from <a href="${repoHref(source)}">${source.full_name}</a></p>`
    : '';
}

/** The repo's home page and its branches (README "Web interface"). */
export async function repoPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '', {}, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const after = await resumePoint(deps);
    const branches = await listBranches(deps, c.viewer, ref, { offset: 0, limit: 11 });
    const scope = `repo:${repo.uuid}`;
    const events = await activityOfScope(deps, c.viewer, scope, undefined, [scope]);
    const latest = await latestReleaseName(deps, repo.uuid);
    const watch = isSignedOut(c) ? null : await getRepoWatch(deps, c.viewer, ref);
    // the file tree at the default branch with its README, once that branch has been pushed
    const tree =
      (await deps.git.branchSha(repo.uuid, repo.default_branch)) !== null
        ? await treeView(
            deps,
            c.viewer,
            ref,
            repo,
            repo.default_branch,
            '',
            refSwitcher({
              repo,
              current: { name: repo.default_branch, kind: 'branch' },
              to: 'tree',
              path: '',
              refs: await refNames(deps, repo.uuid),
              canPull: can.takePart,
            }),
          )
        : html``;
    // a fork names its source: `fork_of_uuid` is set only where the viewer may read it (repos/service.ts getRepo)
    const source = repo.fork_of_uuid
      ? await loadRepoJson(deps.db, repo.fork_of_uuid, deps.config).catch((err: unknown) => {
          // gone since the repo was read: no note
          if (err instanceof NoResultError) return null;
          throw err;
        })
      : null;
    const body = html`${repoHeader(repo, 'code', can)} ${forkNote(source)}
      ${watch ? watchControl(repoHref(repo), c.csrf, watch.level) : ''}
      ${repo.description ? html`<p>${repo.description}</p>` : ''} ${tree}
      <div class="grid">
        <div>
          <section class="box" aria-labelledby="clone-h">
            <h2 id="clone-h">Clone</h2>
            <label for="clone-url">Clone URL</label>
            <input id="clone-url" type="text" readonly value="${repo.clone_url}" />
            ${
              repo.ssh_url
                ? html`<label for="ssh-url">SSH clone URL</label>
                    <input id="ssh-url" type="text" readonly value="${repo.ssh_url}" />`
                : ''
            }
            <p class="muted">Default branch: ${repo.default_branch}</p>
            ${branches.length ? html`<p>${archiveLinks(repo, repo.default_branch)}</p>` : ''}
            ${isSignedOut(c) ? '' : html`<p><a href="${repoHref(repo)}/fork">Fork this repo</a></p>`}
          </section>
          <section class="box" aria-labelledby="branches-h">
            <h2 id="branches-h">Branches</h2>
            ${
              branches.length
                ? html`<ul class="plain">
                    ${branches.slice(0, 10).map((b) => html`<li><code>${b.name}</code> <span class="muted">${b.commit_sha.slice(0, 10)}</span>${b.protected ? html` <span class="badge">protected</span>` : ''}</li>`)}
                  </ul>`
                : html`<p class="muted">This repo is empty. Push an existing repository to it:</p>
                    <pre class="wrap" id="push-help">
git remote add origin ${repo.clone_url}
git push -u origin ${repo.default_branch}</pre>`
            }
            ${branches.length > 10 ? html`<p><a href="${repoHref(repo)}/branches">All branches</a></p>` : ''}
          </section>
          ${
            latest
              ? html`<section class="box" aria-labelledby="release-h">
                  <h2 id="release-h">Latest release</h2>
                  <p>
                    <a href="${repoHref(repo)}/releases/tag/${seg(latest.tag_name)}">${latest.name}</a>
                    <code>${latest.tag_name}</code>
                  </p>
                  <p><a href="${repoHref(repo)}/releases">All releases</a></p>
                </section>`
              : ''
          }
          ${repo.about ? html`<section class="box markdown" aria-label="About">${markdownHtml(repo.about)}</section>` : ''}
        </div>
        ${liveFeed({ id: 'repo-feed', label: 'Activity', scopes: isSignedOut(c) ? [] : [scope], after, events })}
      </div>`;
    return sendPage(reply, layout({ title: repo.full_name, caller: c, repo: repo.full_name }, body));
  });

  // An event's link to a repo (activity/event-sentence.ts): `/repos/{uuid}/…` leads to the repo's
  // page of that name for a reader who may read it, 404 otherwise (GET /repos/{uuid}'s rule).
  for (const url of ['/repos/:uuid', '/repos/:uuid/*']) {
    pageRoute(
      app,
      'GET',
      url,
      { uuid: RepoUuid },
      { params: { '*': Type.Optional(Type.String({ maxLength: 4096 })) } },
      async (request, reply) => {
        const c = readerPage(request);
        const params = request.params as { uuid: string; '*'?: string };
        const target = await getRepoByUuid(deps, c.viewer, params.uuid);
        const rest = params['*'] ? `/${params['*'].split('/').map(seg).join('/')}` : '';
        return reply
          .status(303)
          .header('location', `${repoHref(target)}${rest}`)
          .send();
      },
    );
  }

  repoRoute(app, 'GET', '/branches', { querystring: PageQuery }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const w = pageWindow(request.query as { page?: number }, 50);
    const branches = await listBranches(deps, c.viewer, ref, w);
    const body = html`${repoHeader(repo, 'branches', can)}
      <h2>Branches</h2>
      ${
        branches.length
          ? html`<ul class="plain">
              ${branches.slice(0, w.perPage).map((b) => html`<li><code>${b.name}</code> <span class="muted">${b.commit_sha.slice(0, 10)}</span>${b.protected ? html` <span class="badge">protected</span>` : ''} ${can.takePart ? html`<a href="${repoHref(repo)}/pulls/new?source=${seg(b.name)}">Open a pull</a>` : ''}</li>`)}
            </ul>`
          : html`<p class="muted">No branches yet.</p>`
      }
      ${pager(`${repoHref(repo)}/branches`, w.page, branches.length > w.perPage)}`;
    return sendPage(reply, layout({ title: `Branches · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
  });
}
