import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BareGitStore } from '../src/git/bare-store.ts';
import { launcher } from '../src/git/launcher.ts';
import { git as runGit } from '../src/git/run.ts';
import type { TestApp } from './helpers.ts';

/**
 * The real git client against a real listening server: every command runs with a temp HOME,
 * no system configuration, no prompts, and a fixed identity.
 */
export interface GitClient {
  home: string;
  base: string;
  run(
    args: string[],
    opts?: { cwd?: string; env?: Record<string, string>; ok?: boolean },
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  /** clone URL with the token as the Basic password (or anonymous when token is null) */
  url(path: string, token: string | null): string;
  tmp(name: string): string;
  cleanup(): void;
}

export async function gitClient(t: TestApp): Promise<GitClient> {
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const home = mkdtempSync(join(tmpdir(), 'weft-git-client-'));
  writeFileSync(
    join(home, '.gitconfig'),
    '[user]\n\tname = Tester\n\temail = tester@example.com\n[init]\n\tdefaultBranch = main\n',
  );
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    LC_ALL: 'C',
  };
  // the client's git starts from the server's launcher when it runs (src/git/launcher.ts): a
  // fork of this large test process costs tens of milliseconds of kernel time
  const run: GitClient['run'] = (args, opts = {}) =>
    new Promise((resolve, reject) => {
      const done = (err: { code?: number | string | null } | null, stdout: string, stderr: string) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        if (code !== 0 && opts.ok !== false) reject(new Error(`git ${args.join(' ')} → ${code}\n${stderr}`));
        else resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      };
      const cwd = opts.cwd ?? home;
      const fullEnv = { ...env, ...opts.env };
      const via = launcher();
      if (via) {
        via.run({ args, cwd, env: fullEnv, timeoutMs: 60_000, maxBuffer: 1 << 26 }).then(
          (reply) => done(reply.error, reply.stdout, reply.stderr),
          (err: Error) => reject(err),
        );
        return;
      }
      execFile('git', args, { cwd, env: fullEnv, timeout: 60_000, maxBuffer: 1 << 26, encoding: 'utf8' }, (err, stdout, stderr) =>
        done(err as { code?: number | string | null } | null, stdout, stderr),
      );
    });
  const base = address;
  return {
    home,
    base,
    run,
    url: (path, token) => {
      const u = new URL(path, base);
      if (token !== null) {
        u.username = 'x';
        u.password = token;
      }
      return u.toString();
    },
    tmp: (name) => join(home, name),
    cleanup: () => rmSync(home, { recursive: true, force: true }),
  };
}

/** A work tree with one commit per entry of `files` (path → content), on `branch`. */
export async function makeWorkTree(
  g: GitClient,
  name: string,
  commits: Array<Record<string, string>>,
  branch = 'main',
): Promise<string> {
  const dir = g.tmp(name);
  await g.run(['init', '-q', '-b', branch, dir]);
  await commitFiles(g, dir, commits);
  return dir;
}

export async function commitFiles(
  g: GitClient,
  dir: string,
  commits: Array<Record<string, string>>,
  message = 'change',
): Promise<void> {
  let i = 0;
  for (const files of commits) {
    for (const [path, content] of Object.entries(files)) {
      const parts = path.split('/');
      if (parts.length > 1) await g.run(['-C', dir, 'rev-parse']).catch(() => undefined);
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(dir, ...parts.slice(0, -1)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
    await g.run(['-C', dir, 'add', '-A']);
    await g.run(['-C', dir, 'commit', '-q', '-m', `${message} ${++i}`]);
  }
}

/**
 * Gives `branch` of a repo one new commit with real git, straight in its bare repository (made
 * when a test seeded only the repo's row): on the branch's tip, else on `onto`'s tip, else a
 * first commit. Each commit adds its own file, so commits made this way merge cleanly. For
 * tests whose subject is not git itself (the pull and merge rules): a merge must land a commit.
 */
export async function seedCommit(
  t: TestApp,
  repoUuid: string,
  branch: string,
  opts: { onto?: string; path?: string; content?: string } = {},
): Promise<string> {
  const store = t.deps.git as BareGitStore;
  const dir = store.pathOf(repoUuid);
  if (!store.exists(repoUuid)) await runGit(null, ['init', '--quiet', '--bare', '--template=', '--initial-branch=main', dir]);
  const base = (await store.branchSha(repoUuid, branch)) ?? (opts.onto ? await store.branchSha(repoUuid, opts.onto) : null);
  const path = opts.path ?? `seed-${randomUUID()}.txt`;
  // one `git fast-import` makes the blob, the tree, the commit and moves the branch (a process
  // each, as plumbing, cost six starts a commit: most of a pull test's time)
  const message = `seed ${path}\n`;
  const content = opts.content ?? `${path}\n`;
  const stream = [
    `commit refs/heads/${branch}`,
    'mark :1',
    'committer Weft <weft@localhost> now',
    `data ${Buffer.byteLength(message)}`,
    message,
    ...(base ? [`from ${base}`] : []),
    `M 100644 inline ${path}`,
    `data ${Buffer.byteLength(content)}`,
    content,
    'get-mark :1',
    '',
  ].join('\n');
  const out = await runGit(dir, ['fast-import', '--quiet', '--date-format=now'], { input: stream });
  return out.stdout.trim();
}
