import { parsePointer } from '../lfs/pointer.ts';
import { heldObject } from '../lfs/service.ts';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type HighlightJs from 'highlight.js';
import { compare, getCommit, getContents, listCommits, listTags, openRepo } from '../code/service.ts';
import type { Deps } from '../deps.ts';
import { notFound } from '../errors.ts';
import { resolveRefAndPath } from '../git/resolve.ts';
import { serveRaw } from '../code/files.ts';
import type { RepoJson } from '../repos/view.ts';
import { lazyRequire } from '../lazy-require.ts';

/** highlight.js (all its languages) is loaded with the first highlighted file. */
const highlighter = lazyRequire<typeof HighlightJs>('highlight.js');
import type { RepoAt, Viewer } from '../viewer.ts';
import { count as counted } from './plural.ts';
import { pageWindow, readerPage, sendPage } from './context.ts';
import { renderDiff } from './diff.ts';
import { type Html, html, pager, trusted } from './html.ts';
import { repoHref } from './home-pages.ts';
import { layout } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { codeHref, codeTable, refNames, refSwitcher, segPath } from './code-view.ts';
import { pageRepoRef, repoHeader, repoRoute, pageRepo } from './repo-common.ts';

const Rest = { '*': Type.String({ maxLength: 4096 }) };
const PageQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const CommitsQuery = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    path: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: false },
);
/** Files larger than this are not highlighted (shown plain). */
const MAX_HIGHLIGHT_BYTES = 256 * 1024;

/** Where a ref and a path inside it are (code-view.ts `codeHref`). */
const at = (repo: RepoJson, kind: 'tree' | 'blob' | 'raw', ref: string, path: string) => codeHref(repo, kind, ref, path);

/** The path as links, each segment to its directory, after the branch and tag switcher (when given). */
export function crumbs(repo: RepoJson, ref: string, path: string, switcher?: Html): Html {
  const parts = path ? path.split('/') : [];
  return html`<div class="row code-head">
    ${switcher ?? ''}
    <p class="crumbs">
      <a href="${at(repo, 'tree', ref, '')}">${repo.slug}</a>${parts.map(
        (p, i) =>
          html` /
          ${i === parts.length - 1 ? p : html`<a href="${at(repo, 'tree', ref, parts.slice(0, i + 1).join('/'))}">${p}</a>`}`,
      )}${switcher ? '' : html` <span class="badge">${ref}</span>`}
    </p>
  </div>`;
}

/** A directory listing and its README rendered (the repo's home page and `/tree/…`). */
export async function treeView(
  deps: Deps,
  viewer: Viewer,
  ref: RepoAt,
  repo: RepoJson,
  refName: string,
  path: string,
  /** the branch and tag switcher shown before the path */
  switcher?: Html,
): Promise<Html> {
  const dir = await getContents(deps, viewer, ref, path, refName);
  const entries = dir.body.entries ?? [];
  const readme = entries.find((e) => e.type === 'file' && /^readme(\.md|\.markdown|\.txt)?$/i.test(e.name));
  let readmeHtml: Html = html``;
  if (readme) {
    const file = await getContents(deps, viewer, ref, readme.path, refName);
    const text = file.body.content ? Buffer.from(file.body.content, 'base64').toString('utf8') : '';
    readmeHtml = html`<section class="box markdown" aria-label="${readme.name}">
      ${/\.txt$/i.test(readme.name) || !/\./.test(readme.name) ? html`<pre>${text}</pre>` : markdownHtml(text)}
    </section>`;
  }
  const sorted = [...entries].sort((a, b) => ((a.type === 'dir') === (b.type === 'dir') ? 0 : a.type === 'dir' ? -1 : 1));
  return html`${crumbs(repo, refName, path, switcher)}
    <section class="box" aria-label="Files">
      <ul class="plain">
        ${path ? html`<li><a href="${at(repo, 'tree', refName, path.split('/').slice(0, -1).join('/'))}">..</a></li>` : ''}
        ${sorted.map(
          (e) =>
            html`<li>
              <a href="${at(repo, e.type === 'dir' ? 'tree' : 'blob', refName, e.path)}"
                >${e.name}${e.type === 'dir' ? '/' : ''}</a
              >${e.type === 'file' && e.size !== null ? html` <span class="muted">${counted(e.size, 'byte')}</span>` : ''}
            </li>`,
        )}
      </ul>
    </section>
    ${readmeHtml}`;
}

/** The image types the raw route serves as themselves (code/files.ts): shown in the file view. */
const IMAGE_FILE = /\.(png|jpe?g|gif|webp)$/i;

/** An image file, from its raw bytes (served with `nosniff` and a sandbox policy), at most the page's width. */
function imageView(src: string, path: string): Html {
  return html`<p><img class="file-image" src="${src}" alt="${path.slice(path.lastIndexOf('/') + 1)}" /></p>`;
}

/** A file's text with line numbers, highlighted by highlight.js on the server (by the file's extension). */
function fileView(path: string, bytes: Buffer): Html {
  if (bytes.includes(0)) return html`<p class="muted">Binary file (${counted(bytes.length, 'byte')}).</p>`;
  const text = bytes.toString('utf8');
  const ext = /\.([A-Za-z0-9+]+)$/.exec(path)?.[1]?.toLowerCase();
  const hljs = highlighter();
  const language = ext && hljs.getLanguage(ext) ? ext : null;
  const code =
    language && bytes.length <= MAX_HIGHLIGHT_BYTES
      ? trusted(hljs.highlight(text, { language, ignoreIllegals: true }).value)
      : html`${text}`;
  const count = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  // each number is a link to its line (`#L12`, a range `#L12-L20`: search results link there)
  return codeTable(code, count);
}

/** A Git LFS pointer's object when the repo holds it: its size, and its bytes when small enough to show. */
async function lfsContent(deps: Deps, repoUuid: string, bytes: Buffer): Promise<{ size: number; bytes: Buffer | null } | null> {
  const pointer = parsePointer(bytes);
  const size = pointer ? await heldObject(deps.db, repoUuid, pointer.oid) : null;
  if (!pointer || size === null) return null;
  if (size > MAX_LFS_VIEW_BYTES) return { size, bytes: null };
  const chunks: Buffer[] = [];
  if (size > 0) for await (const c of deps.blobs.get(pointer.oid)) chunks.push(c as Buffer);
  return { size, bytes: Buffer.concat(chunks) };
}

/** The largest LFS object the file view shows inline. */
const MAX_LFS_VIEW_BYTES = 1024 * 1024;

/** Code pages (README "Web interface"): tree, file, commits, a commit, compare, tags; read through src/code/. */
export async function codePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const resolve = async (viewer: Viewer, ref: RepoAt, rest: string) => {
    const o = await openRepo(deps, viewer, ref);
    const found = o.dir ? await resolveRefAndPath(o.readers.objects, o.dir, rest) : null;
    if (!found) throw notFound('Ref');
    return found;
  };

  repoRoute(app, 'GET', '/tree/*', { params: Rest }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const found = await resolve(c.viewer, ref, (request.params as { '*': string })['*']);
    const switcher = refSwitcher({
      repo,
      current: found.ref,
      to: 'tree',
      path: found.path,
      refs: await refNames(deps, repo.uuid),
      canPull: can.takePart,
    });
    const body = html`${repoHeader(repo, 'code', can)}
    ${await treeView(deps, c.viewer, ref, repo, found.ref.name, found.path, switcher)}`;
    return sendPage(
      reply,
      layout({ title: `${found.path || repo.slug} · ${repo.full_name}`, caller: c, repo: repo.full_name }, body),
    );
  });

  repoRoute(app, 'GET', '/blob/*', { params: Rest }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const found = await resolve(c.viewer, ref, (request.params as { '*': string })['*']);
    const file = await getContents(deps, c.viewer, ref, found.path, found.ref.name);
    if (file.body.type === 'dir')
      return reply
        .status(303)
        .header('location', at(repo, 'tree', found.ref.name, found.path))
        .send();
    const lfs =
      file.body.type === 'file' && file.body.content
        ? await lfsContent(deps, repo.uuid, Buffer.from(file.body.content, 'base64'))
        : null;
    const content = lfs
      ? html`<p class="row">
            <span class="badge">Stored with Git LFS</span> <span class="muted">${counted(lfs.size, 'byte')}</span>
          </p>
          ${
            lfs.bytes === null
              ? html`<p class="muted">The file is too large to show: use Raw.</p>`
              : IMAGE_FILE.test(found.path)
                ? imageView(at(repo, 'raw', found.ref.name, found.path), found.path)
                : fileView(found.path, lfs.bytes)
          }`
      : file.body.type !== 'file'
        ? html`<p class="muted">${file.body.type}${file.body.target ? html`: ${file.body.target}` : ''}</p>`
        : IMAGE_FILE.test(found.path)
          ? imageView(at(repo, 'raw', found.ref.name, found.path), found.path)
          : file.body.content === null || file.body.content === undefined
            ? html`<p class="muted">The file is too large to show (${counted(file.body.size ?? 0, 'byte')}).</p>`
            : fileView(found.path, Buffer.from(file.body.content, 'base64'));
    const switcher = refSwitcher({
      repo,
      current: found.ref,
      to: 'blob',
      path: found.path,
      refs: await refNames(deps, repo.uuid),
      canPull: can.takePart,
    });
    // the same file at the commit: an address that never changes (the line range is kept by the page's script)
    const permalink = codeHref(repo, 'blob', found.ref.sha, found.path);
    const body = html`${repoHeader(repo, 'code', can)} ${crumbs(repo, found.ref.name, found.path, switcher)}
      <p class="row">
        <span class="muted">${counted(file.body.size ?? 0, 'byte')}</span>
        ${file.body.type === 'file' ? html`<a href="${at(repo, 'raw', found.ref.name, found.path)}">Raw</a>` : ''}
        ${file.body.type === 'file' ? html`<a href="${codeHref(repo, 'blame', found.ref.name, found.path)}">Blame</a>` : ''}
        <a href="${codeHref(repo, 'commits', found.ref.name, found.path)}">History</a>
        <a href="${permalink}" id="permalink" data-permalink>Permalink</a>
        <button type="button" class="link" id="copy-permalink" hidden>Copy permalink</button>
      </p>
      ${content}`;
    return sendPage(
      reply,
      layout({ title: `${found.path} · ${repo.full_name}`, caller: c, repo: repo.full_name, styles: ['highlight.css'] }, body),
    );
  });

  /**
   * A file's bytes as `GET {repo}/raw/{ref}/{path}` serves them (the same function: ETag, Range,
   * `X-Content-Type-Options: nosniff`, `Content-Security-Policy: sandbox`), for the session's caller.
   */
  repoRoute(
    app,
    'GET',
    '/raw/*',
    { params: Rest },
    async (request, reply) => {
      const c = readerPage(request);
      return serveRaw(deps, c.viewer, pageRepoRef(request), (request.params as { '*': string })['*'], request, reply);
    },
    { compress: false },
  );

  repoRoute(app, 'GET', '/commits/*', { params: Rest, querystring: CommitsQuery }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const name = (request.params as { '*': string })['*'];
    const q = request.query as { page?: number; path?: string };
    const path = q.path?.replace(/^\/+|\/+$/g, '') || undefined;
    const w = pageWindow(q);
    const { rows } = await listCommits(deps, c.viewer, ref, { ref: name || undefined, path }, { ...w, perPage: w.perPage });
    const refs = await refNames(deps, repo.uuid);
    const shown = name || repo.default_branch;
    const switcher = refSwitcher({
      repo,
      current: { name: shown, kind: refs.branches.includes(shown) ? 'branch' : refs.tags.includes(shown) ? 'tag' : 'sha' },
      to: 'commits',
      path: path ?? '',
      refs,
      canPull: can.takePart,
    });
    const body = html`${repoHeader(repo, 'commits', can)}
      <div class="row code-head">${switcher}</div>
      <h2>Commits on <code>${shown}</code>${path ? html` touching <code>${path}</code>` : ''}</h2>
      ${
        rows.length
          ? html`<ul class="plain">
              ${rows.slice(0, w.perPage).map(
                (cm) =>
                  html`<li>
                    <a href="${repoHref(repo)}/commit/${cm.sha}">${cm.message.split('\n')[0]}</a>
                    <span class="muted"
                      ><code>${cm.sha.slice(0, 10)}</code> ${cm.author.name}, ${cm.author.date.slice(0, 10)}</span
                    >
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No commits yet.</p>`
      }
      ${pager(`${repoHref(repo)}/commits/${segPath(name)}`, w.page, rows.length > w.perPage, path ? { path } : {})}`;
    return sendPage(reply, layout({ title: `Commits · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
  });

  repoRoute(
    app,
    'GET',
    '/commit/:sha',
    { params: { sha: Type.String({ minLength: 4, maxLength: 64, pattern: '^[0-9a-fA-F]+$' }) } },
    async (request, reply) => {
      const c = readerPage(request);
      const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
      const { body: commit } = await getCommit(deps, c.viewer, ref, (request.params as { sha: string }).sha);
      const [title, ...rest] = commit.message.split('\n');
      const body = html`${repoHeader(repo, 'commits', can)}
        <h2>${title}</h2>
        ${rest.join('\n').trim() ? html`<pre>${rest.join('\n').trim()}</pre>` : ''}
        <p class="muted">
          <code>${commit.sha}</code> by ${commit.author.name}
          ${commit.author.date.slice(0, 16).replace('T', ' ')}${commit.parents.length ? html` · parent ${commit.parents.map((p) => html`<a href="${repoHref(repo)}/commit/${p}"><code>${p.slice(0, 10)}</code></a> `)}` : ''}
        </p>
        <p>
          ${counted(commit.files.length, 'file')} changed, +${commit.stats.additions} &minus;${commit.stats.deletions} ·
          <a href="${at(repo, 'tree', commit.sha, '')}">Browse files</a>
        </p>
        ${renderDiff(commit.files, commit.files_truncated)}`;
      return sendPage(reply, layout({ title: `${title} · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
    },
  );

  repoRoute(app, 'GET', '/compare/*', { params: Rest }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const spec = (request.params as { '*': string })['*'];
    const { body: cmp } = await compare(deps, c.viewer, ref, spec);
    const [base, head] = spec.split('...');
    const body = html`${repoHeader(repo, 'code', can)}
      <h2>Compare <code>${base}</code>...<code>${head}</code></h2>
      <p>
        <span class="badge">${cmp.status}</span> ${cmp.ahead_by} ahead, ${cmp.behind_by} behind.
        ${can.takePart ? html`<a href="${repoHref(repo)}/pulls/new?source=${head ?? ''}">Open a pull</a>` : ''}
      </p>
      <ul class="plain">
        ${cmp.commits.map(
          (cm) =>
            html`<li>
              <a href="${repoHref(repo)}/commit/${cm.sha}">${cm.message.split('\n')[0]}</a>
              <span class="muted"><code>${cm.sha.slice(0, 10)}</code> ${cm.author.name}</span>
            </li>`,
        )}
      </ul>
      ${renderDiff(cmp.files, cmp.files_truncated)}`;
    return sendPage(reply, layout({ title: `Compare · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
  });

  repoRoute(app, 'GET', '/tags', { querystring: PageQuery }, async (request, reply) => {
    const c = readerPage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const w = pageWindow(request.query as { page?: number });
    const tags = await listTags(deps, c.viewer, ref, { ...w });
    const body = html`${repoHeader(repo, 'code', can)}
      <h2>Tags</h2>
      ${
        tags.length
          ? html`<ul class="plain">
              ${tags.slice(0, w.perPage).map(
                (tg) =>
                  html`<li>
                    <a href="${at(repo, 'tree', tg.name, '')}">${tg.name}</a>
                    <span class="muted"><code>${tg.commit_sha.slice(0, 10)}</code></span>
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No tags.</p>`
      }
      ${pager(`${repoHref(repo)}/tags`, w.page, tags.length > w.perPage)}`;
    return sendPage(reply, layout({ title: `Tags · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
  });
}
