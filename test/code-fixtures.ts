import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GitClient } from './git-fixtures.ts';

/**
 * A repository with every kind of entry, built with the real git client and pushed to `pushUrl`:
 *
 * main:   c1 README.md, src/a.ts, docs/guide.md
 *         c2 src/a.ts changed, "dir with space/x.txt", "a..b", link -> README.md (symlink),
 *            img.png (binary), big.txt (1.5 MiB of text), wide/ (40 files), sub (a submodule)
 *         c3 docs/guide.md renamed to docs/manual.md
 * feature/x: c3 + c4 (adds feature.txt)      side: c1 + c5 (adds side.txt)
 * tags:   v0 (lightweight, c1), v1 (annotated, c2), rel/2 (annotated, c3)
 */
export interface CodeRepo {
  work: string;
  c: Record<'c1' | 'c2' | 'c3' | 'c4' | 'c5', string>;
  bigText: string;
  png: Buffer;
}

export const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
  Buffer.alloc(64, 7),
]);

export async function buildCodeRepo(g: GitClient, name: string, pushUrl: string): Promise<CodeRepo> {
  const work = g.tmp(name);
  const run = (args: string[], env: Record<string, string> = {}) => g.run(['-C', work, ...args], { env });
  const sha = async () => (await run(['rev-parse', 'HEAD'])).stdout.trim();
  const write = (path: string, content: string | Buffer) => {
    mkdirSync(join(work, path, '..'), { recursive: true });
    writeFileSync(join(work, path), content);
  };
  const commit = async (message: string, date: string, add = true) => {
    if (add) await run(['add', '-A']);
    await run(['commit', '-q', '-m', message], { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date });
    return sha();
  };
  await g.run(['init', '-q', '-b', 'main', work]);
  write('README.md', '# Hello\n');
  write('src/a.ts', 'export const a = 1;\n');
  write('docs/guide.md', 'guide\nline two\nline three\n');
  const c1 = await commit('first', '2024-01-01T10:00:00Z');

  write('src/a.ts', 'export const a = 2;\nexport const b = 3;\n');
  write('dir with space/x.txt', 'spaced\n');
  write('a..b', 'dots\n');
  symlinkSync('README.md', join(work, 'link'));
  write('img.png', PNG);
  const bigText = 'abcdefghijklmnopqrstuvwxyz0123456789\n'.repeat(Math.ceil((1.5 * 1024 * 1024) / 37));
  write('big.txt', bigText);
  for (let i = 0; i < 40; i++) write(`wide/f${String(i).padStart(2, '0')}.txt`, `file ${i}\n`);
  await run(['add', '-A']);
  await run(['update-index', '--add', '--cacheinfo', `160000,${c1},sub`]);
  const c2 = await commit('second\n\nwith a body', '2024-02-01T10:00:00Z', false);

  await run(['mv', 'docs/guide.md', 'docs/manual.md']);
  const c3 = await commit('third: rename', '2024-03-01T10:00:00Z', false);

  await run(['checkout', '-q', '-b', 'feature/x']);
  write('feature.txt', 'feature\n');
  await run(['add', 'feature.txt']);
  const c4 = await commit('fourth', '2024-04-01T10:00:00Z', false);

  await run(['checkout', '-q', '-b', 'side', c1]);
  write('side.txt', 'side\n');
  await run(['add', 'side.txt']);
  const c5 = await commit('fifth', '2024-05-01T10:00:00Z', false);
  await run(['checkout', '-q', 'main']);

  await run(['tag', 'v0', c1]);
  await run(['tag', '-a', '-m', 'version one', 'v1', c2], { GIT_COMMITTER_DATE: '2024-02-02T00:00:00Z' });
  await run(['tag', '-a', '-m', 'release two', 'rel/2', c3]);
  const pushed = await g.run(['-C', work, 'push', '-q', pushUrl, 'main', 'feature/x', 'side', '--tags'], { ok: false });
  assert.equal(pushed.code, 0, pushed.stderr);
  return { work, c: { c1, c2, c3, c4, c5 }, bigText, png: PNG };
}
