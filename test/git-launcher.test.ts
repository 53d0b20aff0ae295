/**
 * Buffered git commands start from the launcher, a small helper process (src/git/launcher.ts,
 * docs/architecture.md "Git from a small process"): the same answers as from the server, a
 * launcher that dies is replaced (the commands it was running are refused with 503), it exits
 * when its server goes away, and `WEFT_GIT_LAUNCHER=off` runs git from the server.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AppError } from '../src/errors.ts';
import { launcher } from '../src/git/launcher.ts';
import { git, GitError } from '../src/git/run.ts';
import { processAlive, waitUntil } from './common.ts';

const alive = processAlive;
const parentOf = (pid: number) => Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' }).trim());

describe('git from the launcher', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'weft-launcher-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('answers as git does: output, input, exit codes, a clean environment', async () => {
    const repo = join(dir, 'r.git');
    await git(null, ['init', '--quiet', '--bare', repo]);
    const via = launcher();
    assert.ok(via?.pid, 'the launcher runs');
    assert.equal(parentOf(via.pid!), process.pid);
    const blob = await git(repo, ['hash-object', '-w', '--stdin'], { input: 'hello\n' });
    assert.equal(blob.stdout.trim(), 'ce013625030ba8dba906f756967f9e9ca394464a');
    assert.equal((await git(repo, ['cat-file', '-p', blob.stdout.trim()])).stdout, 'hello\n');
    // the server's environment does not reach git; the call's additions do
    process.env.WEFT_LAUNCHER_PROBE = 'leak';
    const env = await git(null, ['var', 'GIT_AUTHOR_IDENT'], { env: { GIT_AUTHOR_NAME: 'Ada' } });
    assert.match(env.stdout, /^Ada <weft@localhost>/);
    delete process.env.WEFT_LAUNCHER_PROBE;
    // a failure is a GitError with git's code and stderr; an expected code is an answer
    const missing = await git(repo, ['rev-parse', '--verify', '-q', 'refs/heads/nope'], { okCodes: [1] });
    assert.equal(missing.code, 1);
    await assert.rejects(git(repo, ['cat-file', '-p', 'nope']), (err: unknown) => {
      assert.ok(err instanceof GitError);
      assert.equal(err.result.code, 128);
      assert.match(err.result.stderr, /nope/);
      return true;
    });
    // a timeout kills git: code -1
    await assert.rejects(git(null, ['-c', 'alias.wait=!sleep 5', 'wait'], { timeoutMs: 200 }), (err: unknown) => {
      assert.ok(err instanceof GitError);
      assert.equal(err.result.code, -1);
      return true;
    });
    // 2 MB of output comes back whole
    const big = 'x'.repeat(2 * 1024 * 1024);
    const bigBlob = (await git(repo, ['hash-object', '-w', '--stdin'], { input: big })).stdout.trim();
    assert.equal((await git(repo, ['cat-file', 'blob', bigBlob])).stdout.length, big.length);
  });

  it('a launcher killed with a command in flight: that command is a 503, the next starts a new launcher', async () => {
    const first = launcher()!;
    const pending = git(null, ['-c', 'alias.wait=!sleep 2', 'wait']);
    await new Promise((r) => setTimeout(r, 200));
    process.kill(first.pid!, 'SIGKILL');
    await assert.rejects(pending, (err: unknown) => {
      assert.ok(err instanceof AppError);
      assert.equal(err.status, 503);
      return true;
    });
    const answer = await git(null, ['--version']);
    assert.match(answer.stdout, /^git version/);
    const second = launcher()!;
    assert.notEqual(second.pid, first.pid);
  });

  it('the launcher exits when its server goes, after what it runs has finished', async () => {
    const code = `
      const { git } = await import(${JSON.stringify(join(import.meta.dirname, '..', 'src', 'git', 'run.ts'))});
      const { launcher } = await import(${JSON.stringify(join(import.meta.dirname, '..', 'src', 'git', 'launcher.ts'))});
      await git(null, ['--version']);
      console.log(launcher().pid);
      void git(null, ['-c', 'alias.wait=!sleep 1 && touch ' + ${JSON.stringify(join(dir, 'finished'))}, 'wait']).catch(() => {});
      setTimeout(() => process.exit(0), 100);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += String(c)));
    await new Promise((r) => child.on('exit', r));
    const pid = Number(out.trim());
    assert.ok(pid > 0, out);
    await waitUntil(() => !alive(pid), 10_000, 'the launcher to exit');
    // the command it was running when its server left ran to its end
    assert.ok(existsSync(join(dir, 'finished')));
  });

  it('WEFT_GIT_LAUNCHER=off: git starts from the server itself', async () => {
    process.env.WEFT_GIT_LAUNCHER = 'off';
    try {
      assert.equal(launcher(), null);
      assert.match((await git(null, ['--version'])).stdout, /^git version/);
    } finally {
      delete process.env.WEFT_GIT_LAUNCHER;
    }
  });
});
