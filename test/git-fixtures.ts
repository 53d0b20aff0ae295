import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  const run: GitClient['run'] = (args, opts = {}) =>
    new Promise((resolve, reject) => {
      execFile(
        'git',
        args,
        { cwd: opts.cwd ?? home, env: { ...env, ...opts.env }, timeout: 60_000, maxBuffer: 1 << 26 },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
          if (code !== 0 && opts.ok !== false) reject(new Error(`git ${args.join(' ')} → ${code}\n${stderr}`));
          else resolve({ code, stdout: String(stdout), stderr: String(stderr) });
        },
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
