import { PassThrough } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { repoAt } from '../http/repo-routes.ts';
import { errors } from '../http/route-schemas.ts';
import { ErrorBody, Page, PageQuery } from '../http/schemas.ts';
import { Asset, AssetParam, AssetQuery, CreateReleaseBody, Release, TagParam, UpdateReleaseBody } from './schemas.ts';
import {
  createRelease,
  deleteAsset,
  deleteRelease,
  getRelease,
  latestRelease,
  listReleases,
  openAsset,
  updateRelease,
  uploadAsset,
} from './service.ts';

type Path = RepoParams & { tag: string; asset_uuid: string };

const READ = 'Read access (404 otherwise). Drafts are seen by write access only (404 for others).';
const WRITE =
  'Write access (403; 404 without read access); 403 repo_archived / team_inactive. Events `release-published`, ' +
  '`release-updated`, `release-deleted` (repo scope) with `{repo_uuid, repo: {uuid, full_name}, release: {uuid, ' +
  'tag_name, name, prerelease}}`, for published releases only.';

/** The request body as a stream of its own (a refusal destroys it, never the socket). */
function bodyStream(request: FastifyRequest): PassThrough {
  const raw = request.raw;
  const out = new PassThrough();
  raw.on('error', (err) => out.destroy(err));
  raw.on('close', () => {
    if (!raw.complete) out.destroy(new Error('the client went away mid-body'));
  });
  return raw.pipe(out);
}

/** Releases (docs/releases.md): `{repo}/releases`, one by tag, `latest`, and assets. */
export async function releasesRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['releases'];
  const at = (request: FastifyRequest) => ({ viewer: requireViewer(request), p: request.params as Path });

  for (const form of REPO_FORMS) {
    const base = `${form.prefix}/releases`;
    r.get(
      base,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: "A repo's releases, newest first",
          description: READ,
          params: repoParamsSchema(form),
          querystring: Type.Object(PageQuery),
          response: { 200: Page(Release), ...errors(400) },
        },
      },
      async (request, reply) => {
        const { viewer } = at(request);
        const page = pageParams(request.query);
        return pageOf(request, reply, page, await listReleases(deps, viewer, repoAt(request), page));
      },
    );
    r.post(
      base,
      {
        schema: {
          tags,
          summary: 'Create a release',
          description:
            `${WRITE} A tag that does not exist is created at \`target_commitish\` (default: the default branch; 404 when it ` +
            'names nothing) when the release is published, with its `branch-pushed` event. 409 already_exists when the tag ' +
            'has a release. 400 for a tag name git refuses.',
          params: repoParamsSchema(form),
          body: CreateReleaseBody,
          response: { 201: Release, ...errors(400, 403, 409) },
        },
      },
      async (request, reply) => {
        const { viewer, p } = at(request);
        return reply.status(201).send(await createRelease(deps, viewer, repoRef(p), request.body));
      },
    );
    r.get(
      `${base}/latest`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'The latest release',
          description: `${READ} The most recently published release that is neither a draft nor a prerelease; 404 when none.`,
          params: repoParamsSchema(form),
          response: { 200: Release, ...errors(404) },
        },
      },
      async (request) => latestRelease(deps, at(request).viewer, repoAt(request)),
    );
    r.get(
      `${base}/:tag`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'One release, by its tag',
          description: READ,
          params: repoParamsSchema(form, TagParam),
          response: { 200: Release, ...errors(404) },
        },
      },
      async (request) => {
        const { viewer, p } = at(request);
        return getRelease(deps, viewer, repoAt(request), p.tag);
      },
    );
    r.patch(
      `${base}/:tag`,
      {
        schema: {
          tags,
          summary: 'Change a release (or publish a draft)',
          description:
            `${WRITE} Setting \`draft\` false publishes a draft (its tag created when missing, \`release-published\`); a ` +
            'published release cannot become a draft again (400). 404 for an unknown tag.',
          params: repoParamsSchema(form, TagParam),
          body: UpdateReleaseBody,
          response: { 200: Release, ...errors(400, 403, 409) },
        },
      },
      async (request) => {
        const { viewer, p } = at(request);
        return updateRelease(deps, viewer, repoRef(p), p.tag, request.body);
      },
    );
    r.delete(
      `${base}/:tag`,
      {
        schema: {
          tags,
          summary: 'Delete a release and its assets (the tag stays)',
          description: `${WRITE} 404 for an unknown tag. The assets' bytes leave the quota.`,
          params: repoParamsSchema(form, TagParam),
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const { viewer, p } = at(request);
        await deleteRelease(deps, viewer, repoRef(p), p.tag);
        return reply.status(204).send();
      },
    );
    r.get(
      `${base}/:tag/assets/:asset_uuid`,
      {
        config: { repo: 'repo', longLived: true },
        schema: {
          tags,
          summary: "Download an asset's bytes (counted)",
          description: `${READ} The bytes, streamed, with the asset's Content-Type; each download adds one to \`download_count\`.`,
          params: repoParamsSchema(form, AssetParam),
          response: { 200: { description: 'the bytes' } as never, ...errors(404) },
        },
      },
      async (request, reply) => {
        const { viewer, p } = at(request);
        const asset = await openAsset(deps, viewer, repoAt(request), p.tag, p.asset_uuid);
        reply.raw.on('close', () => asset.stream.destroy());
        return reply
          .header('content-type', asset.content_type)
          .header('content-length', asset.size)
          .header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent(asset.name)}`)
          .header('x-content-type-options', 'nosniff')
          .header('content-security-policy', 'sandbox')
          .send(asset.stream);
      },
    );
    r.delete(
      `${base}/:tag/assets/:asset_uuid`,
      {
        schema: {
          tags,
          summary: 'Delete an asset',
          description: `${WRITE} 404 for an unknown release or asset. Its bytes leave the quota.`,
          params: repoParamsSchema(form, AssetParam),
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const { viewer, p } = at(request);
        await deleteAsset(deps, viewer, repoRef(p), p.tag, p.asset_uuid);
        return reply.status(204).send();
      },
    );
  }

  // The asset upload reads its body itself: its own parser, in its own context.
  await app.register(async (child) => {
    child.removeAllContentTypeParsers();
    child.addContentTypeParser('*', (_request, _payload, done) => done(null));
    const c = child.withTypeProvider<TypeBoxTypeProvider>();
    for (const form of REPO_FORMS) {
      c.post(
        `${form.prefix}/releases/:tag/assets`,
        {
          bodyLimit: Number.MAX_SAFE_INTEGER,
          config: { rateLimit: 'api:upload', longLived: true },
          schema: {
            tags,
            summary: 'Upload an asset (raw body, streamed)',
            description:
              `${WRITE} The body is the file, with its Content-Type, named by ?name=; streamed to the blob store (stored once ` +
              "per content). Beyond the repo's max_disk_bytes: 413 quota_exceeded, nothing kept. 409 already_exists when the " +
              'release has an asset of that name; 404 for an unknown tag.',
            params: repoParamsSchema(form, TagParam),
            querystring: AssetQuery,
            consumes: ['application/octet-stream', '*/*'],
            body: {
              content: { 'application/octet-stream': { schema: { description: 'the file bytes' } } },
            } as never,
            response: {
              201: Asset,
              ...errors(400, 403, 409),
              413: { ...ErrorBody, 'x-response-description': 'quota_exceeded: over the repo max_disk_bytes' } as never,
            },
          },
        },
        async (request, reply) => {
          const viewer = requireViewer(request);
          const p = request.params as Path;
          const type = String(request.headers['content-type'] ?? 'application/octet-stream').slice(0, 255);
          try {
            const asset = await uploadAsset(
              deps,
              viewer,
              repoRef(p),
              p.tag,
              (request.query as { name: string }).name,
              type,
              bodyStream(request),
            );
            return reply.status(201).send(asset);
          } catch (err) {
            if (!request.raw.complete) reply.header('connection', 'close');
            throw err;
          }
        },
      );
    }
  });
}
