import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { deleteIn, getIn, listIn, type NamedKind, putIn, type ScopeRef } from './secrets.ts';

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

const TEAM =
  'A team’s values are given to the jobs of every repo of the team; a repo’s own value of the same name overrides it. ';
const TEAM_RULES: Record<NamedKind, { read: string; write: string }> = {
  secret: {
    read:
      TEAM +
      'The team’s maintain level: the maintainer role or owner, or staff (403 to other members, 404 to outsiders). ' +
      'Only names and times: a secret’s value is never answered. ' +
      NAMES,
    write:
      TEAM +
      'The team’s maintain level (maintainer or owner; staff); 403 team_inactive. The value is sealed with the server ' +
      'secret and given to jobs as `secrets.NAME` (not to runs of pulls from forks), masked as `***` in logs. ' +
      NAMES,
  },
  variable: {
    read: `${TEAM}Any member of the team (404 to outsiders). ${NAMES}`,
    write: `${TEAM}The team’s maintain level (maintainer or owner; staff); 403 team_inactive. Given to every job as \`vars.NAME\`. ${NAMES}`,
  },
};

type Form = {
  prefix: string;
  params: (extra?: Record<string, TSchema>) => TObject;
  of: string;
  rules: Record<NamedKind, { read: string; write: string }>;
  at: (p: Record<string, string>) => ScopeRef;
};

const FORMS: Form[] = [
  ...REPO_FORMS.map((form): Form => ({
    prefix: form.prefix,
    params: (extra) => repoParamsSchema(form, extra),
    of: 'a repo',
    rules: RULES,
    at: (p) => ({ kind: 'repo', ref: repoRef(p as unknown as RepoParams) }),
  })),
  {
    prefix: '/teams/:team_slug',
    params: (extra) => Type.Object({ team_slug: Type.String({ minLength: 1, maxLength: 100 }), ...extra }),
    of: 'a team',
    rules: TEAM_RULES,
    at: (p) => ({ kind: 'team', teamSlug: p.team_slug! }),
  },
];

/** Secrets and variables of a repo and of a team (docs/ci.md "Secrets and variables"). */
export async function ciSecretsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['ci'];

  for (const form of FORMS) {
    const at = (request: FastifyRequest) => {
      const p = request.params as Record<string, string>;
      return { viewer: requireViewer(request), scope: form.at(p), name: p.name ?? '' };
    };
    for (const [kind, plural, schema] of [
      ['secret', 'secrets', Secret],
      ['variable', 'variables', Variable],
    ] as const) {
      r.get(
        `${form.prefix}/${plural}`,
        {
          schema: {
            tags,
            summary: `The CI ${plural} of ${form.of}, by name`,
            description: form.rules[kind].read,
            params: form.params(),
            response: { 200: Type.Object({ results: Type.Array(schema) }), ...errors(403) },
          },
        },
        async (request) => {
          const { viewer, scope } = at(request);
          return { results: await listIn(deps, viewer, scope, kind) };
        },
      );
      r.get(
        `${form.prefix}/${plural}/:name`,
        {
          schema: {
            tags,
            summary: `A CI ${kind} of ${form.of}`,
            description: form.rules[kind].read,
            params: form.params(NameParam),
            response: { 200: schema, ...errors(400, 403) },
          },
        },
        async (request) => {
          const { viewer, scope, name } = at(request);
          return getIn(deps, viewer, scope, kind, name);
        },
      );
      r.put(
        `${form.prefix}/${plural}/:name`,
        {
          schema: {
            tags,
            summary: `Set a CI ${kind} of ${form.of} (created or replaced)`,
            description: form.rules[kind].write,
            params: form.params(NameParam),
            body: Type.Object({ value: Type.String({ maxLength: 48 * 1024 }) }, { additionalProperties: false }),
            response: { 200: schema, ...errors(400, 403) },
          },
        },
        async (request) => {
          const { viewer, scope, name } = at(request);
          return putIn(deps, viewer, scope, kind, name, request.body.value);
        },
      );
      r.delete(
        `${form.prefix}/${plural}/:name`,
        {
          schema: {
            tags,
            summary: `Remove a CI ${kind} of ${form.of}`,
            description: form.rules[kind].write,
            params: form.params(NameParam),
            response: { 204: Type.Null(), ...errors(400, 403) },
          },
        },
        async (request, reply) => {
          const { viewer, scope, name } = at(request);
          await deleteIn(deps, viewer, scope, kind, name);
          return reply.status(204).send(null);
        },
      );
    }
  }
}
