import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { seedTeam } from './fixtures.ts';
import { buildCodeRepo, type CodeRepo, PNG } from './code-fixtures.ts';
import { type GitClient, gitClient } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

/** Raw files, archives, branch writes and a pull's patches through real HTTP (README "Reading code"). */
for (const dialect of DIALECTS) {
  describe(`raw files, archives and branches (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    let api: string;
    let repo: CodeRepo;
    let team: { uuid: string; slug: string };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      const created = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'files', slug: 'files', visibility: 'public' },
      });
      assert.equal(created.status, 201, created.text);
      api = `/api/v1/users/${alice.username}/repos/files`;
      repo = await buildCodeRepo(g, 'work', g.url(`/git/users/${alice.username}/files.git`, alice.token));
      team = await seedTeam(t, `fteam${dialect}`, [
        { uuid: alice.uuid, role: 'owner' },
        { uuid: bob.uuid, role: 'member' },
      ]);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    const fetchRaw = (path: string, headers: Record<string, string> = {}, token: string | null = alice.token) =>
      fetch(new URL(path, g.base), { headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });

    it('raw: bytes, text and image types, nosniff and sandbox, ETag and 304, Range and 206/416', async () => {
      const { c } = repo;
      const res = await fetchRaw(`${api}/raw/main/src/a.ts`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), 'export const a = 2;\nexport const b = 3;\n');
      assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('content-security-policy'), 'sandbox');
      const blob = (await g.run(['-C', repo.work, 'rev-parse', 'main:src/a.ts'])).stdout.trim();
      assert.equal(res.headers.get('etag'), `"${blob}"`);
      assert.equal(res.headers.get('cache-control'), 'private, no-cache');
      const again = await fetchRaw(`${api}/raw/main/src/a.ts`, { 'if-none-match': `"${blob}"` });
      assert.equal(again.status, 304);
      const part = await fetchRaw(`${api}/raw/main/src/a.ts`, { range: 'bytes=7-11' });
      assert.equal(part.status, 206);
      assert.equal(await part.text(), 'const');
      assert.equal(part.headers.get('content-range'), 'bytes 7-11/40');
      const bad = await fetchRaw(`${api}/raw/main/src/a.ts`, { range: 'bytes=100-' });
      assert.equal(bad.status, 416);
      assert.equal((await bad.json()).error, 'range_not_satisfiable');

      const png = await fetchRaw(`${api}/raw/${c.c2}/img.png`);
      assert.equal(png.headers.get('content-type'), 'image/png');
      assert.deepEqual(Buffer.from(await png.arrayBuffer()), PNG);
      assert.equal(png.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      // an HTML file is text, never text/html; a symlink serves its target path
      const link = await fetchRaw(`${api}/raw/v1/link`);
      assert.equal(await link.text(), 'README.md');
      const spaced = await fetchRaw(`${api}/raw/main/dir%20with%20space/x.txt`);
      assert.equal(await spaced.text(), 'spaced\n');
      // refs with a slash: the longest branch or tag first
      assert.equal(await (await fetchRaw(`${api}/raw/feature/x/feature.txt`)).text(), 'feature\n');
      assert.equal(await (await fetchRaw(`${api}/raw/rel/2/docs/manual.md`)).text(), 'guide\nline two\nline three\n');

      // a large file streams whole, and in ranges
      const big = await fetchRaw(`${api}/raw/main/big.txt`);
      assert.equal(big.status, 200);
      assert.equal(big.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(await big.text(), repo.bigText);
      const bigPart = await fetchRaw(`${api}/raw/main/big.txt`, { range: 'bytes=1000000-1000036' });
      assert.equal(bigPart.status, 206);
      assert.equal(await bigPart.text(), repo.bigText.slice(1_000_000, 1_000_037));

      assert.equal((await fetchRaw(`${api}/raw/main/nope.txt`)).status, 404);
      assert.equal((await fetchRaw(`${api}/raw/main/src`)).status, 404);
      assert.equal((await fetchRaw(`${api}/raw/nope/README.md`)).status, 404);
      assert.equal((await fetchRaw(`${api}/raw/-main/README.md`)).status, 400);
      assert.equal((await fetchRaw(`${api}/raw/main/a%00b`)).status, 400);
    });

    it('a literal ".." segment in the URL is 400 before git runs', async () => {
      // node's http client sends the path as written (fetch would normalise it)
      const status = await new Promise<number>((resolve, reject) => {
        const u = new URL(g.base);
        const req = httpRequest(
          {
            host: u.hostname,
            port: u.port,
            path: `${api}/raw/main/src/../README.md`,
            headers: { authorization: `Bearer ${alice.token}` },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 400);
    });

    it('archives: tar.gz and zip with the slug-sha prefix, as git archive makes them', async () => {
      const { c } = repo;
      const prefix = `files-${c.c3.slice(0, 7)}`;
      const tgz = await fetchRaw(`${api}/archive/main.tar.gz`);
      assert.equal(tgz.status, 200);
      assert.equal(tgz.headers.get('content-type'), 'application/gzip');
      assert.equal(tgz.headers.get('content-disposition'), `attachment; filename="${prefix}.tar.gz"`);
      assert.equal(tgz.headers.get('x-content-type-options'), 'nosniff');
      const tgzFile = g.tmp('a.tar.gz');
      writeFileSync(tgzFile, Buffer.from(await tgz.arrayBuffer()));
      const listed = execFileSync('tar', ['-tzf', tgzFile]).toString().split('\n').filter(Boolean).sort();
      const gitTar = g.tmp('git.tar');
      execFileSync('git', ['-C', repo.work, 'archive', '--format=tar', `--prefix=${prefix}/`, '-o', gitTar, c.c3]);
      const gitListed = execFileSync('tar', ['-tf', gitTar]).toString().split('\n').filter(Boolean).sort();
      assert.deepEqual(listed, gitListed);
      assert.ok(listed.includes(`${prefix}/wide/f39.txt`));
      assert.ok(listed.includes(`${prefix}/dir with space/x.txt`));
      const content = execFileSync('tar', ['-xzOf', tgzFile, `${prefix}/src/a.ts`]).toString();
      assert.equal(content, 'export const a = 2;\nexport const b = 3;\n');

      const zip = await fetchRaw(`${api}/archive/feature/x.zip`);
      assert.equal(zip.status, 200);
      assert.equal(zip.headers.get('content-type'), 'application/zip');
      const zipFile = g.tmp('a.zip');
      const zipBytes = Buffer.from(await zip.arrayBuffer());
      writeFileSync(zipFile, zipBytes);
      const zprefix = `files-${c.c4.slice(0, 7)}`;
      const gitZip = g.tmp('git.zip');
      execFileSync('git', ['-C', repo.work, 'archive', '--format=zip', `--prefix=${zprefix}/`, '-o', gitZip, c.c4]);
      assert.deepEqual(zipBytes, execFileSync('cat', [gitZip]));
      const unzipped = execFileSync('unzip', ['-Z1', zipFile]).toString();
      assert.ok(unzipped.includes(`${zprefix}/feature.txt`));
      const bySha = await fetchRaw(`${api}/archive/${c.c1}.zip`);
      assert.equal(bySha.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      await bySha.arrayBuffer();

      assert.equal((await fetchRaw(`${api}/archive/main.rar`)).status, 404);
      assert.equal((await fetchRaw(`${api}/archive/nope.zip`)).status, 404);
      assert.equal((await fetchRaw(`${api}/archive/--output=x.zip`)).status, 400);
      assert.equal((await fetchRaw(`${api}/archive/--remote=x.tar.gz`)).status, 400);
    });

    it('branches: create (write; protected names need maintain), 409 when it exists, delete with reasons, events', async () => {
      const { c } = repo;
      const made = await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'topic/one', from: 'v0' } });
      assert.equal(made.status, 201, made.text);
      assert.deepEqual(made.body, { name: 'topic/one', commit_sha: c.c1, protected: false });
      const ls = await g.run(['ls-remote', g.url(`/git/users/${alice.username}/files.git`, alice.token), 'refs/heads/topic/one']);
      assert.equal(ls.stdout.split('\t')[0], c.c1);
      const dflt = await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'from-default' } });
      assert.equal(dflt.body.commit_sha, c.c3);
      assert.equal((await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'topic/one' } })).status, 409);
      const clash = await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'topic' } });
      assert.equal(clash.status, 409);
      assert.equal(clash.body.error, 'conflict');
      for (const name of ['-x', 'a..b', 'a b', 'x.lock', 'HEAD', '']) {
        const r = await t.req('POST', `${api}/branches`, { token: alice.token, body: { name } });
        assert.equal(r.status, 400, name);
      }
      assert.equal(
        (await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'x', from: 'nope' } })).status,
        404,
      );
      assert.equal(
        (await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'x', from: '--all' } })).status,
        400,
      );
      assert.equal((await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'x', extra: 1 } })).status, 400);
      // bob reads this public repo but cannot write
      assert.equal((await t.req('POST', `${api}/branches`, { token: bob.token, body: { name: 'bobs' } })).status, 403);
      assert.equal((await t.req('DELETE', `${api}/branches/topic/one`, { token: bob.token })).status, 403);

      const repoUuid = (await t.req('GET', api, { token: alice.token })).body.uuid;
      const events = await t.req('GET', `/api/v1/events?scope=repo:${repoUuid}`, { token: alice.token });
      const pushed = events.body.results.filter(
        (e: { kind: string; payload: { ref: string } }) => e.kind === 'branch-pushed' && e.payload.ref === 'refs/heads/topic/one',
      );
      assert.equal(pushed.length, 1);
      assert.equal(pushed[0].payload.before, '0'.repeat(40));
      assert.equal(pushed[0].payload.after, c.c1);

      const del = await t.req('DELETE', `${api}/branches/topic/one`, { token: alice.token });
      assert.equal(del.status, 204, del.text);
      assert.equal((await t.req('GET', `${api}/branches/topic/one`, { token: alice.token })).status, 404);
      assert.equal((await t.req('DELETE', `${api}/branches/topic/one`, { token: alice.token })).status, 404);
      const main = await t.req('DELETE', `${api}/branches/main`, { token: alice.token });
      assert.equal(main.status, 403);
      assert.match(main.body.detail, /default branch/);
      const prot = await t.req('POST', `${api}/protections`, { token: alice.token, body: { branch: 'release/*' } });
      assert.equal(prot.status, 201, prot.text);
      assert.equal((await t.req('POST', `${api}/branches`, { token: alice.token, body: { name: 'release/1' } })).status, 201);
      const protDel = await t.req('DELETE', `${api}/branches/release/1`, { token: alice.token });
      assert.equal(protDel.status, 403);
      assert.match(protDel.body.detail, /release\/\*/);
      const events2 = await t.req('GET', `/api/v1/events?scope=repo:${repoUuid}`, { token: alice.token });
      const deleted = events2.body.results.filter(
        (e: { kind: string; payload: { ref: string; after: string } }) =>
          e.kind === 'branch-pushed' && e.payload.ref === 'refs/heads/topic/one' && e.payload.after === '0'.repeat(40),
      );
      assert.equal(deleted.length, 1);
    });

    it('team repo: a member (write) may not create a protected name; a maintainer may', async () => {
      const created = await t.req('POST', `/api/v1/teams/${team.slug}/repos`, {
        token: alice.token,
        body: { name: 'tr', slug: 'tr', visibility: 'private' },
      });
      assert.equal(created.status, 201, created.text);
      const tapi = `/api/v1/teams/${team.slug}/repos/tr`;
      await g.run(['-C', repo.work, 'push', '-q', g.url(`/git/teams/${team.slug}/tr.git`, alice.token), 'main']);
      const prot = await t.req('POST', `${tapi}/protections`, { token: alice.token, body: { branch: 'rel-*' } });
      assert.equal(prot.status, 201, prot.text);
      const member = await t.req('POST', `${tapi}/branches`, { token: bob.token, body: { name: 'rel-1' } });
      assert.equal(member.status, 403, member.text);
      assert.equal(member.body.error, 'forbidden');
      assert.equal((await t.req('POST', `${tapi}/branches`, { token: bob.token, body: { name: 'bobs' } })).status, 201);
      const owner = await t.req('POST', `${tapi}/branches`, { token: alice.token, body: { name: 'rel-1' } });
      assert.equal(owner.status, 201);
      assert.equal(owner.body.protected, true);
      assert.equal((await t.req('DELETE', `${tapi}/branches/bobs`, { token: bob.token })).status, 204);
    });

    it("a pull's files carry patches; Accept: text/x-diff answers the whole diff", async () => {
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'Feature', body: '', source_branch: 'feature/x', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);
      const files = await t.req('GET', `${api}/pulls/${pull.body.number}/files`, { token: alice.token });
      assert.equal(files.status, 200, files.text);
      assert.deepEqual(files.body.results, [
        {
          path: 'feature.txt',
          previous_path: null,
          status: 'added',
          additions: 1,
          deletions: 0,
          binary: false,
          patch: '@@ -0,0 +1 @@\n+feature',
        },
      ]);
      const diff = await fetchRaw(`${api}/pulls/${pull.body.number}`, { accept: 'text/x-diff' });
      assert.equal(diff.status, 200);
      assert.equal(diff.headers.get('content-type'), 'text/x-diff; charset=utf-8');
      const text = await diff.text();
      const direct = (await g.run(['-C', repo.work, 'diff', '-M', 'main', 'feature/x'])).stdout;
      assert.equal(text, direct);
      const vnd = await fetchRaw(`${api}/pulls/${pull.body.number}`, { accept: 'application/vnd.weft.diff' });
      assert.equal(await vnd.text(), direct);
      const json = await t.req('GET', `${api}/pulls/${pull.body.number}`, { token: alice.token });
      assert.equal(json.body.number, pull.body.number);
    });
  });
}
