import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { closeCodeReaders } from '../git/readers.ts';
import { Branch } from './ref-schemas.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { repoRequest, pagedRepoList } from '../http/repo-routes.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { encodedBody, pickEncoding, type SerializedBody } from './body-cache.ts';
import { createBranch, deleteBranch } from './branches.ts';
import { serveArchive, serveRaw } from './files.ts';
import {
  CodeCommit,
  CommitDetail,
  CommitsQuery,
  Comparison,
  Contents,
  CreateBranchBody,
  RefQuery,
  Tag,
  TagsQuery,
  Wildcard,
} from './schemas.ts';
import { compare, getBranch, getCommit, getContentsReply, listCommits, listTags } from './service.ts';

type Rest = RepoParams & { '*': string };

const REFS =
  '`{ref}` is a branch, a tag or a commit sha (full, or a unique prefix of 7+ hex digits); a branch wins over a tag. ' +
  'Refs and paths may hold `/`. A ref or path that does not exist is 404; a malformed one (`..`, a control character, ' +
  'a leading `-`) is 400. Read access to the repo (404 otherwise). Addressed by a full sha, the answer is immutable: ' +
  '`Cache-Control: public, max-age=31536000, immutable` (`private` for a private repo).';

const BYTES =
  'Always `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox`: nothing from a repo runs script on the API’s origin.';

function withCache(reply: FastifyReply, cache: string | null): void {
  if (cache) reply.header('cache-control', cache);
}

/**
 * A body serialized once (src/code/body-cache.ts): its strong ETag is kept by the ETag hook
 * (If-None-Match → 304), and a compressed answer is compressed once too (the compression hook
 * leaves a body that already has a Content-Encoding alone). Each encoding has its own tag.
 */
function sendSerialized(request: FastifyRequest, reply: FastifyReply, body: SerializedBody, threshold: number) {
  reply.type('application/json; charset=utf-8');
  const encoding =
    body.bytes.length >= threshold && request.headers['x-no-compression'] === undefined
      ? pickEncoding(request.headers['accept-encoding'])
      : null;
  reply.header('vary', 'Accept-Encoding');
  if (!encoding) {
    reply.header('etag', body.etag);
    return reply.send(body.bytes);
  }
  reply.header('etag', `${body.etag.slice(0, -1)}-${encoding}"`);
  reply.header('content-encoding', encoding);
  return reply.send(encodedBody(body, encoding));
}

/** Reading code: commits, compare, contents, raw files, archives, one branch, branch writes, tags. */
export async function codeRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['code'];
  app.addHook('onClose', async () => closeCodeReaders(deps));

  for (const form of REPO_FORMS) {
    const RepoPath = repoParamsSchema(form);
    const RestPath = repoParamsSchema(form, Wildcard);

    r.get(
      `${form.prefix}/commits`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'Commits from a ref, newest first (read access)',
          description:
            'git log order from `ref` (default: the default branch); with `path`, only commits that touched it; `since` and ' +
            '`until` are inclusive bounds on the committer date. An empty repo answers an empty page. ' +
            REFS,
          params: RepoPath,
          querystring: CommitsQuery,
          response: { 200: Page(CodeCommit), ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer, at } = repoRequest(request);
        const page = pageParams(request.query);
        const { rows, cache } = await listCommits(deps, viewer, at, request.query, page);
        withCache(reply, cache);
        return pageOf(request, reply, page, rows);
      },
    );

    r.get(
      `${form.prefix}/commits/*`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'One commit with its files, patches and stats against its first parent (read access)',
          description:
            'A root commit is compared with the empty tree. Files are sorted by path; at most 3,000 (then `files_truncated`); ' +
            'a patch over 256 KiB is null with `patch_truncated: true`. ' +
            REFS,
          params: RestPath,
          response: { 200: CommitDetail, ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer, at, params } = repoRequest<Rest>(request);
        const { body, cache } = await getCommit(deps, viewer, at, params['*']);
        withCache(reply, cache);
        return body;
      },
    );

    r.get(
      `${form.prefix}/compare/*`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'Compare {base}...{head}: status, ahead/behind, merge base, commits and files (read access)',
          description:
            'As GitHub’s three-dot compare: `files` are the changes from the merge base to head; `commits` are those of head not ' +
            'in base, oldest first, at most 250 (then `commits_truncated`). Two unrelated histories have `merge_base_sha: null` ' +
            'and files against the empty tree. `{head}` may be `{owner}:{slug}:{branch}`: a ref of another repo of the fork ' +
            'network (owner a team slug, else a username; 404 when unreadable, 400 outside the network). ' +
            REFS,
          params: RestPath,
          response: { 200: Comparison, ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer, at, params } = repoRequest<Rest>(request);
        const { body, cache } = await compare(deps, viewer, at, params['*']);
        withCache(reply, cache);
        return body;
      },
    );

    const contents = async (request: FastifyRequest, reply: FastifyReply) => {
      const { viewer, at, params } = repoRequest<Partial<Rest> & RepoParams>(request);
      const q = request.query as { ref?: string };
      const answer = await getContentsReply(deps, viewer, at, params['*'] ?? '', q.ref);
      withCache(reply, answer.cache);
      return sendSerialized(request, reply, answer.serialized, deps.config.compressThreshold);
    };
    const contentsDescription =
      'A file: `{type: "file", name, path, sha, size, encoding: "base64", content}` (`content: null, truncated: true` above ' +
      '1 MiB: use raw). A directory: `{type: "dir", name, path, sha, entries}`, entries sorted by name in byte order. A ' +
      'symlink: `{type: "symlink", name, path, sha, target}`. A submodule: `{type: "submodule", name, path, sha}`. ' +
      '`ETag` is strong (a hash of the body); If-None-Match → 304. ' +
      REFS;
    r.get(
      `${form.prefix}/contents`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'The root directory at a ref (read access)',
          description: `The root's \`name\` and \`path\` are "". ${contentsDescription}`,
          params: RepoPath,
          querystring: RefQuery,
          response: { 200: Contents, ...errors(400) },
        },
      },
      contents,
    );
    r.get(
      `${form.prefix}/contents/*`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'A file, directory, symlink or submodule at a ref (read access)',
          description: contentsDescription,
          params: RestPath,
          querystring: RefQuery,
          response: { 200: Contents, ...errors(400) },
        },
      },
      contents,
    );

    r.get(
      `${form.prefix}/raw/*`,
      {
        config: { repo: 'repo' },
        compress: false,
        schema: {
          tags,
          summary: 'A file’s bytes at {ref}/{path}, streamed (read access)',
          description:
            '`ETag` is the blob sha in double quotes (If-None-Match → 304); one `Range: bytes=` range → 206 with Content-Range ' +
            '(unsatisfiable: 416). `Content-Type` is `text/plain; charset=utf-8` for text (NUL-free UTF-8), the image type ' +
            'for .png/.jpg/.jpeg/.gif/.webp, else `application/octet-stream`. ' +
            BYTES +
            ' The ref is the longest branch or tag that prefixes the path (a branch before a tag), else a sha. ' +
            REFS,
          params: RestPath,
          response: {
            200: Type.String({ description: 'the bytes' }),
            ...errors(400, 416),
          },
        },
      },
      async (request, reply) => {
        const { viewer, at, params } = repoRequest<Rest>(request);
        return serveRaw(deps, viewer, at, params['*'], request, reply);
      },
    );

    r.get(
      `${form.prefix}/archive/*`,
      {
        config: { repo: 'repo', longLived: true },
        compress: false,
        schema: {
          tags,
          summary: 'A tar.gz or zip archive of {ref}: archive/{ref}.tar.gz or archive/{ref}.zip, streamed (read access)',
          description:
            '`git archive` with the prefix `{repo_slug}-{first 7 hex digits of the commit}/` and `Content-Disposition: ' +
            'attachment`. ' +
            BYTES +
            ' ' +
            REFS,
          params: RestPath,
          response: { 200: Type.String({ description: 'the archive' }), ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer, at, params } = repoRequest<Rest>(request);
        return serveArchive(deps, viewer, at, params['*'], reply);
      },
    );

    r.get(
      `${form.prefix}/branches/*`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'One branch: its tip and whether a protection matches it (read access)',
          description: 'The name may hold `/`. A name git refuses is 400; a branch that does not exist is 404.',
          params: RestPath,
          response: { 200: Branch, ...errors(400) },
        },
      },
      async (request) => {
        const { viewer, at, params } = repoRequest<Rest>(request);
        return getBranch(deps, viewer, at, params['*']);
      },
    );

    r.post(
      `${form.prefix}/branches`,
      {
        schema: {
          tags,
          summary: 'Create a branch (write access)',
          description:
            '`from` is a ref (default: the default branch). 409 `conflict` when the branch exists; a name matching a branch ' +
            'protection may be created only with maintain level (else 403 `forbidden`); a `from` that does not exist is 404. ' +
            'Emits `branch-pushed` as a push does.',
          params: RepoPath,
          body: CreateBranchBody,
          response: { 201: Branch, ...errors(400, 403, 409) },
        },
      },
      async (request, reply) => {
        const { viewer, ref } = repoRequest(request);
        return reply.status(201).send(await createBranch(deps, viewer, ref, request.body));
      },
    );

    r.delete(
      `${form.prefix}/branches/*`,
      {
        schema: {
          tags,
          summary: 'Delete a branch (write access)',
          description:
            'The default branch and a branch matching a protection are 403 `forbidden`, with a detail that says why. Emits ' +
            '`branch-pushed` (after: 40 zeros) as a push does.',
          params: RestPath,
          response: { 204: { type: 'null' }, ...errors(400, 403, 409) },
        },
      },
      async (request, reply) => {
        const { viewer, ref, params } = repoRequest<Rest>(request);
        await deleteBranch(deps, viewer, ref, params['*']);
        return reply.status(204).send();
      },
    );

    r.get(
      `${form.prefix}/tags`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'Tags, sorted by name (read access)',
          description: 'Annotated tags carry their message and tagger; lightweight ones null. `commit_sha` is the peeled commit.',
          params: RepoPath,
          querystring: TagsQuery,
          response: { 200: Page(Tag) },
        },
      },
      pagedRepoList(({ viewer, at }, page) => listTags(deps, viewer, at, page)),
    );
  }
}
