import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { blameFile, MAX_BLAME_BYTES } from '../code/blame.ts';
import { serveArchive } from '../code/files.ts';
import { openRepo } from '../code/service.ts';
import type { Deps } from '../deps.ts';
import { notFound } from '../errors.ts';
import { resolveRefAndPath } from '../git/resolve.ts';
import { pageWindow, readerPage, sendPage } from './context.ts';
import { blameTable, codeHref, refNames, refSwitcher } from './code-view.ts';
import { crumbs } from './code-pages.ts';
import { html, pager, seg } from './html.ts';
import { repoHref } from './home-pages.ts';
import { layout } from './layout.ts';
import { count as counted } from './plural.ts';
import { pageRepo, pageRepoRef, repoHeader, repoRoute } from './repo-common.ts';

const Rest = { '*': Type.String({ maxLength: 4096 }) };
const RefsQuery = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    q: Type.Optional(Type.String({ maxLength: 255 })),
    to: Type.Optional(Type.Union([Type.Literal('tree'), Type.Literal('blob'), Type.Literal('blame'), Type.Literal('commits')])),
    path: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: false },
);
/** Refs on one page of the refs list. */
const REFS_PER_PAGE = 50;

/** The blame view, every branch and tag (filtered, paged) and a ref's archive (docs/web.md "Reading code"). */
export async function blamePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/blame/*', { params: Rest }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const o = await openRepo(deps, c.viewer, ref);
    const found = o.dir ? await resolveRefAndPath(o.readers.objects, o.dir, (request.params as { '*': string })['*']) : null;
    if (!found) throw notFound('Ref');
    const result = await blameFile(deps, c.viewer, ref, found.ref.sha, found.path);
    if (result.kind === 'not_file') {
      return reply
        .status(303)
        .header('location', codeHref(repo, 'tree', found.ref.name, found.path))
        .send();
    }
    const switcher = refSwitcher({
      repo,
      current: found.ref,
      to: 'blame',
      path: found.path,
      refs: await refNames(deps, repo.uuid),
      canPull: can.takePart,
    });
    const links = html`<p class="row">
      <a href="${codeHref(repo, 'blob', found.ref.name, found.path)}">View file</a>
      <a href="${codeHref(repo, 'raw', found.ref.name, found.path)}">Raw</a>
      <a href="${codeHref(repo, 'commits', found.ref.name, found.path)}">History</a>
      <a href="${codeHref(repo, 'blame', found.ref.sha, found.path)}" id="permalink" data-permalink>Permalink</a>
    </p>`;
    const head = html`${repoHeader(repo, 'code', can)} ${crumbs(repo, found.ref.name, found.path, switcher)}
      <h2>Blame of <code>${found.path}</code></h2>
      ${links}`;
    const title = `Blame · ${found.path} · ${repo.full_name}`;
    if (result.kind !== 'ok') {
      // refused with a page that says why, and where the bytes are
      const why =
        result.kind === 'binary'
          ? html`This is a binary file (${counted(result.size, 'byte')}): it has no lines to blame.`
          : html`This file is ${counted(result.size, 'byte')}: blame is shown for files up to ${MAX_BLAME_BYTES / 1024} KiB.`;
      return sendPage(
        reply,
        layout(
          { title, caller: c, repo: repo.full_name },
          html`${head}
            <p class="notice" role="alert">${why}</p>`,
        ),
        422,
      );
    }
    const commits = new Set(result.groups.map((g) => g.commit.sha)).size;
    const body = html`${head}
      <p class="muted">${counted(result.lines, 'line')}, last changed by ${counted(commits, 'commit')}.</p>
      ${result.lines ? blameTable(repo, result.groups) : html`<p class="muted">The file is empty.</p>`}`;
    return sendPage(reply, layout({ title, caller: c, repo: repo.full_name }, body));
  });

  repoRoute(app, 'GET', '/refs', { querystring: RefsQuery }, async (request, reply) => {
    const c = readerPage(request);
    const { repo, can } = await pageRepo(deps, c.viewer, request);
    const q = request.query as { page?: number; q?: string; to?: 'tree' | 'blob' | 'blame' | 'commits'; path?: string };
    const to = q.to ?? 'tree';
    const path = (q.path ?? '').replace(/^\/+|\/+$/g, '');
    const filter = (q.q ?? '').trim().toLowerCase();
    const refs = await refNames(deps, repo.uuid);
    const all = [
      ...refs.branches.map((name) => ({ name, kind: 'branch' as const })),
      ...refs.tags.map((name) => ({ name, kind: 'tag' as const })),
    ].filter((r) => !filter || r.name.toLowerCase().includes(filter));
    const w = pageWindow(q, REFS_PER_PAGE);
    const rows = all.slice(w.offset, w.offset + w.perPage);
    const base = repoHref(repo);
    const query: Record<string, string> = { to, ...(path ? { path } : {}), ...(filter ? { q: q.q!.trim() } : {}) };
    const body = html`${repoHeader(repo, 'branches', can)}
      <h2>Branches and tags</h2>
      <form method="get" action="${base}/refs" role="search" class="row">
        <label for="refs-q">Filter</label>
        <input id="refs-q" name="q" type="search" value="${q.q ?? ''}" />
        <input type="hidden" name="to" value="${to}" />
        ${path ? html`<input type="hidden" name="path" value="${path}" />` : ''}
        <button type="submit">Filter</button>
      </form>
      <p class="muted">
        ${counted(all.length, 'ref')}${filter ? html` matching <code>${q.q!.trim()}</code>` : ''}${path ? html`, opening <code>${path}</code>` : ''}.
      </p>
      ${
        rows.length
          ? html`<ul class="plain" id="refs-list">
              ${rows.map(
                (r) =>
                  html`<li>
                    <span class="badge">${r.kind}</span> <a href="${codeHref(repo, to, r.name, path)}">${r.name}</a>
                    ${r.kind === 'branch' && can.takePart && r.name !== repo.default_branch ? html`<a class="small" href="${base}/pulls/new?source=${seg(r.name)}">New pull</a>` : ''}
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No branch or tag matches.</p>`
      }
      ${pager(`${base}/refs`, w.page, all.length > w.offset + w.perPage, query)}`;
    return sendPage(reply, layout({ title: `Branches and tags · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
  });

  /**
   * A ref's archive as `GET {repo}/archive/{ref}.zip|.tar.gz` serves it (the same function: `git
   * archive`, streamed), for the session's caller: read access to the repo, 404 otherwise.
   */
  repoRoute(
    app,
    'GET',
    '/archive/*',
    { params: Rest },
    async (request, reply) => {
      const c = readerPage(request);
      return serveArchive(deps, c.viewer, pageRepoRef(request), (request.params as { '*': string })['*'], reply);
    },
    { compress: false, longLived: true },
  );
}
