import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { type PageParams, pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, repoParamsSchema } from '../http/repo-paths.ts';
import { repoRequest } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import {
  CodeHit,
  CodeQueryString,
  CommitHit,
  CommitQueryString,
  RepoHit,
  SearchIndex,
  TextQueryString,
  ThreadHit,
} from './schemas.ts';
import {
  decodeCodeCursor,
  encodeCodeCursor,
  searchCode,
  searchCommits,
  searchIndexState,
  searchRepos,
  searchThreads,
  totalHeader,
} from './service.ts';

const COMMON =
  'Searches every repo the caller can read: access is part of the query, so a page is full and `X-Total-Count` (exact ' +
  'up to 10,000, then `10000+`; `N+`, at least N, where a search stopped counting after its page: a code search past ' +
  'the 1,000 files it examines, a thread search matching more than the 1,000 documents it ranks) counts nothing the ' +
  'caller cannot read. ';

const TOTAL = {
  'X-Total-Count': {
    type: 'string',
    description: 'matches in all pages: exact up to 10,000, then "10000+"; "N+" (at least N) where counting stopped',
  },
};

const window = (p: PageParams) => ({ offset: p.offset, limit: p.limit });

export async function searchRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['search'];
  const total = (reply: FastifyReply, found: { total: number; atLeast?: boolean }) =>
    reply.header('X-Total-Count', totalHeader(found.total, found.atLeast));

  r.get(
    '/search/code',
    {
      schema: {
        tags,
        summary: 'Search code on the default branches',
        description:
          COMMON +
          'Default branches only, text files up to 1 MiB (binary files are skipped); forks only with `repo` or `forks=true`. ' +
          'Candidates come from a trigram index and every result is verified against the file, so each matches exactly. ' +
          "Results are ordered by repo `full_name`, then path; the `next` link continues after the page's last result " +
          '(`after`), so a push re-indexed between two pages neither repeats nor skips a result; each lists its first 5 matching lines with the ranges of ' +
          'the matches. A query shorter than 3 characters, a regex without a literal run of 3 characters, or one whose matching takes ' +
          'more than 2 s in all (reads from the database not counted) is 400 `query_too_broad`; an invalid regex is 400 `invalid_request`.',
        querystring: CodeQueryString,
        response: { 200: { ...Page(CodeHit), headers: TOTAL }, ...errors(400) },
      },
    },
    async (request, reply) => {
      const page = pageParams(request.query);
      const { after, ...query } = request.query;
      const found = await searchCode(
        deps,
        requireViewer(request),
        { ...query, ...(after ? { after: decodeCodeCursor(after) } : {}) },
        window(page),
      );
      total(reply, found);
      // the next page continues after this page's last result (keyset), not at an offset
      const last = found.rows.length > page.perPage ? found.rows[page.perPage - 1]! : null;
      const next = last
        ? { after: encodeCodeCursor({ full_name: last.repo.full_name, path: last.path }), page: String(page.page + 1) }
        : undefined;
      return pageOf(request, reply, page, found.rows, undefined, next, ['after']);
    },
  );

  r.get(
    '/search/threads',
    {
      schema: {
        tags,
        summary: 'Search issues (threads) and pulls',
        description:
          COMMON +
          'Words (all must match; the last letters of a single word may be left out) and `"phrases"` over titles, bodies, ' +
          'replies and reviews, with the qualifiers `repo:owner/slug`, `is:open|closed|merged`, `is:thread|pull`, ' +
          '`label:`, `author:` and `assignee:` (usernames). Ranked by relevance, a title counting more than a body. ' +
          '`snippet` is HTML with the matched words in `<mark>`.',
        querystring: TextQueryString,
        response: { 200: { ...Page(ThreadHit), headers: TOTAL }, ...errors(400) },
      },
    },
    async (request, reply) => {
      const page = pageParams(request.query);
      const found = await searchThreads(deps, requireViewer(request), request.query, window(page));
      total(reply, found);
      return pageOf(request, reply, page, found.rows);
    },
  );

  r.get(
    '/search/commits',
    {
      schema: {
        tags,
        summary: 'Search commit messages on the default branches',
        description:
          COMMON +
          'Words and `"phrases"` in the messages of the default branches (the newest 10,000 commits of each, indexed with ' +
          'the code); forks only with `repo`. Newest first.',
        querystring: CommitQueryString,
        response: { 200: { ...Page(CommitHit), headers: TOTAL }, ...errors(400) },
      },
    },
    async (request, reply) => {
      const page = pageParams(request.query);
      const found = await searchCommits(deps, requireViewer(request), request.query, window(page));
      total(reply, found);
      return pageOf(request, reply, page, found.rows);
    },
  );

  r.get(
    '/search/repos',
    {
      schema: {
        tags,
        summary: 'Search repos by name, description and about',
        description: `${COMMON}Every word must appear in the owner, name, slug, description or about; slug matches first.`,
        querystring: TextQueryString,
        response: { 200: { ...Page(RepoHit), headers: TOTAL }, ...errors(400) },
      },
    },
    async (request, reply) => {
      const page = pageParams(request.query);
      const found = await searchRepos(deps, requireViewer(request), request.query, window(page));
      total(reply, found);
      return pageOf(request, reply, page, found.rows);
    },
  );

  for (const form of REPO_FORMS) {
    r.get(
      `${form.prefix}/search-index`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: "The state of the repo's code search index (read access)",
          description:
            'The default-branch commit the index holds, its state (`pending` until a first push or while a request waits, ' +
            '`indexing`, `ready`, `failed`), the files and bytes indexed. `weft reindex` rebuilds it.',
          params: repoParamsSchema(form),
          response: { 200: SearchIndex, ...errors() },
        },
      },
      async (request) => {
        const { viewer, at } = repoRequest(request);
        return searchIndexState(deps, viewer, at);
      },
    );
  }
}
