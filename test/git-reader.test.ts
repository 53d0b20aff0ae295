import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { diffTrees } from '../src/git/diff.ts';
import { divergence } from '../src/git/history.ts';
import { DiffReaders } from '../src/git/diff-pool.ts';
import { GitLimits, Semaphore } from '../src/git/limits.ts';
import { ObjectReaders, parseTree } from '../src/git/objects.ts';
import { checkPath, checkRef, lookupPath, resolveRef, resolveRefAndPath } from '../src/git/resolve.ts';

/** The library under the code-reading routes, against a repository made by the real git client. */
describe('git object reader and ref resolution', () => {
  let dir: string;
  let work: string;
  let objects: ObjectReaders;
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: '/nonexistent', LC_ALL: 'C' };
  const g = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@x', ...args], { cwd: work, env })
      .toString()
      .trim();
  let first = '';
  let second = '';

  before(() => {
    work = mkdtempSync(join(tmpdir(), 'weft-reader-'));
    g('init', '-q', '-b', 'main');
    writeFileSync(join(work, 'a.txt'), 'one\n');
    g('add', '-A');
    g('commit', '-qm', 'first');
    first = g('rev-parse', 'HEAD');
    writeFileSync(join(work, 'a.txt'), 'two\n');
    writeFileSync(join(work, 'b..c'), 'dots\n');
    g('add', '-A');
    g('commit', '-qm', 'second');
    second = g('rev-parse', 'HEAD');
    g('branch', 'feature/x', first);
    g('tag', 'feature', second); // a tag "feature" and a branch "feature/x"
    g('tag', 'main', first); // a tag named like a branch: the branch wins
    g('tag', '-a', '-m', 'annotated', 'v1', first);
    dir = join(work, '.git');
    objects = new ObjectReaders({ perRepo: 2, total: 4, idleMs: 60_000, timeoutMs: 10_000 });
  });
  after(() => {
    objects.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('refuses malformed refs and paths before any git process', () => {
    for (const bad of ['', '-x', '--upload-pack=evil', 'a..b', 'a\0b', 'a\nb', 'a b', 'a:b', 'x^{tree}', 'a@{1}', '/a', 'a//b'])
      assert.throws(() => checkRef(bad), { status: 400 }, bad);
    for (const bad of ['..', 'a/../b', './a', 'a//b', '-rf', 'a\tb', 'a\0'])
      assert.throws(() => checkPath(bad), { status: 400 }, bad);
    assert.equal(checkPath('a..b/c'), 'a..b/c');
    assert.equal(checkPath('dir/'), 'dir');
    assert.equal(checkPath(''), '');
  });

  it('resolves branches before tags, tags, full and abbreviated shas', async () => {
    assert.deepEqual(await resolveRef(objects, dir, 'main'), { sha: second, kind: 'branch', name: 'main' });
    assert.equal((await resolveRef(objects, dir, 'v1'))!.sha, first); // peeled annotated tag
    assert.equal((await resolveRef(objects, dir, 'v1'))!.kind, 'tag');
    assert.equal((await resolveRef(objects, dir, first))!.kind, 'sha');
    assert.equal((await resolveRef(objects, dir, second.slice(0, 7)))!.sha, second);
    assert.equal(await resolveRef(objects, dir, second.slice(0, 6)), null); // too short: not a sha
    assert.equal(await resolveRef(objects, dir, 'nope'), null);
  });

  it('splits ref/path longest ref first', async () => {
    const r = await resolveRefAndPath(objects, dir, 'feature/x/a.txt');
    assert.deepEqual(r, { ref: { sha: first, kind: 'branch', name: 'feature/x' }, path: 'a.txt' });
    const t = await resolveRefAndPath(objects, dir, 'feature/a.txt');
    assert.deepEqual(t, { ref: { sha: second, kind: 'tag', name: 'feature' }, path: 'a.txt' });
    const s = await resolveRefAndPath(objects, dir, `${second.slice(0, 10)}/b..c`);
    assert.equal(s!.path, 'b..c');
    assert.equal(await resolveRefAndPath(objects, dir, 'nope/a.txt'), null);
    await assert.rejects(resolveRefAndPath(objects, dir, 'main/../a.txt'), { status: 400 });
  });

  it('reads trees and entries, and sees refs that move after it started', async () => {
    const root = await lookupPath(objects, dir, second, '');
    const tree = await objects.one(dir, root!.oid);
    assert.deepEqual(
      parseTree(tree!.data).map((e) => e.name),
      ['a.txt', 'b..c'],
    );
    assert.equal((await lookupPath(objects, dir, second, 'a.txt'))!.type, 'file');
    assert.equal(await lookupPath(objects, dir, second, 'missing'), null);
    writeFileSync(join(work, 'c.txt'), 'three\n');
    g('add', '-A');
    g('commit', '-qm', 'third');
    const third = g('rev-parse', 'HEAD');
    assert.equal((await resolveRef(objects, dir, 'main'))!.sha, third);
    g('pack-refs', '--all');
    g('update-ref', 'refs/heads/main', second);
    assert.equal((await resolveRef(objects, dir, 'main'))!.sha, second);
    assert.ok(objects.processCount <= 2);
  });

  it('diffs with patches and counts', async () => {
    const limits = new GitLimits({
      maxProcesses: 2,
      timeoutMs: 10_000,
      maxOutputBytes: 1 << 20,
      maxStreamBytes: 1 << 20,
      streamTimeoutMs: 10_000,
      queueTimeoutMs: 10_000,
    });
    const d = await diffTrees(limits, dir, first, second);
    assert.deepEqual(d.stats, { additions: 2, deletions: 1, total: 3 });
    assert.deepEqual(
      d.files.map((f) => [f.path, f.status, f.additions, f.deletions, f.patch]),
      [
        ['a.txt', 'modified', 1, 1, '@@ -1 +1 @@\n-one\n+two'],
        ['b..c', 'added', 1, 0, '@@ -0,0 +1 @@\n+dots'],
      ],
    );
  });

  it('the diff pool answers as a process of its own does: patches, truncation past the cap, a refused tree', async () => {
    const limits = new GitLimits({
      maxProcesses: 2,
      timeoutMs: 10_000,
      maxOutputBytes: 1 << 20,
      maxStreamBytes: 1 << 20,
      streamTimeoutMs: 10_000,
      queueTimeoutMs: 10_000,
    });
    const diffs = new DiffReaders({ perRepo: 1, total: 2, idleMs: 60_000, timeoutMs: 10_000, maxOutputBytes: 1 << 20 });
    try {
      const alone = await diffTrees(limits, dir, first, second, { patches: true });
      // another pair of ids (the root trees), so the diff cache does not answer
      const trees = (await objects.info(dir, [`${first}^{tree}`, `${second}^{tree}`])).map((i) => i!.oid);
      const pooled = await Promise.all(
        [0, 1, 2].map(() => diffTrees(limits, dir, trees[0]!, trees[1]!, { pool: { objects, diffs } })),
      );
      for (const d of pooled) assert.deepEqual(d, alone);
      assert.equal(diffs.processCount, 1);
      const root = await diffTrees(limits, dir, '4b825dc642cb6eb9a060e54bf8d69288fbee4904', first, { pool: { objects, diffs } });
      assert.deepEqual(
        root.files.map((f) => [f.path, f.status, f.patch]),
        [['a.txt', 'added', '@@ -0,0 +1 @@\n+one']],
      );
      const args = ['-r', '--raw', '--numstat', '-p', '-z'];
      const whole = await diffs.diff(dir, args, trees[0]!, trees[1]!)!;
      assert.equal(whole.truncated, false);
      const tiny = new DiffReaders({ perRepo: 1, total: 1, idleMs: 60_000, timeoutMs: 10_000, maxOutputBytes: 40 });
      const cut = await tiny.diff(dir, args, trees[0]!, trees[1]!)!;
      assert.deepEqual(cut, { stdout: whole.stdout.subarray(0, 40), truncated: true });
      // the stopped process is replaced on the next diff
      assert.equal((await tiny.diff(dir, ['-r', '--name-only', '-z'], trees[0]!, trees[1]!)!).stdout.toString(), 'a.txt\0b..c\0');
      tiny.close();
      await assert.rejects(diffs.diff(dir, args, trees[0]!, 'f'.repeat(40))!);
      assert.equal((await diffs.diff(dir, args, trees[0]!, trees[1]!)!).stdout.toString(), whole.stdout.toString());
      assert.equal(diffs.diff(dir, args, 'main', trees[1]!), null);
    } finally {
      diffs.close();
    }
    assert.equal(diffs.processCount, 0);
  });

  it('the semaphore caps concurrency and queues in order', async () => {
    const s = new Semaphore(2);
    const r1 = await s.acquire(1000);
    const r2 = await s.acquire(1000);
    const third = s.acquire(5000);
    assert.equal(s.waiting, 1);
    r1();
    r1(); // idempotent
    const r3 = await third;
    assert.equal(s.inUse, 2);
    await assert.rejects(s.acquire(10), { status: 503 });
    r2();
    r3();
    assert.equal(s.inUse, 0);
  });
});

/** `base...head` walked in process for linear histories, by `git rev-list` otherwise: the same answers as git's. */
describe('divergence of two commits', () => {
  let work: string;
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: '/nonexistent', LC_ALL: 'C' };
  const g = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@x', ...args], { cwd: work, env })
      .toString()
      .trim();
  const commit = (name: string) => {
    writeFileSync(join(work, `${name}.txt`), `${name}\n`);
    g('add', '-A');
    g('commit', '-qm', name);
    return g('rev-parse', 'HEAD');
  };

  after(() => rmSync(work, { recursive: true, force: true }));

  it('agrees with git on linear, diverged, identical, unrelated and merged histories', async () => {
    work = mkdtempSync(join(tmpdir(), 'weft-diverge-'));
    g('init', '-q', '-b', 'main');
    const root = commit('root');
    const m1 = commit('m1');
    const m2 = commit('m2');
    g('checkout', '-q', '-b', 'side', m1);
    const s1 = commit('s1');
    const s2 = commit('s2');
    const s3 = commit('s3');
    g('checkout', '-q', '--orphan', 'alone');
    const o1 = commit('o1');
    const o2 = commit('o2');
    g('checkout', '-q', '-b', 'merged', m2);
    g('merge', '-q', '--no-ff', '-m', 'merge side', s3);
    const merged = g('rev-parse', 'HEAD');
    const m3 = commit('m3');
    const dir = join(work, '.git');
    const objects = new ObjectReaders({ perRepo: 1, total: 2, idleMs: 60_000, timeoutMs: 10_000 });
    const limits = new GitLimits({
      maxProcesses: 2,
      timeoutMs: 10_000,
      maxOutputBytes: 1 << 20,
      maxStreamBytes: 1 << 20,
      streamTimeoutMs: 10_000,
      queueTimeoutMs: 10_000,
    });
    const count = (range: string) => Number(g('rev-list', '--count', range));
    try {
      const pairs = [
        [m2, s3],
        [s3, m2],
        [root, s2],
        [s2, root],
        [m2, m2],
        [m2, o2],
        [o1, s1],
        [m2, m3],
        [s1, m3],
        [m3, s2],
        [merged, o2],
      ];
      for (const [base, head] of pairs) {
        const d = await divergence(limits, objects, dir, base!, head!, 2);
        let mb: string | null = null;
        try {
          mb = g('merge-base', base!, head!);
        } catch {
          mb = null;
        }
        const headSide = g('rev-list', '--reverse', `${base}..${head}`).split('\n').filter(Boolean);
        assert.deepEqual(
          { ahead: d.ahead, behind: d.behind, mergeBase: d.mergeBase, commits: d.commits.map((c) => c.sha) },
          { ahead: count(`${base}..${head}`), behind: count(`${head}..${base}`), mergeBase: mb, commits: headSide.slice(0, 2) },
          `${base}...${head}`,
        );
      }
    } finally {
      objects.close();
    }
  });
});
