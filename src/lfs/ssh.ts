/**
 * `git-lfs-authenticate {path} {upload|download}` over SSH (docs/lfs.md): answers the LFS API's
 * address and a short-lived signed header, after the same access decision as a git command over
 * SSH (a deploy key reaches its own repo, read-only unless it may push).
 */
import { gitRefusal, gitRepoAccess } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import type { Viewer } from '../viewer.ts';
import { lfsBase } from './routes.ts';
import { issueLfsToken } from './token.ts';

export interface LfsAuthCommand {
  kind: 'team' | 'user';
  owner: string;
  slug: string;
  operation: 'upload' | 'download';
}

const RE =
  /^git-lfs-authenticate +'?\/?(teams|users)\/([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,104})'? +(upload|download)( +.*)?$/;

export function parseLfsAuthenticate(command: string): LfsAuthCommand | null {
  const m = RE.exec(command.trim());
  if (!m) return null;
  const slug = m[3]!.endsWith('.git') ? m[3]!.slice(0, -4) : m[3]!;
  if (!slug) return null;
  return { kind: m[1] === 'teams' ? 'team' : 'user', owner: m[2]!, slug, operation: m[4] as 'upload' | 'download' };
}

/** The JSON git-lfs reads, or the refusal to print. */
export async function lfsAuthenticate(
  deps: Deps,
  viewer: Viewer,
  deploy: { repoUuid: string; readOnly: boolean } | null,
  cmd: LfsAuthCommand,
): Promise<{ json: Record<string, unknown> } | { refusal: string }> {
  const write = cmd.operation === 'upload';
  let access = await gitRepoAccess(deps.db, deploy ? null : viewer, cmd.kind, cmd.owner, cmd.slug);
  if (deploy && access) {
    const level = access.repo.uuid !== deploy.repoUuid ? 'none' : deploy.readOnly ? 'read' : 'write';
    access = { ...access, level };
  }
  const refusal =
    deploy && write && access?.level === 'read'
      ? { detail: 'This deploy key is read-only: it cannot upload.' }
      : gitRefusal(viewer, access, write);
  if (refusal) return { refusal: refusal.detail };
  const { token, expiresIn } = issueLfsToken(deps.secret, {
    user: viewer.uuid,
    repo: access!.repo.uuid,
    level: write ? 'write' : 'read',
  });
  return {
    json: {
      href: lfsBase(deps.config.publicUrl, cmd.kind, cmd.owner, access!.repo.slug),
      header: { 'X-Weft-LFS-Token': token },
      expires_in: expiresIn,
    },
  };
}
