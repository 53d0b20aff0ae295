import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import {
  type CodeHit,
  type CommitHit,
  type Counted,
  type RepoHit,
  type ThreadHit,
  searchCode,
  searchCommits,
  searchRepos,
  searchThreads,
  totalHeader,
} from '../search/service.ts';
import type { Viewer } from '../viewer.ts';
import { pageWindow, requirePage, sendPage } from './context.ts';
import { type Html, html, pager, seg, trusted } from './html.ts';
import { layout } from './layout.ts';
import { pageRoute } from './page-route.ts';

const TABS = ['code', 'threads', 'commits', 'repos'] as const;
type Tab = (typeof TABS)[number];
const LABELS: Record<Tab, string> = { code: 'Code', threads: 'Issues and pulls', commits: 'Commits', repos: 'Repos' };

const SearchQuery = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 1000 })),
    type: Type.Optional(Type.Union(TABS.map((t) => Type.Literal(t)))),
    repo: Type.Optional(Type.String({ maxLength: 300 })),
    case: Type.Optional(Type.Union([Type.Literal('sensitive'), Type.Literal('insensitive')])),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  },
  { additionalProperties: false },
);

type Found = Counted<CodeHit> | Counted<ThreadHit> | Counted<CommitHit> | Counted<RepoHit>;

/** One tab's search; an AppError (query_too_broad, a bad qualifier) is its message, shown on the page. */
async function run(
  deps: Deps,
  viewer: Viewer,
  tab: Tab,
  q: string,
  repo: string | undefined,
  caseSensitive: boolean,
  w: { offset: number; limit: number },
): Promise<Found | { error: string }> {
  try {
    if (tab === 'code') return await searchCode(deps, viewer, { q, repo, case: caseSensitive ? 'sensitive' : undefined }, w);
    if (tab === 'threads') return await searchThreads(deps, viewer, { q: repo ? `repo:${repo} ${q}` : q }, w);
    if (tab === 'commits') return await searchCommits(deps, viewer, { q, repo }, w);
    return await searchRepos(deps, viewer, { q }, w);
  } catch (err) {
    if (err instanceof AppError && err.status === 400) return { error: err.message };
    throw err;
  }
}

/** A line with its matched ranges (code points) in <mark>. */
function markedLine(line: string, ranges: [number, number][]): Html {
  const chars = [...line];
  const parts: Html[] = [];
  let at = 0;
  for (const [start, end] of ranges) {
    if (start < at) continue;
    parts.push(html`${chars.slice(at, start).join('')}`, html`<mark>${chars.slice(start, end).join('')}</mark>`);
    at = end;
  }
  parts.push(html`${chars.slice(at).join('')}`);
  return html`${parts}`;
}

const segPath = (path: string) => path.split('/').map(seg).join('/');

/** The search results page (docs/search.md): tabs with counts, highlighted matches, code lines linking to the file view. */
export async function searchPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  pageRoute(app, 'GET', '/search', {}, { querystring: SearchQuery }, async (request, reply) => {
    const c = requirePage(request);
    const query = request.query as { q?: string; type?: Tab; repo?: string; case?: string; page?: number };
    const q = (query.q ?? '').trim();
    const tab: Tab = query.type ?? 'code';
    const repo = query.repo?.trim() || undefined;
    const caseSensitive = query.case === 'sensitive';
    const w = pageWindow(query, 20);
    const keep: Record<string, string> = {
      q,
      type: tab,
      ...(repo ? { repo } : {}),
      ...(caseSensitive ? { case: 'sensitive' } : {}),
    };
    const href = (changes: Record<string, string>) => `/search?${new URLSearchParams({ ...keep, ...changes }).toString()}`;

    const results = q
      ? await Promise.all(
          TABS.map((t) => run(deps, c.viewer, t, q, repo, caseSensitive, t === tab ? w : { offset: 0, limit: 1 })),
        )
      : [];
    const current = results[TABS.indexOf(tab)];
    // page links of repos need their owner kind (team or user)
    const uuids = new Set<string>();
    if (current && !('error' in current)) {
      for (const r of current.rows as Array<{ repo?: { uuid: string }; uuid?: string }>) uuids.add(r.repo?.uuid ?? r.uuid!);
    }
    const kinds = new Map(
      uuids.size
        ? (
            await deps.db
              .selectFrom('repos')
              .select(['uuid', 'owner_kind'])
              .where('uuid', 'in', [...uuids])
              .execute()
          ).map((r) => [r.uuid, r.owner_kind])
        : [],
    );
    const repoPage = (uuid: string, fullName: string) => {
      const [owner, slug] = fullName.split('/');
      return `/${kinds.get(uuid) === 'team' ? 'teams' : 'users'}/${seg(owner ?? '')}/${seg(slug ?? '')}`;
    };

    const tabs = html`<nav class="tabs" aria-label="Result kinds">
      ${TABS.map((t, i) => {
        const r = results[i];
        const count = !r ? '' : 'error' in r ? ' (-)' : ` (${totalHeader(r.total, r.atLeast)})`;
        return html`<a href="${href({ type: t })}" ${t === tab ? html` aria-current="page"` : ''}>${LABELS[t]}${count}</a>`;
      })}
    </nav>`;

    let list: Html = html``;
    if (current && 'error' in current) list = html`<p class="error" role="alert">${current.error}</p>`;
    else if (current && current.rows.length === 0) list = html`<p class="muted">Nothing found.</p>`;
    else if (current && tab === 'code') {
      list = html`<ul class="plain">
        ${(current.rows as CodeHit[]).slice(0, w.perPage).map((h) => {
          const file = `${repoPage(h.repo.uuid, h.repo.full_name)}/blob/${segPath(h.commit_sha ?? 'HEAD')}/${segPath(h.path)}`;
          return html`<li class="hit">
            <a href="${repoPage(h.repo.uuid, h.repo.full_name)}">${h.repo.full_name}</a> &middot; <a href="${file}">${h.path}</a>
            <span class="muted">${h.match_count} match${h.match_count === 1 ? '' : 'es'}</span>
            <pre>
${h.matches.map(
                (m) => html`<a class="ln" href="${file}#L${m.line_number}">${m.line_number}</a>${markedLine(m.line, m.ranges)} `,
              )}</pre>
          </li>`;
        })}
      </ul>`;
    } else if (current && tab === 'threads') {
      list = html`<ul class="plain">
        ${(current.rows as ThreadHit[]).slice(0, w.perPage).map(
          (h) =>
            html`<li>
              <span class="badge ${h.state}">${h.state}</span>
              <a href="${repoPage(h.repo.uuid, h.repo.full_name)}/${h.kind === 'pull' ? 'pulls' : 'threads'}/${h.number}"
                >${h.title}</a
              >
              <span class="muted">${h.repo.full_name}#${h.number}</span>
              ${h.snippet ? html`<div>${trusted(h.snippet)}</div>` : ''}
            </li>`,
        )}
      </ul>`;
    } else if (current && tab === 'commits') {
      list = html`<ul class="plain">
        ${(current.rows as CommitHit[]).slice(0, w.perPage).map(
          (h) =>
            html`<li>
              <a href="${repoPage(h.repo.uuid, h.repo.full_name)}/commit/${h.sha}"><code>${h.sha.slice(0, 10)}</code></a>
              <span class="muted">${h.repo.full_name} &middot; ${h.author_name}</span>
              <div>${trusted(h.snippet)}</div>
            </li>`,
        )}
      </ul>`;
    } else if (current && tab === 'repos') {
      list = html`<ul class="plain">
        ${(current.rows as RepoHit[]).slice(0, w.perPage).map(
          (h) =>
            html`<li>
              <a href="${repoPage(h.uuid, h.full_name)}">${h.full_name}</a> <span class="badge">${h.visibility}</span>
              ${h.description ? html`<span class="muted">${h.description}</span>` : ''}
            </li>`,
        )}
      </ul>`;
    }

    const body = html`<h1>Search${repo ? html` in ${repo}` : ''}</h1>
      <form class="row" role="search" method="get" action="/search">
        <label for="search-q" class="sr-only">Search for</label>
        <input type="search" id="search-q" name="q" value="${q}" />
        <input type="hidden" name="type" value="${tab}" />
        ${repo ? html`<input type="hidden" name="repo" value="${repo}" />` : ''}
        <span class="check"
          ><input type="checkbox" id="search-case" name="case" value="sensitive" ${caseSensitive ? 'checked' : ''} /><label
            for="search-case"
            >Match case</label
          ></span
        >
        <button type="submit">Search</button>
      </form>
      ${repo ? html`<p><a href="${`/search?${new URLSearchParams({ q, type: tab }).toString()}`}">Search everywhere</a></p>` : ''}
      ${q ? tabs : html`<p class="muted">Code: a literal of 3 characters or more, or /regex/; qualifiers repo:, path:, lang:.</p>`}
      ${list} ${current && !('error' in current) ? pager('/search', w.page, current.rows.length > w.perPage, keep) : ''}`;
    return sendPage(reply, layout({ title: q ? `${q} · Search` : 'Search', caller: c, ...(repo ? { repo } : {}) }, body));
  });
}
