import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { deleteNamed, getNamed, listNamed, type NamedKind, putNamed } from './secrets.ts';

const Time = Type.String({ format: 'date-time' });
const Secret = Type.Object({ name: Type.String(), created_at: Time, updated_at: Time }, { additionalProperties: false });
const Variable = Type.Object(
  { name: Type.String(), value: Type.String(), created_at: Time, updated_at: Time },
  { additionalProperties: false },
);
const NameParam = { name: Type.String({ minLength: 1, maxLength: 100 }) };
const NAMES =
  'Names are `[A-Z_][A-Z0-9_]*` (at most 100), not starting with `WEFT_` or `GITHUB_` (400 otherwise); values at most 48 KiB.';

const RULES: Record<NamedKind, { read: string; write: string }> = {
  secret: {
    read:
      'Maintain level (403 otherwise; 404 without read access). Only names and times: a secret’s value is never ' +
      'answered. ' +
      NAMES,
    write:
      'Maintain level; 403 repo_archived / team_inactive. The value is sealed with the server secret and given to ' +
      'jobs as `secrets.NAME` (not to runs of pulls from forks), masked as `***` in logs (also its base64 and ' +
      'URL-encoded forms). ' +
      NAMES,
  },
  variable: {
    read: `Read access. ${NAMES}`,
    write: `Maintain level; 403 repo_archived / team_inactive. Given to every job as \`vars.NAME\`. ${NAMES}`,
  },
};

/** Secrets and variables of a repo (docs/ci.md "Secrets and variables"). */
export async function ciSecretsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ci'];
  const at = (request: FastifyRequest) => {
    const p = request.params as RepoParams & { name: string };
    return { viewer: requireViewer(request), ref: repoRef(p), name: p.name };
  };

  for (const form of REPO_FORMS) {
    for (const [kind, plural, schema] of [
      ['secret', 'secrets', Secret],
      ['variable', 'variables', Variable],
    ] as const) {
      r.get(
        `${form.prefix}/${plural}`,
        {
          schema: {
            tags,
            summary: `A repo's CI ${plural}, by name`,
            description: RULES[kind].read,
            params: repoParamsSchema(form),
            response: { 200: Type.Object({ results: Type.Array(schema) }), ...errors(403) },
          },
        },
        async (request) => {
          const { viewer, ref } = at(request);
          return { results: await listNamed(deps, viewer, ref, kind) };
        },
      );
      r.get(
        `${form.prefix}/${plural}/:name`,
        {
          schema: {
            tags,
            summary: `A CI ${kind} of a repo`,
            description: RULES[kind].read,
            params: repoParamsSchema(form, NameParam),
            response: { 200: schema, ...errors(400, 403) },
          },
        },
        async (request) => {
          const { viewer, ref, name } = at(request);
          return getNamed(deps, viewer, ref, kind, name);
        },
      );
      r.put(
        `${form.prefix}/${plural}/:name`,
        {
          schema: {
            tags,
            summary: `Set a CI ${kind} of a repo (created or replaced)`,
            description: RULES[kind].write,
            params: repoParamsSchema(form, NameParam),
            body: Type.Object({ value: Type.String({ maxLength: 48 * 1024 }) }, { additionalProperties: false }),
            response: { 200: schema, ...errors(400, 403) },
          },
        },
        async (request) => {
          const { viewer, ref, name } = at(request);
          return putNamed(deps, viewer, ref, kind, name, request.body.value);
        },
      );
      r.delete(
        `${form.prefix}/${plural}/:name`,
        {
          schema: {
            tags,
            summary: `Remove a CI ${kind} of a repo`,
            description: RULES[kind].write,
            params: repoParamsSchema(form, NameParam),
            response: { 204: Type.Null(), ...errors(400, 403) },
          },
        },
        async (request, reply) => {
          const { viewer, ref, name } = at(request);
          await deleteNamed(deps, viewer, ref, kind, name);
          return reply.status(204).send(null);
        },
      );
    }
  }
}
