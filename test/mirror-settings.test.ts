/**
 * A pull mirror's interval and credentials after creation (docs/bring-in.md "Pull mirrors"):
 * `PATCH {repo}/mirror` and the form on `{repo}/settings/mirrors`, validated as at creation,
 * credentials sealed and never returned; readers 403, outsiders 404.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CREDENTIALS_PURPOSE } from '../src/mirrors/credentials.ts';
import { type GitClient, gitClient, seedCommit } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };

for (const dialect of DIALECTS) {
  describe(`pull mirror settings (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let bob: Person;
    let page: Browser;
    let mirrorUuid: string;
    const ok = (res: { status: number; text: string }, status = 200) => assert.equal(res.status, status, res.text);
    const repoApi = (slug: string) => `/api/v1/users/${alice.username}/repos/${slug}`;
    const row = () =>
      t.deps.db.selectFrom('repo_imports').selectAll().where('repo_uuid', '=', mirrorUuid).executeTakeFirstOrThrow();
    const tick = () =>
      t.deps.db
        .selectFrom('jobs')
        .select(['run_at'])
        .where('kind', '=', 'mirror-sync')
        .where('dedupe_key', 'like', `mirror-tick:${mirrorUuid}:%`)
        .executeTakeFirstOrThrow();

    /** The import row once a sync has written it again (its updated_at moved past `before`). */
    async function synced(before: string) {
      for (let i = 0; i < 300; i++) {
        const r = await row();
        if (r.updated_at !== before) return r;
        await new Promise((res) => setTimeout(res, 100));
      }
      throw new Error('no sync');
    }

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      page = await signIn(t, alice.username);
      ok(await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } }));
      // the source: a private Weft repo, read with alice's token
      const src = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'src', slug: 'src', visibility: 'private' },
      });
      ok(src, 201);
      await seedCommit(t, src.body.uuid, 'main');
      const created = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: {
          name: 'm',
          slug: 'm',
          visibility: 'public',
          import: { url: `${g.base}/git/users/${alice.username}/src.git`, username: 'x', password: alice.token, mirror: true },
        },
      });
      ok(created, 201);
      mirrorUuid = created.body.uuid;
      for (let i = 0; i < 300 && (await row()).status === 'importing'; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal((await row()).status, 'done', (await row()).error ?? '');
    });
    after(async () => {
      g?.cleanup();
      await t?.close();
    });

    it('changes the interval: validated as at creation, the queued timed sync moved, nothing changed by bad input', async () => {
      const res = await t.req('PATCH', `${repoApi('m')}/mirror`, { token: alice.token, body: { interval_seconds: 3600 } });
      ok(res);
      assert.equal(res.body.mirror.interval_seconds, 3600);
      assert.equal(res.body.import_status, 'done');
      assert.equal(res.body.url, `${g.base}/git/users/${alice.username}/src.git`);
      const r = await row();
      assert.equal(r.interval_seconds, 3600);
      const due = Date.parse((await tick()).run_at);
      // the last sync was moments ago: the next one is due an hour after it
      assert.equal(due, Date.parse(r.last_sync_at!) + 3600_000);

      const bad = async (body: unknown, detail: string) => {
        const b = await t.req('PATCH', `${repoApi('m')}/mirror`, { token: alice.token, body });
        assert.equal(b.status, 400, b.text);
        assert.deepEqual(b.body, { error: 'invalid_request', detail });
      };
      await bad({ interval_seconds: 599 }, 'body.interval_seconds must be >= 600.');
      await bad({ interval_seconds: 31_536_001 }, 'body.interval_seconds must be <= 31536000.');
      await bad({ interval_seconds: 700.5 }, 'body.interval_seconds must be integer.');
      await bad({ interval_seconds: 'often' }, 'body.interval_seconds must be integer.');
      await bad({ url: 'git://example.com/x.git' }, 'body has an unknown property "url".');
      await bad({ password: 'p'.repeat(4097) }, 'body.password must NOT have more than 4096 characters.');
      assert.equal((await row()).interval_seconds, 3600);
      assert.equal(Date.parse((await tick()).run_at), due);
    });

    it('changes the credentials: sealed, never returned; a wrong password fails the next sync, the right one mends it', async () => {
      const wrong = 'weft_wrong_password_for_the_mirror_0001';
      const res = await t.req('PATCH', `${repoApi('m')}/mirror`, { token: alice.token, body: { password: wrong } });
      ok(res);
      assert.ok(!res.text.includes(wrong));
      let r = await row();
      assert.ok(r.credentials && !r.credentials.includes(wrong));
      assert.deepEqual(JSON.parse(t.deps.secret.open(CREDENTIALS_PURPOSE, r.credentials)), { username: 'x', password: wrong });
      const before = r.updated_at;
      ok(await t.req('POST', `${repoApi('m')}/mirror/sync`, { token: alice.token }), 202);
      r = await synced(before);
      assert.ok(r.last_error, 'the sync with a wrong password failed');
      assert.ok(!r.last_error.includes(wrong));
      const repo = await t.req('GET', repoApi('m'), { token: alice.token });
      assert.ok(!repo.text.includes(wrong));

      ok(await t.req('PATCH', `${repoApi('m')}/mirror`, { token: alice.token, body: { password: alice.token } }));
      const mended = (await row()).updated_at;
      ok(await t.req('POST', `${repoApi('m')}/mirror/sync`, { token: alice.token }), 202);
      r = await synced(mended);
      assert.equal(r.last_error, null);
      // the sync history: the import, then the failed and the mended sync on demand
      const history = await t.deps.db
        .selectFrom('mirror_syncs')
        .select(['trigger', 'error', 'finished_at'])
        .where('repo_uuid', '=', mirrorUuid)
        .orderBy('started_at')
        .execute();
      assert.deepEqual(
        history.map((h) => [h.trigger, h.error === null, h.finished_at !== null]),
        [
          ['import', true, true],
          ['demand', false, true],
          ['demand', true, true],
        ],
      );
      assert.ok(!history.some((h) => h.error?.includes(wrong)));
      const shown = await pageReq(t, 'GET', `/users/${alice.username}/m/import`, { cookie: page.cookie });
      assert.match(shown.text, /id="mirror-syncs"[\s\S]*on demand[\s\S]*failed/);

      // null clears; both cleared leave no sealed value at all
      ok(await t.req('PATCH', `${repoApi('m')}/mirror`, { token: alice.token, body: { username: null, password: null } }));
      assert.equal((await row()).credentials, null);
      ok(await t.req('PATCH', `${repoApi('m')}/mirror`, { token: alice.token, body: { username: 'x', password: alice.token } }));
      assert.ok((await row()).credentials);
    });

    it('readers 403, outsiders 404, a repo that is no mirror 404', async () => {
      const byReader = await t.req('PATCH', `${repoApi('m')}/mirror`, { token: bob.token, body: { interval_seconds: 900 } });
      assert.equal(byReader.status, 403, byReader.text);
      assert.equal((await t.req('PATCH', `${repoApi('src')}/mirror`, { token: bob.token, body: {} })).status, 404);
      const noMirror = await t.req('PATCH', `${repoApi('src')}/mirror`, { token: alice.token, body: {} });
      assert.deepEqual(noMirror.body, { error: 'not_found', detail: 'Mirror not found.' });
      ok(await t.req('PUT', repoApi('m'), { token: alice.token, body: { visibility: 'private' } }));
      const byOutsider = await t.req('PATCH', `${repoApi('m')}/mirror`, { token: bob.token, body: { interval_seconds: 900 } });
      assert.equal(byOutsider.status, 404, byOutsider.text);
      assert.equal((await row()).interval_seconds, 3600);
    });

    it('the settings page changes it with a form; a bad interval is refused beside its field, the value kept', async () => {
      const base = `/users/${alice.username}/m/settings/mirrors`;
      const shown = await pageReq(t, 'GET', base, { cookie: page.cookie });
      assert.equal(shown.status, 200);
      assert.match(shown.text, /id="pull-mirror-form"/);
      assert.match(shown.text, /name="interval_seconds" type="number" value="3600"/);
      assert.ok(!shown.text.includes(alice.token), 'the stored token is never shown');
      const refused = await pageReq(t, 'POST', `${base}/pull`, {
        cookie: page.cookie,
        form: { _csrf: page.csrf, interval_seconds: '60', username: '', password: '', clear_credentials: 'off' },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.text, /id="pull-interval_seconds-error"[^>]*>[^<]*from 600 to 31536000/);
      assert.match(refused.text, /name="interval_seconds" type="number" value="60"/);
      assert.equal((await row()).interval_seconds, 3600);
      const saved = await pageReq(t, 'POST', `${base}/pull`, {
        cookie: page.cookie,
        form: { _csrf: page.csrf, interval_seconds: '7200', username: '', password: 'new-token-value', clear_credentials: 'off' },
      });
      assert.equal(saved.status, 303, saved.text);
      assert.equal(saved.headers.location, base);
      const r = await row();
      assert.equal(r.interval_seconds, 7200);
      assert.deepEqual(JSON.parse(t.deps.secret.open(CREDENTIALS_PURPOSE, r.credentials!)), {
        username: 'x',
        password: 'new-token-value',
      });
      const cleared = await pageReq(t, 'POST', `${base}/pull`, {
        cookie: page.cookie,
        form: { _csrf: page.csrf, interval_seconds: '7200', username: '', password: '', clear_credentials: 'on' },
      });
      assert.equal(cleared.status, 303, cleared.text);
      assert.equal((await row()).credentials, null);
      const forged = await pageReq(t, 'POST', `${base}/pull`, { cookie: page.cookie, form: { interval_seconds: '900' } });
      assert.equal(forged.status, 403);
    });
  });
}
