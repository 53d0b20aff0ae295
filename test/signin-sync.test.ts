import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { pageReq, signIn } from './web-helpers.ts';
import { ADMIN_DN, ADMIN_PASSWORD, BASE, type Slapd, startSlapd } from './slapd.ts';

/**
 * docs/signin.md "Group sync": rules on a team map a directory group to a role, applied at each
 * LDAP sign-in against Debian's slapd; manual memberships are never touched; the last owner stays.
 */
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

dn: ou=groups,${BASE}
objectClass: organizationalUnit
ou: groups

dn: cn=devs,ou=groups,${BASE}
objectClass: groupOfNames
cn: devs
member: uid=lena,ou=people,${BASE}

dn: cn=leads,ou=groups,${BASE}
objectClass: groupOfNames
cn: leads
member: uid=lena,ou=people,${BASE}
`;

for (const dialect of DIALECTS) {
  describe(`group sync (${dialect})`, () => {
    let t: TestApp;
    let slapd: Slapd;
    let ann: { token: string; uuid: string; username: string };

    before(async () => {
      slapd = await startSlapd(LDIF);
      t = await startApp(dialect);
      ann = await t.user('ann');
      const res = await t.req('POST', '/api/v1/admin/auth-sources', {
        body: {
          kind: 'ldap',
          name: 'corp',
          display_name: 'Corp',
          ldap: {
            url: slapd.url,
            bind_dn: ADMIN_DN,
            bind_password: ADMIN_PASSWORD,
            user_base: `ou=people,${BASE}`,
            group_base: `ou=groups,${BASE}`,
          },
        },
      });
      assert.equal(res.status, 201, res.text);
      for (const slug of ['crew', 'side']) {
        assert.equal((await t.req('POST', '/api/v1/teams', { token: ann.token, body: { name: slug, slug } })).status, 201);
      }
      await seedTeam(t, 'solo');
    });
    after(async () => {
      await t.close();
      await slapd.stop();
    });

    const login = async () => {
      const res = await t.req('POST', '/api/v1/auth/login', {
        token: null,
        body: { username: 'lena', password: 'lena-password', token_name: 'ldap' },
      });
      assert.equal(res.status, 201, res.text);
    };
    const membership = async (slug: string) =>
      t.deps.db
        .selectFrom('team_members as m')
        .innerJoin('teams as t', 't.uuid', 'm.team_uuid')
        .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
        .select(['m.role', 'm.origin'])
        .where('t.slug', '=', slug)
        .where('u.username', '=', 'lena')
        .executeTakeFirst();
    const rule = async (slug: string, group: string, role: string) => {
      const res = await t.req('POST', `/api/v1/teams/${slug}/sync-rules`, { body: { source: 'corp', group, role } });
      assert.equal(res.status, 201, res.text);
      return res.body.uuid as string;
    };

    it('rules: team owners only, a known source; applied at sign-in with the highest role; lowered, removed; manual and last owner kept', async () => {
      const other = await t.user('other');
      assert.equal(
        (
          await t.req('POST', '/api/v1/teams/crew/sync-rules', {
            token: other.token,
            body: { source: 'corp', group: 'devs', role: 'member' },
          })
        ).status,
        404,
      );
      const unknown = await t.req('POST', '/api/v1/teams/crew/sync-rules', {
        token: ann.token,
        body: { source: 'nope', group: 'devs', role: 'member' },
      });
      assert.equal(unknown.status, 400);
      const devs = await rule('crew', 'devs', 'member');
      const leads = await rule('crew', 'leads', 'maintainer');
      await rule('crew', 'nobody-here', 'owner');
      const listed = await t.req('GET', '/api/v1/teams/crew/sync-rules', { token: ann.token });
      assert.deepEqual(
        listed.body.map((r: { source: string; group: string; role: string }) => `${r.source}/${r.group}=${r.role}`).sort(),
        ['corp/devs=member', 'corp/leads=maintainer', 'corp/nobody-here=owner'],
      );

      await login();
      assert.deepEqual(await membership('crew'), { role: 'maintainer', origin: 'sync' });
      // the API says where each membership came from
      const members = await t.req('GET', '/api/v1/teams/crew/members', { token: ann.token });
      assert.deepEqual(
        members.body.results.map((m: { username: string; origin: string }) => `${m.username}:${m.origin}`).sort(),
        ['ann:manual', 'lena:sync'],
      );
      const events = await t.req('GET', '/api/v1/events?scope=team:' + (await teamUuid('crew')), { token: ann.token });
      assert.ok(events.body.results.some((e: { kind: string }) => e.kind === 'member-added'));

      // a manual membership is never touched
      assert.equal(
        (await t.req('POST', '/api/v1/teams/side/members', { token: ann.token, body: { username: 'lena', role: 'reader' } }))
          .status,
        201,
      );
      await rule('side', 'devs', 'owner');
      await login();
      assert.deepEqual(await membership('side'), { role: 'reader', origin: 'manual' });

      // fewer matching rules: lowered, then removed
      assert.equal((await t.req('DELETE', `/api/v1/teams/crew/sync-rules/${leads}`, { token: ann.token })).status, 204);
      await login();
      assert.deepEqual(await membership('crew'), { role: 'member', origin: 'sync' });
      assert.equal((await t.req('DELETE', `/api/v1/teams/crew/sync-rules/${devs}`, { token: ann.token })).status, 204);
      await login();
      assert.equal(await membership('crew'), undefined);
      assert.equal((await t.req('DELETE', `/api/v1/teams/crew/sync-rules/${devs}`, { token: ann.token })).status, 404);

      // the last owner is kept
      const solo = await rule('solo', 'devs', 'owner');
      await login();
      assert.deepEqual(await membership('solo'), { role: 'owner', origin: 'sync' });
      assert.equal((await t.req('DELETE', `/api/v1/teams/solo/sync-rules/${solo}`)).status, 204);
      await login();
      assert.deepEqual(await membership('solo'), { role: 'owner', origin: 'sync' });
    });

    const teamUuid = async (slug: string) =>
      (await t.deps.db.selectFrom('teams').select('uuid').where('slug', '=', slug).executeTakeFirstOrThrow()).uuid;

    it('team settings, Sync: the rules listed, added and deleted with plain forms; errors beside the field; owners only', async () => {
      const owner = await signIn(t, 'ann');
      const url = '/teams/side/-/settings/sync';
      const shown = await pageReq(t, 'GET', url, { cookie: owner.cookie });
      assert.equal(shown.status, 200, shown.text);
      assert.match(shown.text, /<option value="corp"/);
      const added = await pageReq(t, 'POST', url, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, source: 'corp', group: 'ops', role: 'maintainer' },
      });
      assert.equal(added.status, 303, added.text);
      const listed = await pageReq(t, 'GET', url, { cookie: owner.cookie });
      const uuid = listed.text
        .split('<li id="rule-')
        .find((li) => li.includes('<code>ops</code>'))
        ?.slice(0, 36);
      assert.ok(uuid, listed.text);
      assert.match(listed.text, /gives the role <strong>maintainer<\/strong>/);
      const again = await pageReq(t, 'POST', url, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, source: 'corp', group: 'ops', role: 'maintainer' },
      });
      assert.equal(again.status, 400);
      assert.match(again.text, /has this rule already/);
      const unknown = await pageReq(t, 'POST', url, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, source: 'nope', group: 'ops', role: 'member' },
      });
      assert.equal(unknown.status, 400);
      assert.match(unknown.text, /id="rule-source-error"[^>]*>[^<]*no sign-in source named/);
      const api = await t.req('GET', '/api/v1/teams/side/sync-rules', { token: ann.token });
      assert.ok(api.body.some((r: { uuid: string }) => r.uuid === uuid));
      const deleted = await pageReq(t, 'POST', `${url}/${uuid}/delete`, { cookie: owner.cookie, form: { _csrf: owner.csrf } });
      assert.equal(deleted.status, 303);
      assert.doesNotMatch((await pageReq(t, 'GET', url, { cookie: owner.cookie })).text, /<code>ops<\/code>/);
      // a member who is not an owner: refused
      await t.user('mo');
      assert.equal(
        (await t.req('POST', '/api/v1/teams/side/members', { token: ann.token, body: { username: 'mo', role: 'member' } }))
          .status,
        201,
      );
      const mo = await signIn(t, 'mo');
      assert.equal((await pageReq(t, 'GET', url, { cookie: mo.cookie })).status, 403);
    });
  });
}
