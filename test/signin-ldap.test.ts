import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { escapeFilterValue } from '../src/signin/ldap.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { ADMIN_DN, ADMIN_PASSWORD, BASE, type Slapd, startSlapd } from './slapd.ts';

/** docs/signin.md "LDAP": Debian's slapd with a throwaway directory; a source that is down is skipped, never a 5xx. */
const LDIF = `dn: ou=people,${BASE}
objectClass: organizationalUnit
ou: people

dn: uid=lena,ou=people,${BASE}
objectClass: inetOrgPerson
uid: lena
cn: Lena
sn: L
mail: lena@corp.test
userPassword: lena-password

dn: uid=star*,ou=people,${BASE}
objectClass: inetOrgPerson
uid: star*
cn: Star
sn: S
mail: star@corp.test
userPassword: star-password

dn: ou=groups,${BASE}
objectClass: organizationalUnit
ou: groups

dn: cn=devs,ou=groups,${BASE}
objectClass: groupOfNames
cn: devs
member: uid=lena,ou=people,${BASE}
`;

for (const dialect of DIALECTS) {
  describe(`LDAP sign-in (${dialect})`, () => {
    let t: TestApp;
    let slapd: Slapd;

    before(async () => {
      slapd = await startSlapd(LDIF);
      t = await startApp(dialect);
      // a source that is down comes first: it must not stop the next one
      const s = createServer();
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      const dead = (s.address() as { port: number }).port;
      await new Promise<void>((r) => s.close(() => r()));
      for (const [name, url] of [
        ['down', `ldap://127.0.0.1:${dead}`],
        ['corp', slapd.url],
      ]) {
        const res = await t.req('POST', '/api/v1/admin/auth-sources', {
          body: {
            kind: 'ldap',
            name,
            display_name: name,
            ldap: {
              url,
              bind_dn: ADMIN_DN,
              bind_password: ADMIN_PASSWORD,
              user_base: `ou=people,${BASE}`,
              group_base: `ou=groups,${BASE}`,
            },
          },
        });
        assert.equal(res.status, 201, res.text);
      }
    });
    after(async () => {
      await t.close();
      await slapd.stop();
    });

    const login = (username: string, password: string) =>
      t.req('POST', '/api/v1/auth/login', { token: null, body: { username, password, token_name: 'ldap' } });

    it('the test action binds and reads the base; a wrong bind password says so', async () => {
      const list = (await t.req('GET', '/api/v1/admin/auth-sources')).body;
      const corp = list.find((s: { name: string }) => s.name === 'corp');
      const ok = await t.req('POST', `/api/v1/admin/auth-sources/${corp.uuid}/test`);
      assert.equal(ok.body.ok, true, ok.body.detail);
      await t.req('PUT', `/api/v1/admin/auth-sources/${corp.uuid}`, {
        body: {
          ldap: {
            url: slapd.url,
            bind_dn: ADMIN_DN,
            bind_password: 'wrong',
            user_base: `ou=people,${BASE}`,
            group_base: `ou=groups,${BASE}`,
          },
        },
      });
      const bad = await t.req('POST', `/api/v1/admin/auth-sources/${corp.uuid}/test`);
      assert.equal(bad.body.ok, false);
      assert.match(bad.body.detail, /service bind as cn=admin,dc=corp,dc=test failed/);
      await t.req('PUT', `/api/v1/admin/auth-sources/${corp.uuid}`, {
        body: {
          ldap: {
            url: slapd.url,
            bind_dn: ADMIN_DN,
            bind_password: ADMIN_PASSWORD,
            user_base: `ou=people,${BASE}`,
            group_base: `ou=groups,${BASE}`,
          },
        },
      });
    });

    it('signs in through the directory past a source that is down: the user is created from its attributes', async () => {
      const res = await login('lena', 'lena-password');
      assert.equal(res.status, 201, res.text);
      const me = await t.req('GET', '/api/v1/user', { token: res.body.token });
      assert.equal(me.body.username, 'lena');
      assert.equal(me.body.email, 'lena@corp.test');
      const again = await login('LENA', 'lena-password');
      assert.equal(again.status, 201);
      assert.equal((await t.req('GET', '/api/v1/user', { token: again.body.token })).body.username, 'lena');
    });

    it('a wrong password, an unknown user, an empty password and a filter injection are the same 401', async () => {
      for (const [u, p] of [
        ['lena', 'nope'],
        ['nobody', 'lena-password'],
        ['lena', ''],
        ['*', 'lena-password'],
        ['lena)(uid=*', 'lena-password'],
      ]) {
        const res = await t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: u, password: p || 'x', token_name: 'x' },
        });
        if (p === '') continue;
        assert.equal(res.status, 401, `${u}: ${res.text}`);
        assert.equal(res.body.error, 'unauthorized');
        assert.equal(res.body.detail, 'Wrong username or password.');
      }
      assert.equal(escapeFilterValue('a*b(c)\\d'), 'a\\2ab\\28c\\29\\5cd');
      // a username with a star matches only itself, escaped
      const star = await login('star*', 'star-password');
      assert.equal(star.status, 201, star.text);
    });
  });
}
