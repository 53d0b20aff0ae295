import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readBranchTip } from '../src/git/ref-files.ts';

/** Branch tips read from ref files (src/git/ref-files.ts) agree with git after every kind of ref change. */
describe('branch tips from ref files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'weft-refs-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
    }).trim();
  const tipByGit = (branch: string) => {
    try {
      return git('rev-parse', '--verify', '-q', `refs/heads/${branch}`);
    } catch {
      return null;
    }
  };
  const commit = (message: string) => git('commit-tree', git('write-tree'), '-m', message);

  it('follows loose refs, packed refs, updates and deletions', () => {
    git('init', '-q', '--bare', '.');
    git('read-tree', '--empty');
    const shas = Array.from({ length: 12 }, (_, i) => commit(`c${i}`));
    assert.equal(readBranchTip(dir, 'main'), null);
    for (let i = 0; i < shas.length; i++) {
      // an update right after a read: the same size of file, a new stat
      git('update-ref', 'refs/heads/main', shas[i]!);
      assert.equal(readBranchTip(dir, 'main'), shas[i]);
      if (i % 3 === 1) {
        git('update-ref', 'refs/heads/feature/x', shas[i]!);
        git('pack-refs', '--all');
        // now only in packed-refs
        assert.equal(readBranchTip(dir, 'main'), shas[i]);
        assert.equal(readBranchTip(dir, 'feature/x'), shas[i]);
      }
      assert.equal(readBranchTip(dir, 'main'), tipByGit('main'));
      assert.equal(readBranchTip(dir, 'feature/x'), tipByGit('feature/x'));
    }
    git('update-ref', '-d', 'refs/heads/feature/x');
    assert.equal(readBranchTip(dir, 'feature/x'), null);
    git('update-ref', '-d', 'refs/heads/main');
    assert.equal(readBranchTip(dir, 'main'), null);
    assert.equal(readBranchTip(dir, 'missing'), null);
  });

  it('answers undefined (ask git) for a symbolic ref', () => {
    git('symbolic-ref', 'refs/heads/link', 'refs/heads/main');
    assert.equal(readBranchTip(dir, 'link'), undefined);
  });
});
