/**
 * One command of an SSH session (README "Git over SSH"): `git-upload-pack` or `git-receive-pack`
 * of a repo path, with the same access decision (`gitRepoAccess`, `gitRefusal`), push rules and
 * push bookkeeping (src/code/receive.ts) as smart HTTP. Anything else is refused with a message
 * on stderr and exit status 1. No shell is ever involved: git runs from an argument array.
 */
import type { ChildProcess } from 'node:child_process';
import type { ServerChannel } from 'ssh2';
import { gitRefusal, gitRepoAccess } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { BareGitStore } from '../git/bare-store.ts';
import type { DeployKeyGrant } from '../sshkeys/deploy-keys.ts';
import { protocolEnv, runReceivePack, startLimitedGit } from '../code/receive.ts';
import type { Viewer } from '../viewer.ts';

export type GitService = 'git-upload-pack' | 'git-receive-pack';

export interface GitCommand {
  service: GitService;
  kind: 'team' | 'user';
  owner: string;
  slug: string;
}

const COMMAND_RE =
  /^(git-upload-pack|git-receive-pack|git upload-pack|git receive-pack) +'?\/?(teams|users)\/([A-Za-z0-9_.-]{1,100})\/([A-Za-z0-9_.-]{1,104})'?$/;

/** The git command an SSH client asked for, or null for anything else. */
export function parseGitCommand(command: string): GitCommand | null {
  const match = COMMAND_RE.exec(command.trim());
  if (!match) return null;
  const [, verb, kinds, owner, repo] = match as unknown as [string, string, string, string, string];
  const slug = repo.endsWith('.git') ? repo.slice(0, -4) : repo;
  if (!slug) return null;
  return { service: verb.replace(' ', '-') as GitService, kind: kinds === 'teams' ? 'team' : 'user', owner, slug };
}

/** Ends a channel with a message on stderr (`weft: …`) and exit status 1. */
export function refuse(channel: ServerChannel, message: string): void {
  channel.stderr.write(`weft: ${message}\n`);
  channel.exit(1);
  channel.end();
}

export const ONLY_GIT = 'only git-upload-pack and git-receive-pack are served here (use git clone/fetch/push).';

/**
 * Runs one git command for `viewer` on the channel. The viewer was re-read from its key just
 * before (a deleted key or a deactivated user gets no command). `env` holds what the client set
 * (GIT_PROTOCOL for protocol v2); `client` is its address, for the git process limits.
 */
export async function runGitCommand(
  deps: Deps,
  viewer: Viewer,
  command: GitCommand,
  env: Record<string, string>,
  client: string,
  channel: ServerChannel,
  deploy: DeployKeyGrant | null = null,
): Promise<void> {
  const write = command.service === 'git-receive-pack';
  let access = await gitRepoAccess(deps.db, deploy ? null : viewer, command.kind, command.owner, command.slug);
  if (deploy && access) {
    // a deploy key reaches its own repo only: fetch, and push when it is not read-only
    const level = access.repo.uuid !== deploy.repoUuid ? 'none' : deploy.readOnly ? 'read' : 'write';
    access = { ...access, level };
  }
  const refusal =
    deploy && write && access?.level === 'read'
      ? { detail: 'This deploy key is read-only: it cannot push.' }
      : gitRefusal(viewer, access, write);
  if (refusal) return refuse(channel, refusal.detail);
  const store = deps.git instanceof BareGitStore ? deps.git : null;
  if (!store || !store.exists(access!.repo.uuid)) return refuse(channel, 'The repo has no git storage.');
  const gitEnv = protocolEnv(env.GIT_PROTOCOL);
  const connect = (child: ChildProcess) => {
    channel.pipe(child.stdin!);
    child.stdout!.pipe(channel, { end: false });
    child.stderr!.pipe(channel.stderr, { end: false });
    child.stdin!.on('error', () => undefined); // the client went away: git is killed below
    channel.on('close', () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  };
  let code: number;
  try {
    if (write) {
      code = await runReceivePack(deps, store, access!.repo.uuid, viewer, { client, env: gitEnv, statelessRpc: false, connect });
    } else {
      const child = await startLimitedGit(deps, client, ['upload-pack', store.pathOf(access!.repo.uuid)], gitEnv);
      const closed = new Promise<number>((resolve) => child.once('close', (c) => resolve(c ?? 1)));
      connect(child);
      code = await closed;
    }
  } catch (err) {
    // over the git process caps (the 503 of smart HTTP): say so, as HTTP does
    if (err instanceof AppError) return refuse(channel, err.detail);
    throw err;
  }
  channel.exit(code);
  channel.end();
}
