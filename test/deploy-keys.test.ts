import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type SshServer, startSshServer } from '../src/ssh/server.ts';
import { type GitClient, gitClient, makeWorkTree, commitFiles } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { type KeyPair, gitSshCommand, keyDir } from './ssh-fixtures.ts';

type User = { token: string; uuid: string; username: string };

/** README "Deploy keys": a key for one repo, through the API and with the real ssh client and git. */
for (const dialect of DIALECTS) {
  describe(`deploy keys (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let ssh: SshServer;
    let keys: ReturnType<typeof keyDir>;
    let alice: User; // owns the repos
    let bob: User; // reads public repos only
    let n = 0;

    const sshGit = (key: KeyPair) => ({ env: { GIT_SSH_COMMAND: gitSshCommand(key.path, ssh.port) } });
    const sshUrl = (slug: string) => `ssh://git@127.0.0.1:${ssh.port}/users/${alice.username}/${slug}.git`;
    const newRepo = async (visibility: 'public' | 'private' = 'private') => {
      const slug = `d${++n}`;
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, visibility },
      });
      assert.equal(res.status, 201, res.text);
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'one\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(`/git/users/${alice.username}/${slug}.git`, alice.token), 'main']);
      return { slug, uuid: res.body.uuid as string, api: `/api/v1/users/${alice.username}/repos/${slug}`, work };
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      ssh = await startSshServer(t.deps, { port: 0, host: '127.0.0.1' });
      keys = keyDir();
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
    });
    after(async () => {
      await ssh.close();
      await t.close();
      g.cleanup();
      keys.cleanup();
    });

    it('add, list, get, delete at maintain level; 404 to outsiders; key checks; events', async () => {
      const repo = await newRepo();
      const key = keys.make(`api${dialect}`, 'ed25519');
      // outsiders do not see the repo
      const outsider = await t.req('POST', `${repo.api}/keys`, { token: bob.token, body: { title: 'ci', key: key.pub } });
      assert.equal(outsider.status, 404);
      const created = await t.req('POST', `${repo.api}/keys`, { token: alice.token, body: { title: ' ci ', key: key.pub } });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.title, 'ci');
      assert.equal(created.body.read_only, true, 'read-only by default');
      assert.equal(created.body.fingerprint, key.fingerprint);
      assert.equal(created.body.key_type, 'ssh-ed25519');
      assert.equal(created.body.created_by_username, alice.username);
      const list = await t.req('GET', `${repo.api}/keys`, { token: alice.token });
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.results.map((k: { uuid: string }) => k.uuid),
        [created.body.uuid],
      );
      const one = await t.req('GET', `${repo.api}/keys/${created.body.uuid}`, { token: alice.token });
      assert.deepEqual(one.body, created.body);
      // the same material again (another comment), here or as a user key: 409
      const again = await t.req('POST', `${repo.api}/keys`, {
        token: alice.token,
        body: { title: 'x', key: `${key.pub.split(' ').slice(0, 2).join(' ')} other` },
      });
      assert.equal(again.status, 409);
      assert.ok(isErrorBody(again.body, 'conflict'));
      const asUserKey = await t.req('POST', '/api/v1/user/keys', { token: bob.token, body: { title: 'mine', key: key.pub } });
      assert.equal(asUserKey.status, 409);
      // and a user's key cannot become a deploy key
      const userKey = keys.make(`user${dialect}`, 'ed25519');
      assert.equal(
        (await t.req('POST', '/api/v1/user/keys', { token: alice.token, body: { title: 'u', key: userKey.pub } })).status,
        201,
      );
      const userAsDeploy = await t.req('POST', `${repo.api}/keys`, {
        token: alice.token,
        body: { title: 'u', key: userKey.pub },
      });
      assert.equal(userAsDeploy.status, 409);
      // bad input: 400, nothing added
      const bad = await t.req('POST', `${repo.api}/keys`, { token: alice.token, body: { title: 'x', key: 'ssh-ed25519 nope' } });
      assert.equal(bad.status, 400);
      const weak = keys.make(`weak${dialect}`, 'rsa', 1024);
      assert.equal(
        (await t.req('POST', `${repo.api}/keys`, { token: alice.token, body: { title: 'x', key: weak.pub } })).status,
        400,
      );
      assert.equal((await t.req('GET', `${repo.api}/keys`, { token: alice.token })).body.results.length, 1);
      // a reader who does not maintain (a public repo): 403 to read the list and to write
      const open = await newRepo('public');
      assert.equal((await t.req('GET', `${open.api}/keys`, { token: bob.token })).status, 403);
      const byReader = await t.req('POST', `${open.api}/keys`, { token: bob.token, body: { title: 'x', key: key.pub } });
      assert.equal(byReader.status, 403);
      const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
      const added = events.body.results.find((e: { kind: string }) => e.kind === 'deploy-key-added');
      assert.equal(added.payload.fingerprint, key.fingerprint);
      assert.equal(added.payload.read_only, true);
      assert.equal((await t.req('DELETE', `${repo.api}/keys/${created.body.uuid}`, { token: alice.token })).status, 204);
      assert.equal((await t.req('GET', `${repo.api}/keys/${created.body.uuid}`, { token: alice.token })).status, 404);
      const after = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
      assert.ok(after.body.results.some((e: { kind: string }) => e.kind === 'deploy-key-deleted'));
      // once deleted, the material may be registered again
      assert.equal(
        (await t.req('POST', '/api/v1/user/keys', { token: bob.token, body: { title: 'mine', key: key.pub } })).status,
        201,
      );
    });

    it('git over SSH: a read-only key clones its repo only and cannot push; a write key pushes, recorded as its adder', async () => {
      const repo = await newRepo();
      const other = await newRepo();
      const ro = keys.make(`ro${dialect}`, 'ed25519');
      const rw = keys.make(`rw${dialect}`, 'ecdsa');
      const roRes = await t.req('POST', `${repo.api}/keys`, { token: alice.token, body: { title: 'ro', key: ro.pub } });
      assert.equal(roRes.status, 201, roRes.text);
      const rwRes = await t.req('POST', `${repo.api}/keys`, {
        token: alice.token,
        body: { title: 'rw', key: rw.pub, read_only: false },
      });
      assert.equal(rwRes.body.read_only, false);

      // clone with the read-only key
      const dest = g.tmp(`clone-ro-${n}`);
      await g.run(['clone', '-q', sshUrl(repo.slug), dest], sshGit(ro));
      assert.equal(
        (await g.run(['-C', dest, 'rev-parse', 'HEAD'])).stdout.trim(),
        (await g.run(['-C', repo.work, 'rev-parse', 'HEAD'])).stdout.trim(),
      );
      // its push is refused
      await commitFiles(g, dest, [{ 'b.txt': 'two\n' }], 'main');
      const refused = await g.run(['-C', dest, 'push', sshUrl(repo.slug), 'main'], { ...sshGit(ro), ok: false });
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /read-only/);
      // another repo of the same owner is not found for either key
      for (const key of [ro, rw]) {
        const elsewhere = await g.run(['ls-remote', sshUrl(other.slug)], { ...sshGit(key), ok: false });
        assert.notEqual(elsewhere.code, 0);
        assert.match(elsewhere.stderr, /not found/i);
      }
      // the write key pushes; the push is recorded as alice's
      await g.run(['-C', dest, 'push', '-q', sshUrl(repo.slug), 'main'], sshGit(rw));
      const head = (await g.run(['-C', dest, 'rev-parse', 'HEAD'])).stdout.trim();
      assert.equal((await t.req('GET', `${repo.api}/branches/main`, { token: alice.token })).body.commit_sha, head);
      const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
      const pushed = events.body.results.filter(
        (e: { kind: string; payload: { after: string } }) => e.kind === 'branch-pushed' && e.payload.after === head,
      );
      assert.equal(pushed.length, 1);
      assert.equal(pushed[0].payload.pusher.username, alice.username);
      const used = await t.req('GET', `${repo.api}/keys/${rwRes.body.uuid}`, { token: alice.token });
      assert.ok(used.body.last_used_at !== null);
      // deleted: refused from the next command on
      assert.equal((await t.req('DELETE', `${repo.api}/keys/${roRes.body.uuid}`, { token: alice.token })).status, 204);
      const gone = await g.run(['ls-remote', sshUrl(repo.slug)], { ...sshGit(ro), ok: false });
      assert.notEqual(gone.code, 0);
    });
  });
}
