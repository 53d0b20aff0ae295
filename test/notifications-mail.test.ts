/**
 * Notification mail through a real SMTP server on 127.0.0.1 (the smtp-server package), read back
 * with mailparser (docs/notifications.md "Mail"): headers, threading, batching, one-click
 * unsubscribe without credentials, the daily digest, a permanent refusal marking the address
 * bouncing, retries while the server is down, `weft send-test-mail`, and no other user's address.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sendDigest } from '../src/notifications/mail.ts';
import { waitUntil } from './common.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';
import { freePort, runWeft } from './server-process.ts';
import { Inbox, header } from './smtp.ts';

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

for (const dialect of DIALECTS) {
  describe(`notification mail (${dialect})`, () => {
    let t: TestApp;
    let smtp: Inbox;
    let port: number;
    let alice: { token: string; uuid: string };
    let carol: { token: string; uuid: string };
    let dave: { token: string; uuid: string };
    const base = '/api/v1/teams/crew/repos/tool';
    before(async () => {
      port = await freePort();
      smtp = await new Inbox(port).start();
      t = await startApp(dialect, {
        config: { smtpUrl: `smtp://127.0.0.1:${port}`, mailFrom: 'Weft <weft@example.com>', mailBatchMs: 2000 },
      });
      alice = await t.user('alice');
      carol = await t.user('carol');
      dave = await t.user('dave');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }), 201);
      for (const u of ['carol', 'dave'])
        ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: u, role: 'member' } }), 201);
      ok(await t.req('POST', '/api/v1/teams/crew/repos', { token: alice.token, body: { name: 'Tool', slug: 'tool' } }), 201);
    });
    after(async () => {
      await t.close();
      await smtp.stop();
    });

    it('instant: one mail per subject update, its headers and threading, batched, never another address', async () => {
      ok(
        await t.req('POST', `${base}/threads`, {
          token: alice.token,
          body: { title: 'Flaky test', body: 'Hey @carol, **look**' },
        }),
        201,
      );
      await waitUntil(() => smtp.to('carol@example.com').length === 1, 20_000, 'the first mail');
      const [m] = smtp.to('carol@example.com');
      assert.deepEqual(m!.to, ['carol@example.com']);
      assert.equal(m!.mail.subject, '[crew/tool] Flaky test (#1)');
      assert.match(m!.mail.text ?? '', /alice opened the thread/);
      assert.match(String(m!.mail.html), /<strong>look<\/strong>/);
      const host = new URL(t.deps.config.publicUrl).hostname;
      assert.match(header(m!, 'message-id'), new RegExp(`@${host.replace(/\./g, '\\.')}>$`));
      const thread = header(m!, 'in-reply-to');
      assert.match(thread, /^<thread\.[0-9a-f-]+@/);
      assert.equal(header(m!, 'references'), thread);
      assert.equal(header(m!, 'list-id'), `<tool.crew.${host}>`);
      assert.match(header(m!, 'list-unsubscribe'), /^<http:\/\/.*\/notifications\/unsubscribe\/[^>]+>$/);
      assert.equal(header(m!, 'list-unsubscribe-post'), 'List-Unsubscribe=One-Click');
      assert.equal(header(m!, 'x-weft-reason'), 'mention');
      assert.equal(header(m!, 'auto-submitted'), 'auto-generated');
      assert.ok(!m!.raw.includes('alice@example.com'), "the actor's address is not in the mail");

      // two replies within the batch window: one mail, threaded with the first
      for (const body of ['first reply', 'second reply'])
        ok(await t.req('POST', `${base}/threads/1/replies`, { token: alice.token, body: { body } }), 201);
      await waitUntil(() => smtp.to('carol@example.com').length === 2, 20_000, 'the batched mail');
      await new Promise((r) => setTimeout(r, 800));
      assert.equal(smtp.to('carol@example.com').length, 2, 'one mail for both replies');
      const second = smtp.to('carol@example.com')[1]!;
      assert.match(second.mail.text ?? '', /first reply[\s\S]*second reply/);
      assert.equal(header(second, 'references'), thread);
      assert.notEqual(header(second, 'message-id'), header(m!, 'message-id'));
      for (const r of smtp.received) assert.ok(!r.raw.includes('alice@example.com') || r.to.includes('alice@example.com'));
    });

    it('one-click unsubscribe without credentials stops that subject', async () => {
      const link = /<([^>]+)>/.exec(header(smtp.to('carol@example.com')[0]!, 'list-unsubscribe'))![1]!;
      const path = new URL(link).pathname;
      const page = await t.app.inject({ method: 'GET', url: path });
      assert.equal(page.statusCode, 200);
      const res = await t.app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      });
      assert.equal(res.statusCode, 200, res.body);
      const forged = await t.app.inject({
        method: 'POST',
        url: `${path.slice(0, -3)}xyz`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'List-Unsubscribe=One-Click',
      });
      assert.equal(forged.statusCode, 404);
      assert.equal(ok(await t.req('GET', `${base}/threads/1/subscription`, { token: carol.token })).body.subscribed, false);
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: alice.token, body: { body: 'third reply' } }), 201);
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(smtp.to('carol@example.com').length, 2);
    });

    it('a permanent refusal marks the address bouncing; mail to it stops', async () => {
      smtp.refuse.add('dave@example.com');
      ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'For dave', body: '@dave' } }), 201);
      await waitUntil(
        async () =>
          ok(await t.req('GET', '/api/v1/user/notification-settings', { token: dave.token })).body.email_bouncing === true,
        20_000,
        'bouncing',
      );
      smtp.refuse.delete('dave@example.com');
      ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Again', body: '@dave' } }), 201);
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal(smtp.to('dave@example.com').length, 0);
      // saving the settings confirms the address
      assert.equal(
        ok(await t.req('PUT', '/api/v1/user/notification-settings', { token: dave.token, body: {} })).body.email_bouncing,
        false,
      );
      ok(
        await t.req('PUT', '/api/v1/user/notification-settings', { token: dave.token, body: { timezone: 'Mars/Olympus' } }),
        400,
      );
    });

    it('retried with back-off while the SMTP server is down', { timeout: 60_000 }, async () => {
      await smtp.stop();
      ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'While down', body: '@dave' } }), 201);
      await waitUntil(
        async () =>
          (
            await t.deps.db
              .selectFrom('jobs')
              .select('attempts')
              .where('kind', '=', 'notification-mail')
              .where('attempts', '>=', 1)
              .execute()
          ).length > 0,
        20_000,
        'a failed attempt',
      );
      await smtp.start();
      await waitUntil(
        () => smtp.to('dave@example.com').some((r) => r.mail.subject?.includes('While down')),
        40_000,
        'the retried mail',
      );
    });

    it('a watcher who gets mail is written at once and mailed; one with mail off reads the activity in', async () => {
      const erin = await t.user('erin');
      const fred = await t.user('fred');
      for (const u of ['erin', 'fred'])
        ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: u, role: 'member' } }), 201);
      ok(await t.req('PUT', '/api/v1/user/notification-settings', { token: fred.token, body: { email_notifications: 'off' } }));
      for (const w of [erin, fred])
        ok(await t.req('PUT', `${base}/subscription`, { token: w.token, body: { level: 'watching' } }));
      ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Watched', body: 'news' } }), 201);
      await waitUntil(() => smtp.to('erin@example.com').length === 1, 20_000, "the watcher's mail");
      const [m] = smtp.to('erin@example.com');
      assert.match(m!.mail.subject ?? '', /^\[crew\/tool\] Watched \(#\d+\)$/);
      assert.equal(header(m!, 'x-weft-reason'), 'subscribed');
      const rows = async (u: { uuid: string }) =>
        (await t.deps.db.selectFrom('notifications').select('uuid').where('user_uuid', '=', u.uuid).execute()).length;
      assert.equal(await rows(erin), 1, 'written by the fan-out before erin reads anything');
      assert.equal(await rows(fred), 0, 'fred gets no mail: his inbox reads the activity in');
      assert.equal(smtp.to('fred@example.com').length, 0);
      const [n] = ok(await t.req('GET', '/api/v1/notifications', { token: fred.token })).body.results as Array<{
        reason: string;
        subject: { title: string };
      }>;
      assert.equal(n!.subject.title, 'Watched');
      assert.equal(n!.reason, 'subscribed');
    });

    it('daily digest at 08:00 in the user timezone', async () => {
      assert.deepEqual(
        ok(
          await t.req('PUT', '/api/v1/user/notification-settings', {
            token: carol.token,
            body: { email_notifications: 'daily', timezone: 'Asia/Tokyo' },
          }),
        ).body,
        { email_notifications: 'daily', timezone: 'Asia/Tokyo', email_bouncing: false },
      );
      const before = smtp.to('carol@example.com').length;
      ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Digest me', body: '@carol' } }), 201);
      await waitUntil(
        async () =>
          (await t.deps.db.selectFrom('jobs').select('run_at').where('kind', '=', 'notification-digest').execute()).length === 1,
        20_000,
        'the digest job',
      );
      const job = await t.deps.db
        .selectFrom('jobs')
        .select('run_at')
        .where('kind', '=', 'notification-digest')
        .executeTakeFirstOrThrow();
      assert.match(job.run_at, /T23:00:00\.000Z$/, '08:00 in Tokyo is 23:00 UTC');
      assert.equal(smtp.to('carol@example.com').length, before, 'no instant mail');
      await sendDigest(t.deps, carol.uuid);
      await waitUntil(() => smtp.to('carol@example.com').length === before + 1, 10_000, 'the digest');
      const digest = smtp.to('carol@example.com').at(-1)!;
      assert.match(digest.mail.subject ?? '', /digest/);
      assert.match(digest.mail.text ?? '', /Digest me/);
      assert.equal(header(digest, 'auto-submitted'), 'auto-generated');
    });

    if (dialect === 'sqlite')
      it('weft send-test-mail', { timeout: 120_000 }, async () => {
        const res = await runWeft('cli', ['send-test-mail', 'ops@example.com'], {
          DATA_DIR: t.deps.config.dataDir,
          SMTP_URL: `smtp://127.0.0.1:${port}`,
          MAIL_FROM: 'weft@example.com',
        });
        assert.equal(res.code, 0, res.stderr);
        await waitUntil(() => smtp.to('ops@example.com').length === 1, 10_000, 'the test mail');
        const bad = await runWeft('cli', ['send-test-mail', 'ops@example.com'], { DATA_DIR: t.deps.config.dataDir });
        assert.equal(bad.code, 2);
      });
  });
}
