import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type TestProvider, loginAtProvider, startProvider } from './oidc-provider.ts';
import { pageReq, signIn } from './web-helpers.ts';

/** docs/signin.md "OIDC": a real oidc-provider on 127.0.0.1, driven through the HTTP flow. */
const PUBLIC_URL = 'http://127.0.0.1:39999';
const cookiesOf = (setCookie: unknown): string[] =>
  (Array.isArray(setCookie) ? setCookie : setCookie === undefined ? [] : [String(setCookie)]).map(
    (c: string) => c.split(';')[0]!,
  );

for (const dialect of DIALECTS) {
  describe(`OIDC sign-in (${dialect})`, () => {
    let t: TestApp;
    let op: TestProvider;

    /** The whole browser round trip: Weft → provider (login as `account`) → Weft's callback. */
    async function oidcSignIn(account: string, opts: { cookie?: string; start?: string } = {}) {
      const start = await pageReq(t, 'GET', opts.start ?? '/login/oidc/corp?next=/settings', { cookie: opts.cookie });
      if (opts.start) assert.equal(start.status, 303, start.text);
      else assert.equal(start.status, 303, start.text);
      const flow = cookiesOf(start.headers['set-cookie']).find((c) => c.startsWith('weft_oidc='))!;
      const authUrl = new URL(String(start.headers.location));
      assert.equal(authUrl.origin, op.issuer);
      assert.equal(authUrl.searchParams.get('code_challenge_method'), 'S256');
      assert.ok(authUrl.searchParams.get('state') && authUrl.searchParams.get('nonce'));
      const back = new URL(await loginAtProvider(authUrl.href, account));
      assert.equal(back.origin + back.pathname, `${PUBLIC_URL}/login/oidc/corp/callback`);
      const cookie = [opts.cookie, flow].filter(Boolean).join('; ');
      const res = await pageReq(t, 'GET', back.pathname + back.search, { cookie });
      return { res, callback: back.pathname + back.search, flow };
    }

    before(async () => {
      op = await startProvider([`${PUBLIC_URL}/login/oidc/corp/callback`]);
      t = await startApp(dialect, { config: { publicUrl: PUBLIC_URL } });
      await t.user('erin');
      await t.user('dana2');
      const created = await t.req('POST', '/api/v1/admin/auth-sources', {
        body: {
          kind: 'oidc',
          name: 'corp',
          display_name: 'Corp SSO',
          oidc: { issuer: op.issuer, client_id: 'weft', client_secret: 'weft-client-secret' },
        },
      });
      assert.equal(created.status, 201, created.text);
      const tested = await t.req('POST', `/api/v1/admin/auth-sources/${created.body.uuid}/test`);
      assert.equal(tested.body.ok, true, tested.body.detail);
    });
    after(async () => {
      await t.close();
      await op.close();
    });

    it('the sign-in page offers the source; a first sign-in creates the user from the claims, the next finds it by subject', async () => {
      const login = await pageReq(t, 'GET', '/login');
      assert.match(login.text, /href="\/login\/oidc\/corp\?next=%2F"\s*>Sign in with Corp SSO/);
      op.accounts.set('sub-dana', { username: 'Dana.Smith', email: 'dana@corp.test' });
      const first = await oidcSignIn('sub-dana');
      assert.equal(first.res.status, 303, first.res.text);
      assert.equal(first.res.headers.location, '/settings');
      const session = cookiesOf(first.res.headers['set-cookie']).find((c) => c.startsWith('weft_session=') && c.length > 14)!;
      const settings = await pageReq(t, 'GET', '/settings', { cookie: session });
      assert.match(settings.text, /Signed in as <strong>danasmith<\/strong>/);
      const user = await t.req('GET', '/api/v1/users/danasmith');
      assert.equal(user.body.email, 'dana@corp.test');
      // the same subject with another username claim later: still that user
      op.accounts.set('sub-dana', { username: 'dana-renamed', email: 'dana@corp.test' });
      const again = await oidcSignIn('sub-dana');
      assert.equal(again.res.status, 303);
      const s2 = cookiesOf(again.res.headers['set-cookie']).find((c) => c.startsWith('weft_session=') && c.length > 14)!;
      assert.match((await pageReq(t, 'GET', '/settings', { cookie: s2 })).text, /Signed in as <strong>danasmith<\/strong>/);
      const sec = await pageReq(t, 'GET', '/settings/security', { cookie: s2 });
      assert.match(sec.text, /Corp SSO<\/strong> <code>sub-dana<\/code>/);
      // the callback URL replayed (code used, flow cookie gone) does not sign in again
      const replay = await pageReq(t, 'GET', again.callback, { cookie: again.flow });
      assert.equal(replay.status, 401);
    });

    it('a taken username gets -2; an existing email is not linked silently; the callback needs the browser that started', async () => {
      op.accounts.set('sub-d2', { username: 'dana2', email: 'other@corp.test' });
      assert.equal((await oidcSignIn('sub-d2')).res.status, 303);
      assert.equal((await t.req('GET', '/api/v1/users/dana2-2')).body.email, 'other@corp.test');

      op.accounts.set('sub-erin', { username: 'erin.corp', email: 'erin@example.com' });
      const users = Number(
        (
          await t.deps.db
            .selectFrom('users')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      const clash = await oidcSignIn('sub-erin');
      assert.equal(clash.res.status, 409);
      assert.match(clash.res.text, /sign in with your password to link this identity/i);
      assert.ok(!cookiesOf(clash.res.headers['set-cookie']).some((c) => c.startsWith('weft_session=') && c.length > 14));
      const after = Number(
        (
          await t.deps.db
            .selectFrom('users')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
      assert.equal(after, users, 'no user created');

      // a callback without the flow cookie of the browser that started it
      const start = await pageReq(t, 'GET', '/login/oidc/corp');
      const back = new URL(await loginAtProvider(String(start.headers.location), 'sub-dana'));
      const foreign = await pageReq(t, 'GET', back.pathname + back.search);
      assert.equal(foreign.status, 401);
      assert.match(foreign.text, /not started in this browser/);
      // a wrong state is refused by the ID token checks
      const flow = cookiesOf(start.headers['set-cookie']).find((c) => c.startsWith('weft_oidc='))!;
      const tampered = back.search.replace(/state=[^&]+/, 'state=forged');
      assert.equal((await pageReq(t, 'GET', back.pathname + tampered, { cookie: flow })).status, 401);
    });

    it('linking from Security settings, signed in with the password; then that identity signs in as the user', async () => {
      const erin = await signIn(t, 'erin');
      const sec = await pageReq(t, 'GET', '/settings/security', { cookie: erin.cookie });
      assert.match(sec.text, /Link Corp SSO/);
      const linkStart = await pageReq(t, 'POST', '/settings/security/link/corp', {
        cookie: erin.cookie,
        form: { _csrf: erin.csrf },
      });
      assert.equal(linkStart.status, 303, linkStart.text);
      const flow = cookiesOf(linkStart.headers['set-cookie']).find((c) => c.startsWith('weft_oidc='))!;
      const back = new URL(await loginAtProvider(String(linkStart.headers.location), 'sub-erin'));
      const linked = await pageReq(t, 'GET', back.pathname + back.search, { cookie: `${erin.cookie}; ${flow}` });
      assert.equal(linked.status, 303, linked.text);
      assert.equal(linked.headers.location, '/settings/security');
      const now = await pageReq(t, 'GET', '/settings/security', { cookie: erin.cookie });
      assert.match(now.text, /Corp SSO<\/strong> <code>sub-erin<\/code>/);
      const viaSso = await oidcSignIn('sub-erin');
      assert.equal(viaSso.res.status, 303);
      const s = cookiesOf(viaSso.res.headers['set-cookie']).find((c) => c.startsWith('weft_session=') && c.length > 14)!;
      assert.match((await pageReq(t, 'GET', '/settings', { cookie: s })).text, /Signed in as <strong>erin<\/strong>/);
      // a deactivated user cannot sign in through the source
      assert.equal((await t.req('PUT', '/api/v1/users/erin', { body: { is_active: false } })).status, 200);
      assert.equal((await oidcSignIn('sub-erin')).res.status, 403);
    });
    it('group sync: a rule on the team maps the groups claim to a role at each sign-in (docs/signin.md "Group sync")', async () => {
      await seedTeam(t, 'guild');
      const rule = await t.req('POST', '/api/v1/teams/guild/sync-rules', {
        body: { source: 'corp', group: 'eng', role: 'maintainer' },
      });
      assert.equal(rule.status, 201, rule.text);
      const role = async () =>
        (await t.deps.db
          .selectFrom('team_members as m')
          .innerJoin('teams as tm', 'tm.uuid', 'm.team_uuid')
          .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
          .select(['m.role', 'm.origin'])
          .where('tm.slug', '=', 'guild')
          .where('u.username', '=', 'gus')
          .executeTakeFirst()) ?? null;
      op.accounts.set('sub-gus', { username: 'gus', email: 'gus@corp.test', groups: ['eng', 'other'] });
      assert.equal((await oidcSignIn('sub-gus')).res.status, 303);
      assert.deepEqual(await role(), { role: 'maintainer', origin: 'sync' });
      op.accounts.set('sub-gus', { username: 'gus', email: 'gus@corp.test', groups: ['other'] });
      assert.equal((await oidcSignIn('sub-gus')).res.status, 303);
      assert.equal(await role(), null);
    });
  });
}
