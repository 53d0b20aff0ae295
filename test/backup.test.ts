/**
 * Issue 45, item 1: `weft backup` beside a live server under write load, `weft backup --verify`,
 * `weft restore` into an empty DATA_DIR and database of either kind (SQLite → PostgreSQL and
 * back), `git fsck` on the restored repos, the restored server starting and answering.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { loadOrCreateHostKey } from '../src/ssh/host-key.ts';
import { DIALECTS, freshStore } from './helpers.ts';
import { SERVER_ADMIN_TOKEN, type ServerProcess, runWeft, startServer, stopServer, storeEnv } from './server-process.ts';

type Store = Awaited<ReturnType<typeof freshStore>>;

const GIT_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Tester',
  GIT_AUTHOR_EMAIL: 'tester@example.com',
  GIT_COMMITTER_NAME: 'Tester',
  GIT_COMMITTER_EMAIL: 'tester@example.com',
  HOME: tmpdir(),
  LC_ALL: 'C',
};
const git = (args: string[], cwd?: string): string => execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' });

async function api(base: string, method: string, path: string, token: string, body?: unknown, raw?: Buffer) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(raw
        ? { 'content-type': 'application/octet-stream' }
        : body !== undefined
          ? { 'content-type': 'application/json' }
          : {}),
    },
    body: raw ? new Uint8Array(raw) : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text);
  } catch {
    /* raw content */
  }
  return { status: res.status, body: json, text };
}

const cliEnv = (store: Store, extra: Record<string, string> = {}) => ({ ...storeEnv(store), LOG_LEVEL: 'silent', ...extra });

const stores: Store[] = [];
const dirs: string[] = [];
after(async () => {
  for (const s of stores) await s.drop().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

for (const source of DIALECTS) {
  describe(`backup and restore from ${source}`, () => {
    it('a backup under write load restores every acknowledged write, on both databases; refusals; a damaged file fails --verify', async () => {
      const work = mkdtempSync(join(tmpdir(), 'weft-backup-test-'));
      dirs.push(work);
      const store = await freshStore(source);
      stores.push(store);
      // a host key (the server makes one when SSH is on) and a secret file: kept byte for byte
      const hostKey = loadOrCreateHostKey(store.dataDir, () => undefined);
      let server: ServerProcess | undefined = await startServer(store);
      const base = server.base;
      const created = await api(base, 'POST', '/users', SERVER_ADMIN_TOKEN, {
        username: 'owner',
        email: 'owner@example.com',
        password: 'correct horse battery',
      });
      assert.equal(created.status, 201, created.text);
      const tok = await api(base, 'POST', '/api-tokens', SERVER_ADMIN_TOKEN, { name: 't', username: 'owner' });
      assert.equal(tok.status, 201, tok.text);
      const token = tok.body.token as string;
      const repo = await api(base, 'POST', '/users/owner/repos', token, { name: 'main', slug: 'main', visibility: 'private' });
      assert.equal(repo.status, 201, repo.text);
      const cloneUrl = (b: string) => {
        const u = new URL('/git/users/owner/main.git', b);
        u.username = 'x';
        u.password = token;
        return u.toString();
      };
      const tree = join(work, 'tree');
      git(['init', '-q', '-b', 'main', tree]);
      const upload = await api(
        base,
        'POST',
        '/users/owner/repos/main/uploads?filename=a.bin',
        token,
        undefined,
        Buffer.from('blob bytes\n'),
      );
      assert.equal(upload.status, 201, upload.text);

      // the write load: repos, threads and pushes, one after another, each acknowledged in order
      const acked = { repos: [] as string[], threads: [] as number[], commits: [] as string[] };
      let stop = false;
      let i = 0;
      const load = (async () => {
        while (!stop) {
          i++;
          const r = await api(base, 'POST', '/users/owner/repos', token, { name: `r${i}`, slug: `r${i}`, visibility: 'private' });
          assert.equal(r.status, 201, r.text);
          acked.repos.push(`r${i}`);
          const th = await api(base, 'POST', '/users/owner/repos/main/threads', token, { title: `t${i}`, body: 'load' });
          assert.equal(th.status, 201, th.text);
          acked.threads.push(th.body.number as number);
          writeFileSync(join(tree, `f${i}.txt`), `${i}\n`);
          git(['add', '-A'], tree);
          git(['commit', '-q', '-m', `c${i}`], tree);
          git(['push', '-q', cloneUrl(base), 'main'], tree);
          acked.commits.push(git(['rev-parse', 'HEAD'], tree).trim());
        }
      })();
      while (acked.commits.length < 3) await new Promise((r) => setTimeout(r, 50));
      // a fork borrows the source's objects (alternates, by absolute path)
      const team = await api(base, 'POST', '/teams', token, { name: 'Forks', slug: 'forks' });
      assert.equal(team.status, 201, team.text);
      const fork = await api(base, 'POST', '/users/owner/repos/main/forks?team=forks', token);
      assert.equal(fork.status, 201, fork.text);
      const forkUuid = (fork.body.repo as { uuid: string }).uuid;
      const before = { repos: [...acked.repos], threads: [...acked.threads], commits: [...acked.commits] };
      const file = join(work, 'weft.backup');
      const started = Date.now();
      const made = await runWeft('cli', ['backup', '--out', file], cliEnv(store), 120_000);
      const took = Date.now() - started;
      stop = true;
      await load;
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stderr, /backup written to/);
      assert.ok(acked.commits.length > before.commits.length || took < 1000, 'writes went on during the backup');
      await stopServer(server, 'SIGTERM');
      server = undefined;

      const verified = await runWeft('cli', ['backup', '--verify', file], {});
      assert.equal(verified.code, 0, verified.stderr);
      assert.match(verified.stderr, /backup ok/);
      // an existing --out is refused
      assert.equal((await runWeft('cli', ['backup', '--out', file], cliEnv(store))).code, 2);
      // a damaged copy fails --verify, and restore reads nothing from it
      const damaged = join(work, 'damaged.backup');
      const bytes = readFileSync(file);
      const mid = Math.floor(bytes.length / 2);
      bytes[mid] = bytes[mid]! ^ 0xff;
      writeFileSync(damaged, bytes);
      const bad = await runWeft('cli', ['backup', '--verify', damaged], {});
      assert.equal(bad.code, 1, bad.stderr);
      assert.match(bad.stderr, /damaged|mismatch/);
      const cut = join(work, 'cut.backup');
      writeFileSync(cut, readFileSync(file).subarray(0, bytes.length - 200));
      assert.equal((await runWeft('cli', ['backup', '--verify', cut], {})).code, 1);

      for (const target of DIALECTS) {
        const into = await freshStore(target);
        stores.push(into);
        const restored = await runWeft('cli', ['restore', file], cliEnv(into), 120_000);
        assert.equal(restored.code, 0, `${source} → ${target}: ${restored.stderr}`);
        // a second restore into the now non-empty targets is refused, and changes nothing
        const again = await runWeft('cli', ['restore', file], cliEnv(into));
        assert.equal(again.code, 2, again.stderr);
        assert.match(again.stderr, /restore refused: .*not empty/);
        assert.equal(readFileSync(join(into.dataDir, 'ssh', 'host_ed25519_key'), 'utf8'), hostKey);
        for (const name of readdirSync(join(into.dataDir, 'git'))) {
          git(['fsck', '--no-progress', '--no-dangling'], join(into.dataDir, 'git', name));
        }
        const alternates = readFileSync(join(into.dataDir, 'git', `${forkUuid}.git`, 'objects', 'info', 'alternates'), 'utf8');
        assert.equal(alternates, `${join(into.dataDir, 'git', `${repo.body.uuid as string}.git`, 'objects')}\n`);
        const up = await startServer(into);
        try {
          for (const slug of before.repos) {
            const r = await api(up.base, 'GET', `/users/owner/repos/${slug}`, token);
            assert.equal(r.status, 200, `${source} → ${target}: repo ${slug}: ${r.text}`);
          }
          for (const n of before.threads) {
            const r = await api(up.base, 'GET', `/users/owner/repos/main/threads/${n}`, token);
            assert.equal(r.status, 200, `${source} → ${target}: thread ${n}: ${r.text}`);
          }
          const content = await api(
            up.base,
            'GET',
            `/users/owner/repos/main/uploads/${upload.body.uuid as string}/content`,
            token,
          );
          assert.equal(content.status, 200);
          assert.equal(content.text, 'blob bytes\n');
          // the restored repo clones over HTTP and holds every commit pushed before the backup began
          const clone = join(work, `clone-${target}`);
          git(['clone', '-q', '--mirror', cloneUrl(up.base), clone]);
          for (const sha of before.commits) git(['merge-base', '--is-ancestor', sha, 'main'], clone);
          const forked = await api(up.base, 'GET', '/teams/forks/repos/main', token);
          assert.equal(forked.status, 200, forked.text);
          const forkClone = join(work, `fork-${target}`);
          git([
            'clone',
            '-q',
            '--mirror',
            new URL(cloneUrl(up.base).replace('/users/owner/', '/teams/forks/')).toString(),
            forkClone,
          ]);
          git(['fsck', '--no-progress', '--no-dangling'], forkClone);
          // and takes writes
          const more = await api(up.base, 'POST', '/users/owner/repos', token, {
            name: 'after',
            slug: 'after',
            visibility: 'private',
          });
          assert.equal(more.status, 201, more.text);
        } finally {
          await stopServer(up, 'SIGTERM');
        }
      }

      // encrypted with WEFT_BACKUP_PASSPHRASE: --verify and restore need it; a wrong one fails
      const sealed = join(work, 'sealed.backup');
      const enc = await runWeft('cli', ['backup', '--out', sealed], cliEnv(store, { WEFT_BACKUP_PASSPHRASE: 'open sesame' }));
      assert.equal(enc.code, 0, enc.stderr);
      assert.equal(readFileSync(sealed).subarray(0, 8).toString(), 'WEFTENC1');
      assert.equal((await runWeft('cli', ['backup', '--verify', sealed], { WEFT_BACKUP_PASSPHRASE: 'open sesame' })).code, 0);
      const wrong = await runWeft('cli', ['backup', '--verify', sealed], { WEFT_BACKUP_PASSPHRASE: 'guess' });
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /wrong WEFT_BACKUP_PASSPHRASE/);
      const none = await runWeft('cli', ['backup', '--verify', sealed], {});
      assert.equal(none.code, 1);
      assert.match(none.stderr, /encrypted: set WEFT_BACKUP_PASSPHRASE/);
      const into = await freshStore(source);
      stores.push(into);
      const opened = await runWeft('cli', ['restore', sealed], cliEnv(into, { WEFT_BACKUP_PASSPHRASE: 'open sesame' }), 120_000);
      assert.equal(opened.code, 0, opened.stderr);
    });
  });
}
