import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { getRelease, listReleases, openAsset, type ReleaseJson } from '../releases/service.ts';
import { notFound } from '../errors.ts';
import type { RepoJson } from '../repos/view.ts';
import { pageWindow, readerPage, sendPage } from './context.ts';
import { type Html, html, pager, seg, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { layout } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { pageRepo, pageRepoRef, repoHeader, repoRoute } from './repo-common.ts';

const PageQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const Rest = { '*': Type.String({ minLength: 1, maxLength: 255 }) };

const releaseHref = (repo: RepoJson, tag: string) => `${repoHref(repo)}/releases/tag/${seg(tag)}`;

/** The badges of a release: draft, prerelease. */
const badges = (r: ReleaseJson): Html =>
  html`${r.draft ? html` <span class="badge">draft</span>` : ''}${r.prerelease ? html` <span class="badge">prerelease</span>` : ''}`;

function assetsBox(repo: RepoJson, r: ReleaseJson): Html {
  const base = repoHref(repo);
  const archive = (suffix: string) => `${base}/archive/${seg(r.tag_name)}${suffix}`;
  return html`<section class="box" aria-labelledby="assets-h">
    <h2 id="assets-h">Assets</h2>
    <ul class="plain">
      ${r.assets.map(
        (a) =>
          html`<li>
            <a href="${base}/releases/download/${seg(r.tag_name)}/${a.uuid}">${a.name}</a>
            <span class="muted">${a.size} bytes &middot; ${a.download_count} downloads</span>
          </li>`,
      )}
      <li><a href="${archive('.zip')}">Source code (zip)</a></li>
      <li><a href="${archive('.tar.gz')}">Source code (tar.gz)</a></li>
    </ul>
  </section>`;
}

/** Releases pages (docs/releases.md): the list and one release, with notes, assets and archives. */
export async function releasePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/releases', { querystring: PageQuery }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const w = pageWindow(request.query as { page?: number });
    const rows = await listReleases(deps, c.viewer, ref, { offset: w.offset, limit: w.perPage + 1 });
    const body = html`${repoHeader(repo, 'code', can)}
      <h2>Releases</h2>
      ${
        rows.length
          ? html`<ul class="plain">
              ${rows.slice(0, w.perPage).map(
                (r) =>
                  html`<li>
                    <a href="${releaseHref(repo, r.tag_name)}">${r.name}</a> <code>${r.tag_name}</code>${badges(r)}
                    <span class="muted">${r.published_at ? when(r.published_at) : 'not published'}</span>
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No releases yet.</p>`
      }
      ${pager(`${repoHref(repo)}/releases`, w.page, rows.length > w.perPage)}`;
    return sendPage(reply, layout({ title: `Releases · ${repo.full_name}`, caller: c }, body));
  });

  /** An asset's bytes for the session's caller (counted, as the API's download). */
  repoRoute(
    app,
    'GET',
    '/releases/download/*',
    { params: Rest },
    async (request, reply) => {
      const c = readerPage(request);
      const rest = (request.params as { '*': string })['*'];
      const cut = rest.lastIndexOf('/');
      if (cut <= 0) throw notFound('Asset');
      const asset = await openAsset(deps, c.viewer, pageRepoRef(request), rest.slice(0, cut), rest.slice(cut + 1));
      reply.raw.on('close', () => asset.stream.destroy());
      return reply
        .header('content-type', asset.content_type)
        .header('content-length', asset.size)
        .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(asset.name)}`)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', 'sandbox')
        .send(asset.stream);
    },
    { compress: false },
  );

  repoRoute(app, 'GET', '/releases/tag/*', { params: Rest }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const r = await getRelease(deps, c.viewer, ref, (request.params as { '*': string })['*']);
    const body = html`${repoHeader(repo, 'code', can)}
      <p class="crumbs"><a href="${repoHref(repo)}/releases">Releases</a> /</p>
      <h2>${r.name}${badges(r)}</h2>
      <p class="muted">
        <code>${r.tag_name}</code> &middot; by ${r.author.username}
        ${r.published_at ? html`&middot; published ${when(r.published_at)}` : ''}
      </p>
      ${r.body ? html`<section class="box markdown" aria-label="Release notes">${markdownHtml(r.body)}</section>` : ''}
      ${assetsBox(repo, r)}
      ${can.write ? html`<p class="muted">Change it through the API: <code>PATCH &hellip;/releases/${r.tag_name}</code>.</p>` : ''}`;
    return sendPage(reply, layout({ title: `${r.name} · ${repo.full_name}`, caller: c }, body));
  });
}
