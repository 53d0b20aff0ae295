import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { type KeyPair, keyDir } from './ssh-fixtures.ts';

/** README "Git over SSH": /user/keys. */
for (const dialect of DIALECTS) {
  describe(`SSH keys (${dialect})`, () => {
    let t: TestApp;
    let keys: ReturnType<typeof keyDir>;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    const made: Record<string, KeyPair> = {};
    const count = async () =>
      Number(
        (
          await t.deps.db
            .selectFrom('ssh_keys')
            .select((e) => e.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      t = await startApp(dialect);
      keys = keyDir();
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      made.ed = keys.make('ed', 'ed25519');
      made.ec = keys.make('ec', 'ecdsa', 384);
      made.rsa = keys.make('rsa', 'rsa', 2048);
      made.short = keys.make('short', 'rsa', 1024);
    });
    after(async () => {
      await t.close();
      keys.cleanup();
    });

    it('adds ed25519, ECDSA and RSA keys with the type and fingerprint ssh-keygen gives; lists and gets them', async () => {
      const uuids: string[] = [];
      for (const [name, type] of [
        ['ed', 'ssh-ed25519'],
        ['ec', 'ecdsa-sha2-nistp384'],
        ['rsa', 'ssh-rsa'],
      ] as const) {
        const res = await t.req('POST', '/api/v1/user/keys', {
          token: alice.token,
          body: { title: ` ${name} `, key: `${made[name]!.pub}\n` },
        });
        assert.equal(res.status, 201, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), [
          'created_at',
          'fingerprint',
          'key',
          'key_type',
          'last_used_at',
          'title',
          'uuid',
        ]);
        assert.equal(res.body.title, name);
        assert.equal(res.body.key_type, type);
        assert.equal(res.body.fingerprint, made[name]!.fingerprint);
        assert.equal(res.body.key, made[name]!.pub.split(' ').slice(0, 2).join(' '));
        assert.equal(res.body.last_used_at, null);
        uuids.push(res.body.uuid);
      }
      const list = await t.req('GET', '/api/v1/user/keys?per_page=2', { token: alice.token });
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.results.map((k: { uuid: string }) => k.uuid),
        uuids.slice(0, 2),
      );
      assert.ok(list.body.next);
      const one = await t.req('GET', `/api/v1/user/keys/${uuids[0]}`, { token: alice.token });
      assert.equal(one.status, 200);
      assert.equal(one.body.fingerprint, made.ed!.fingerprint);
      // someone else's key does not exist for you, staff included
      for (const token of [bob.token, t.adminToken]) {
        const other = await t.req('GET', `/api/v1/user/keys/${uuids[0]}`, { token });
        assert.equal(other.status, 404);
        assert.ok(isErrorBody(other.body, 'not_found'));
        assert.equal((await t.req('DELETE', `/api/v1/user/keys/${uuids[0]}`, { token })).status, 404);
      }
      assert.deepEqual((await t.req('GET', '/api/v1/user/keys', { token: bob.token })).body.results, []);
    });

    it('refuses malformed, private, weak and duplicate keys with a clear 4xx, changing nothing', async () => {
      const before = await count();
      const ed = made.ed!.pub.split(' ');
      const bad: Array<[unknown, number, string]> = [
        [{ title: 'x', key: 'not a key' }, 400, 'invalid_request'],
        [{ title: 'x', key: `${ed[0]} ${ed[1]!.slice(0, -8)}` }, 400, 'invalid_request'],
        [{ title: 'x', key: `ssh-ed25519 ${Buffer.from('garbage').toString('base64')}` }, 400, 'invalid_request'],
        [{ title: 'x', key: `ssh-rsa ${ed[1]}` }, 400, 'invalid_request'],
        [{ title: 'x', key: `${made.ed!.pub}\n${made.rsa!.pub}` }, 400, 'invalid_request'],
        [{ title: 'x', key: readFileSync(made.ed!.path, 'utf8') }, 400, 'invalid_request'],
        [{ title: 'x', key: made.short!.pub }, 400, 'invalid_request'],
        [
          { title: 'x', key: `ssh-dss ${Buffer.from('\u0000\u0000\u0000\u0007ssh-dss').toString('base64')}` },
          400,
          'invalid_request',
        ],
        [{ title: '   ', key: made.ed!.pub }, 400, 'invalid_request'],
        [{ title: 'x' }, 400, 'invalid_request'],
        [{ title: 'x', key: made.ed!.pub, extra: true }, 400, 'invalid_request'],
        // the same key material: taken, whoever registered it and whatever the comment
        [{ title: 'again', key: made.ed!.pub }, 409, 'conflict'],
        [{ title: 'again', key: `${ed[0]} ${ed[1]} another comment` }, 409, 'conflict'],
      ];
      for (const [body, status, code] of bad) {
        for (const token of [alice.token, bob.token]) {
          const res = await t.req('POST', '/api/v1/user/keys', { token, body });
          assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
          assert.ok(isErrorBody(res.body, code), res.text);
        }
      }
      const short = await t.req('POST', '/api/v1/user/keys', { token: bob.token, body: { title: 'x', key: made.short!.pub } });
      assert.match(short.body.detail, /2048/);
      assert.equal(await count(), before);
      assert.equal((await t.req('GET', `/api/v1/user/keys/${randomUUID()}`, { token: alice.token })).status, 404);
      assert.equal((await t.req('GET', '/api/v1/user/keys', { token: null })).status, 401);
    });

    it('deletes a key (204, then 404) and emits ssh-key-added / ssh-key-deleted in the user scope', async () => {
      const k = keys.make('del', 'ed25519');
      const added = await t.req('POST', '/api/v1/user/keys', { token: bob.token, body: { title: 'del', key: k.pub } });
      assert.equal(added.status, 201);
      assert.equal((await t.req('DELETE', `/api/v1/user/keys/${added.body.uuid}`, { token: bob.token })).status, 204);
      assert.equal((await t.req('GET', `/api/v1/user/keys/${added.body.uuid}`, { token: bob.token })).status, 404);
      assert.equal((await t.req('DELETE', `/api/v1/user/keys/${added.body.uuid}`, { token: bob.token })).status, 404);
      const events = await t.req('GET', `/api/v1/events?scope=user:${bob.uuid}`, { token: bob.token });
      const kinds = events.body.results.map((e: { kind: string }) => e.kind);
      assert.ok(kinds.includes('ssh-key-added') && kinds.includes('ssh-key-deleted'), kinds.join());
      const ev = events.body.results.find((e: { kind: string }) => e.kind === 'ssh-key-added');
      assert.deepEqual(ev.payload, {
        key_uuid: added.body.uuid,
        title: 'del',
        key_type: 'ssh-ed25519',
        fingerprint: k.fingerprint,
      });
      // and the key can be registered again once deleted
      assert.equal(
        (await t.req('POST', '/api/v1/user/keys', { token: alice.token, body: { title: 'mine now', key: k.pub } })).status,
        201,
      );
    });
  });
}
