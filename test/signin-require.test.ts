import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type SshServer, startSshServer } from '../src/ssh/server.ts';
import { seedTeam } from './fixtures.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { ManualClock } from './limits-fixtures.ts';
import { totpAt } from './signin-helpers.ts';
import { type KeyPair, gitSshCommand, keyDir } from './ssh-fixtures.ts';
import { pageReq, signIn } from './web-helpers.ts';

type User = { token: string; uuid: string; username: string };

/**
 * docs/signin.md "Requiring it": a team's and the site's second-factor requirement, refused alike
 * on the API, the pages, git over HTTP and git over SSH (403 two_factor_required), with the list
 * of who is affected shown before it is turned on.
 */
for (const dialect of DIALECTS) {
  describe(`requiring a second factor (${dialect})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let g: GitClient;
    let ssh: SshServer;
    let keys: ReturnType<typeof keyDir>;
    let alice: User;
    let bob: User;
    let carol: User;
    let dave: User;
    let bobKey: KeyPair;
    let carolKey: KeyPair;
    let daveKey: KeyPair;
    let team: { uuid: string; slug: string };
    const slug = 'app';

    const enrol = async (token: string) => {
      const started = await t.req('POST', '/api/v1/user/two-factor/totp', { token });
      assert.equal(started.status, 201, started.text);
      const confirmed = await t.req('POST', '/api/v1/user/two-factor/totp/confirm', {
        token,
        body: { code: totpAt(started.body.secret, clock.ms) },
      });
      assert.equal(confirmed.status, 200, confirmed.text);
    };
    const addKey = async (user: User, key: KeyPair) => {
      const res = await t.req('POST', '/api/v1/user/keys', { token: user.token, body: { title: 'k', key: key.pub } });
      assert.equal(res.status, 201, res.text);
    };
    const sshUrl = (path: string) => `ssh://git@127.0.0.1:${ssh.port}${path}`;
    const sshClone = (key: KeyPair, path: string, dest: string) =>
      g.run(['clone', '-q', sshUrl(path), g.tmp(dest)], {
        ok: false,
        env: { GIT_SSH_COMMAND: gitSshCommand(key.path, ssh.port) },
      });
    const httpClone = (token: string, path: string, dest: string) =>
      g.run(['clone', '-q', g.url(`/git${path}`, token), g.tmp(dest)], { ok: false });
    const refused = (res: { status: number; body: { error?: unknown } }) => {
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.error, 'two_factor_required');
    };

    before(async () => {
      clock = new ManualClock(Date.parse('2030-01-01T00:00:10.000Z'));
      t = await startApp(dialect, { deps: { clock } });
      g = await gitClient(t);
      ssh = await startSshServer(t.deps, { port: 0, host: '127.0.0.1' });
      keys = keyDir();
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      team = await seedTeam(t, 'crew', [
        { uuid: alice.uuid, role: 'owner' },
        { uuid: bob.uuid, role: 'member' },
        { uuid: carol.uuid, role: 'member' },
      ]);
      const repo = await t.req('POST', `/api/v1/teams/${team.slug}/repos`, { token: alice.token, body: { name: slug, slug } });
      assert.equal(repo.status, 201, repo.text);
      const work = await makeWorkTree(g, 'seed', [{ 'a.txt': 'one\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(`/git/teams/${team.slug}/${slug}.git`, alice.token), 'main']);
      bobKey = keys.make('bob', 'ed25519');
      carolKey = keys.make('carol', 'ed25519');
      daveKey = keys.make('dave', 'ed25519');
      await addKey(bob, bobKey);
      await addKey(carol, carolKey);
      await addKey(dave, daveKey);
    });
    after(async () => {
      await ssh.close();
      await t.close();
      g.cleanup();
      keys.cleanup();
    });

    it("a team's requirement: who is affected first; then API, pages, git over HTTP and SSH refuse members without one", async () => {
      const path = `/api/v1/teams/${team.slug}/two-factor-requirement`;
      const repoApi = `/api/v1/teams/${team.slug}/repos/${slug}`;
      const gitPath = `/teams/${team.slug}/${slug}.git`;
      const bobPage = await signIn(t, 'bob');
      await enrol(carol.token);

      // before: the owner sees who would be refused; members are not owners
      const preview = await t.req('GET', path, { token: alice.token });
      assert.equal(preview.status, 200, preview.text);
      assert.equal(preview.body.enabled, false);
      assert.deepEqual(
        preview.body.affected.map((a: { username: string }) => a.username),
        ['alice', 'bob'],
      );
      assert.equal(preview.body.affected_count, 2);
      assert.equal((await t.req('GET', path, { token: bob.token })).status, 403);
      assert.equal((await t.req('PUT', path, { token: bob.token, body: { enabled: true } })).body.error, 'forbidden');
      // an owner without a second factor cannot require one
      refused(await t.req('PUT', path, { token: alice.token, body: { enabled: true } }));
      await enrol(alice.token);
      const on = await t.req('PUT', path, { token: alice.token, body: { enabled: true } });
      assert.equal(on.status, 200, on.text);
      assert.equal(on.body.enabled, true);
      assert.deepEqual(on.body.affected, [{ username: 'bob', display_name: '', role: 'member' }]);

      // API: the team, its repos (reads through the read path, writes through command) refuse bob
      refused(await t.req('GET', repoApi, { token: bob.token }));
      refused(await t.req('GET', `/api/v1/teams/${team.slug}`, { token: bob.token }));
      refused(await t.req('POST', `${repoApi}/threads`, { token: bob.token, body: { title: 'x' } }));
      assert.match((await t.req('GET', repoApi, { token: bob.token })).body.detail, /Settings, Security/);
      const status = await t.req('GET', '/api/v1/user/two-factor', { token: bob.token });
      assert.deepEqual(status.body.required_by, [team.slug]);
      // carol (TOTP) and alice go on; an outsider still gets 404
      assert.equal((await t.req('GET', repoApi, { token: carol.token })).status, 200);
      assert.equal((await t.req('GET', repoApi, { token: dave.token })).status, 404);

      // pages: bob is sent to Security settings, which says why
      const page = await pageReq(t, 'GET', `/teams/${team.slug}/${slug}`, { cookie: bobPage.cookie });
      assert.equal(page.status, 303);
      assert.equal(page.headers.location, '/settings/security?required=1');
      const security = await pageReq(t, 'GET', '/settings/security?required=1', { cookie: bobPage.cookie });
      assert.equal(security.status, 200);
      assert.match(security.text, /Required by crew/);

      // git over HTTP and SSH
      const http = await httpClone(bob.token, gitPath, 'bob-http');
      assert.notEqual(http.code, 0);
      assert.match(http.stderr, /second factor/);
      const overSsh = await sshClone(bobKey, gitPath, 'bob-ssh');
      assert.notEqual(overSsh.code, 0);
      assert.match(overSsh.stderr, /second factor/);
      assert.equal((await httpClone(carol.token, gitPath, 'carol-http')).code, 0);
      assert.equal((await sshClone(carolKey, gitPath, 'carol-ssh')).code, 0);

      // leaving the team stays possible; enrolling lets bob back in
      await enrol(bob.token);
      assert.equal((await t.req('GET', repoApi, { token: bob.token })).status, 200);
      assert.equal((await sshClone(bobKey, gitPath, 'bob-ssh-2')).code, 0);
      assert.equal((await pageReq(t, 'GET', `/teams/${team.slug}/${slug}`, { cookie: bobPage.cookie })).status, 200);
      assert.equal((await t.req('PUT', path, { token: alice.token, body: { enabled: false } })).body.enabled, false);
    });

    it('the site-wide requirement: staff see who is affected; everyone without one is refused everywhere but enrolment', async () => {
      const davePage = await signIn(t, 'dave');
      const own = await t.req('POST', `/api/v1/users/dave/repos`, { token: dave.token, body: { name: 'mine', slug: 'mine' } });
      assert.equal(own.status, 201, own.text);
      assert.equal((await t.req('GET', '/api/v1/admin/two-factor-requirement', { token: dave.token })).status, 403);
      // staff without a second factor cannot turn it on
      refused(await t.req('PUT', '/api/v1/admin/two-factor-requirement', { body: { enabled: true } }));
      await enrol(t.adminToken);
      const preview = await t.req('GET', '/api/v1/admin/two-factor-requirement');
      assert.equal(preview.status, 200, preview.text);
      assert.equal(preview.body.enabled, false);
      assert.deepEqual(
        preview.body.affected.map((a: { username: string }) => a.username),
        ['dave'],
      );
      const on = await t.req('PUT', '/api/v1/admin/two-factor-requirement', { body: { enabled: true } });
      assert.equal(on.status, 200, on.text);
      assert.equal(on.body.affected_count, 1);

      // API: refused but for the caller's own record and enrolment
      refused(await t.req('GET', '/api/v1/users/dave/repos/mine', { token: dave.token }));
      refused(await t.req('GET', '/api/v1/teams', { token: dave.token }));
      assert.equal((await t.req('GET', '/api/v1/user', { token: dave.token })).status, 200);
      assert.equal((await t.req('GET', '/api/v1/user/two-factor', { token: dave.token })).status, 200);
      assert.equal((await t.req('GET', '/api/v1/users/dave/repos/mine', { token: bob.token })).status, 404);
      // pages: every page but Security settings and signing out sends dave to enrol
      const home = await pageReq(t, 'GET', '/', { cookie: davePage.cookie });
      assert.equal(home.status, 303);
      assert.equal(home.headers.location, '/settings/security?required=1');
      const security = await pageReq(t, 'GET', '/settings/security', { cookie: davePage.cookie });
      assert.equal(security.status, 200);
      assert.match(security.text, /This site requires a second factor/);
      // git over HTTP and SSH
      const http = await httpClone(dave.token, '/users/dave/mine.git', 'dave-http');
      assert.notEqual(http.code, 0);
      const overSsh = await sshClone(daveKey, '/users/dave/mine.git', 'dave-ssh');
      assert.notEqual(overSsh.code, 0);
      assert.match(overSsh.stderr, /second factor/);

      // enrolling through the (exempt) routes lets dave in at once
      await enrol(dave.token);
      assert.equal((await t.req('GET', '/api/v1/users/dave/repos/mine', { token: dave.token })).status, 200);
      assert.equal((await pageReq(t, 'GET', '/', { cookie: davePage.cookie })).status, 200);
      assert.equal(
        (await t.req('PUT', '/api/v1/admin/two-factor-requirement', { body: { enabled: false } })).body.enabled,
        false,
      );
    });
  });
}
