import { type TSchema, type TString, Type } from '@sinclair/typebox';
import type { RepoRef } from '../viewer.ts';

/**
 * Every repo sub-resource exists in two forms (docs/behaviour.md "Conventions"): under a team and under a
 * user. Routes register once per form with `forEachRepoForm`.
 */
const Slug = Type.String({ minLength: 1, maxLength: 100 });

export interface RepoForm {
  kind: 'team' | 'user';
  prefix: string;
  params: Record<string, TString>;
}

export const REPO_FORMS: RepoForm[] = [
  {
    kind: 'team',
    prefix: '/teams/:team_slug/repos/:repo_slug',
    params: { team_slug: Slug, repo_slug: Slug },
  },
  {
    kind: 'user',
    prefix: '/users/:username/repos/:repo_slug',
    params: { username: Slug, repo_slug: Slug },
  },
];

export type RepoParams = { team_slug?: string; username?: string; repo_slug: string };

export function repoRef(params: RepoParams): RepoRef {
  if (params.team_slug !== undefined) return { ownerKind: 'team', ownerName: params.team_slug, repoSlug: params.repo_slug };
  return { ownerKind: 'user', ownerName: params.username ?? '', repoSlug: params.repo_slug };
}

/** The params schema of a repo form plus extra path params. */
export function repoParamsSchema(form: RepoForm, extra: Record<string, TSchema> = {}) {
  return Type.Object({ ...form.params, ...extra });
}
