/**
 * One `git fetch` of every branch and tag from a remote into a repo, or one `git push --mirror`
 * (docs/bring-in.md). The fetch runs with a timeout, its object store watched while it receives:
 * growing past the quota left kills it (nothing is kept then: the caller cleans up).
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { dirSize } from '../git/bare-store.ts';
import { spawnGit } from '../git/run.ts';
import { type GitRemoteCall, scrub } from './remote.ts';

const WATCH_MS = 250;

export class RemoteGitError extends Error {}

interface Run {
  code: number;
  stderr: string;
  over: boolean;
  timedOut: boolean;
}

function runWatched(
  args: string[],
  call: GitRemoteCall,
  timeoutMs: number,
  watch: { dir: string; limit: number } | null,
  onProgress?: (line: string) => void,
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawnGit(args, call.env, timeoutMs);
    const started = Date.now();
    let stderr = '';
    let over = false;
    let busy = false;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-16_384);
      const lines = chunk.split(/[\r\n]/).filter((l) => /\d+%/.test(l));
      if (lines.length && onProgress) onProgress(scrub(lines[lines.length - 1]!.replace(/^remote: */, ''), call.secrets));
    });
    child.stdout!.resume();
    child.stdin!.end();
    const timer = watch
      ? setInterval(() => {
          if (busy) return;
          busy = true;
          void dirSize(watch.dir)
            .then((size) => {
              if (size > watch.limit && !over) {
                over = true;
                child.kill('SIGKILL');
              }
            })
            .finally(() => (busy = false));
        }, WATCH_MS)
      : null;
    child.on('close', (code, signal) => {
      if (timer) clearInterval(timer);
      resolve({
        code: code ?? 1,
        stderr,
        over,
        timedOut: !over && signal === 'SIGKILL' && Date.now() - started >= timeoutMs - 50,
      });
    });
  });
}

function failure(run: Run, call: GitRemoteCall, what: string): RemoteGitError {
  if (run.timedOut) return new RemoteGitError(`timeout: the ${what} took longer than allowed`);
  const said = scrub(
    run.stderr
      .split('\n')
      .filter((l) => !/\d+%/.test(l))
      .join('\n'),
    call.secrets,
  );
  if (/returned error: 30[1278]/.test(said))
    return new RemoteGitError(`redirect: the source redirects; use the URL it redirects to (${said})`);
  return new RemoteGitError(`${what} failed: ${said || `git exited with ${run.code}`}`);
}

/**
 * Fetches every branch and tag of the remote into `gitDir`, the refs following the remote's
 * exactly (`--prune`, forced updates). `quotaLeft`: bytes the object store may grow by; past
 * them the fetch is killed and `RemoteGitError('quota_exceeded…')` thrown.
 */
export async function fetchAll(
  gitDir: string,
  call: GitRemoteCall,
  opts: { quotaLeft: number; sizeBefore: number; timeoutMs: number; onProgress?: (line: string) => void },
): Promise<void> {
  const args = [
    `--git-dir=${gitDir}`,
    ...call.configArgs,
    'fetch',
    '--prune',
    '--progress',
    '--no-write-fetch-head',
    '--no-recurse-submodules',
    call.url,
    '+refs/heads/*:refs/heads/*',
    '+refs/tags/*:refs/tags/*',
  ];
  const run = await runWatched(
    args,
    call,
    opts.timeoutMs,
    { dir: join(gitDir, 'objects'), limit: opts.sizeBefore + opts.quotaLeft },
    opts.onProgress,
  );
  // a fetch quicker than the watch is measured once more when it ends
  if (run.over || (run.code === 0 && (await dirSize(join(gitDir, 'objects'))) > opts.sizeBefore + opts.quotaLeft)) {
    await dropTemporaryPacks(gitDir);
    throw new RemoteGitError(`quota_exceeded: the source needs more than the ${opts.quotaLeft} bytes the repo quota leaves`);
  }
  if (run.code !== 0) {
    await dropTemporaryPacks(gitDir);
    throw failure(run, call, 'fetch');
  }
}

/** Pushes every branch and tag of `gitDir` to the remote, deleting what it has beyond them. */
export async function pushMirror(gitDir: string, call: GitRemoteCall, timeoutMs: number): Promise<void> {
  const args = [
    `--git-dir=${gitDir}`,
    ...call.configArgs,
    'push',
    '--prune',
    '--force',
    '--porcelain',
    call.url,
    '+refs/heads/*:refs/heads/*',
    '+refs/tags/*:refs/tags/*',
  ];
  const run = await runWatched(args, call, timeoutMs, null);
  if (run.code !== 0) throw failure(run, call, 'push');
}

/** Removes the half-received packs a killed fetch left (`objects/pack/tmp_*`, `.keep`). */
async function dropTemporaryPacks(gitDir: string): Promise<void> {
  const packs = join(gitDir, 'objects', 'pack');
  const names = await readdir(packs).catch(() => [] as string[]);
  for (const n of names) if (n.startsWith('tmp_') || n.endsWith('.keep')) await rm(join(packs, n), { force: true });
}
