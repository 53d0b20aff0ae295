/**
 * Reply by mail through real SMTP (docs/notifications.md "Reply by mail"): the notification mail
 * read back from a receiving SMTP server carries the reply address; a reply sent with nodemailer
 * to Weft's inbound port becomes a reply on the thread (quoted text and signature stripped, the
 * attachment an upload attached to it) or a `commented` review on the pull; forged tokens,
 * auto-replies, bounces, another domain and a user who lost access change nothing; the mailto
 * unsubscribe works; a mail over 10 MiB is refused at DATA.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import nodemailer from 'nodemailer';
import { replyText } from '../src/notifications/inbound.ts';
import { waitUntil } from './common.ts';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';
import { freePort } from './server-process.ts';
import { Inbox, header } from './smtp.ts';

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

describe('reply text', () => {
  it('strips quoted text, the "On … wrote:" line and the signature; keeps answers between quotes', () => {
    assert.equal(
      replyText('Sounds good.\r\n\r\nOn Sat, 28 Nov 2026 at 09:00, alice <a@example.com> wrote:\r\n> Hey\r\n> there\r\n'),
      'Sounds good.',
    );
    assert.equal(replyText('Yes\n\nOn Sat, 28 Nov 2026, Alice\n<a@example.com> wrote:\n> q\n'), 'Yes');
    assert.equal(replyText('On Sat, alice wrote:\n> one\nfirst\n> two\nsecond\n-- \nCarol\n'), 'first\nsecond');
    assert.equal(replyText('Top\n\n-----Original Message-----\nFrom: x\nhello'), 'Top');
    assert.equal(replyText('Top\n\nFrom: Weft <w@example.com>\nSent: Saturday\nSubject: x'), 'Top');
    assert.equal(replyText('> only quotes\n'), '');
  });
});

for (const dialect of DIALECTS) {
  describe(`reply by mail (${dialect})`, () => {
    let t: TestApp;
    let smtp: Inbox;
    let inboundPort: number;
    let alice: { token: string; uuid: string };
    let carol: { token: string; uuid: string };
    let dave: { token: string; uuid: string };
    const base = '/api/v1/teams/crew/repos/tool';
    /** Sends one mail to Weft's inbound port (real SMTP). */
    const send = async (opts: nodemailer.SendMailOptions): Promise<void> => {
      const tr = nodemailer.createTransport({ host: '127.0.0.1', port: inboundPort, secure: false, ignoreTLS: true });
      try {
        await tr.sendMail({ from: 'someone@example.org', subject: 'Re: x', ...opts });
      } finally {
        tr.close();
      }
    };
    const replyTo = (address: string, n = 0): string => header(smtp.to(address)[n]!, 'reply-to');
    const replies = async () =>
      ok(await t.req('GET', `${base}/threads/1/replies?per_page=100`, { token: alice.token })).body.results as Array<{
        number: number;
        author_username: string;
        body: string;
      }>;

    before(async () => {
      const port = await freePort();
      inboundPort = await freePort();
      smtp = await new Inbox(port).start();
      t = await startApp(dialect, {
        config: {
          smtpUrl: `smtp://127.0.0.1:${port}`,
          mailFrom: 'Weft <weft@example.com>',
          mailBatchMs: 300,
          smtpInboundPort: inboundPort,
          mailReplyDomain: 'reply.example.com',
        },
      });
      alice = await t.user('alice');
      carol = await t.user('carol');
      dave = await t.user('dave');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }), 201);
      for (const u of ['carol', 'dave'])
        ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: u, role: 'member' } }), 201);
      ok(await t.req('POST', '/api/v1/teams/crew/repos', { token: alice.token, body: { name: 'Tool', slug: 'tool' } }), 201);
      ok(
        await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Flaky', body: 'Hey @carol, **look**' } }),
        201,
      );
      await waitUntil(() => smtp.to('carol@example.com').length === 1, 20_000, "carol's mail");
    });
    after(async () => {
      await t.close();
      await smtp.stop();
    });

    it('the mail carries the reply address and the mailto unsubscribe', () => {
      const address = replyTo('carol@example.com');
      assert.match(address, /^reply\+[a-z2-7]{45}@reply\.example\.com$/);
      assert.ok(header(smtp.to('carol@example.com')[0]!, 'list-unsubscribe').includes(`<mailto:${address}?subject=unsubscribe>`));
    });

    it('accepted: a reply on the thread as that user, quoted text and signature stripped, the attachment an upload', async () => {
      await send({
        to: replyTo('carol@example.com'),
        text: 'Sounds good, see the log.\n\nOn Sat, 28 Nov 2026 at 09:00, alice <x@example.com> wrote:\n> Hey @carol, **look**\n\n-- \nCarol\n',
        attachments: [{ filename: 'log.txt', content: 'line 1\n', contentType: 'text/plain' }],
      });
      const all = await replies();
      assert.equal(all.length, 1);
      assert.equal(all[0]!.author_username, 'carol');
      assert.equal(all[0]!.body, 'Sounds good, see the log.');
      const attached = ok(await t.req('GET', `${base}/threads/1/replies/${all[0]!.number}/attachments`, { token: alice.token }))
        .body.results as Array<{ upload: { filename: string; size_bytes: number } }>;
      assert.deepEqual(
        attached.map((a) => [a.upload.filename, a.upload.size_bytes]),
        [['log.txt', 7]],
      );
    });

    it('forged or altered tokens, auto-replies, bounces and empty replies change nothing; another domain is refused', async () => {
      const address = replyTo('carol@example.com');
      const token = address.slice(6, 51);
      const flipped = `${token.slice(0, 10)}${token[10] === 'a' ? 'b' : 'a'}${token.slice(11)}`;
      await send({ to: `reply+${flipped}@reply.example.com`, text: 'forged' });
      await send({ to: `reply+${'a'.repeat(45)}@reply.example.com`, text: 'forged' });
      await send({ to: address, text: 'I am away', headers: { 'Auto-Submitted': 'auto-replied' } });
      await send({ to: address, text: 'Bulk', headers: { Precedence: 'bulk' } });
      await send({ to: address, text: 'Bounced', envelope: { from: '', to: address } });
      await send({ to: address, text: '> only the quote\n' });
      await assert.rejects(
        send({ to: `reply+${token}@elsewhere.example.com`, text: 'relay?' }),
        (err: { responseCode?: number }) => {
          assert.equal(err.responseCode, 550);
          return true;
        },
      );
      assert.equal((await replies()).length, 1);
      // the token is the notification's: the same token in the upper case still works (a mail system may fold it)
      await send({ to: `reply+${token.toUpperCase()}@reply.example.com`, text: 'Case folded' });
      assert.deepEqual(
        (await replies()).map((r) => r.body),
        ['Sounds good, see the log.', 'Case folded'],
      );
    });

    it('a pull: a commented review; the mailto unsubscribe', async () => {
      const repoUuid = ok(await t.req('GET', base, { token: alice.token })).body.uuid as string;
      await seedCommit(t, repoUuid, 'feature/x', { onto: 'main' });
      ok(
        await t.req('POST', `${base}/pulls`, {
          token: alice.token,
          body: { title: 'Change', body: 'Look @dave', source_branch: 'feature/x', target_branch: 'main' },
        }),
        201,
      );
      await waitUntil(() => smtp.to('dave@example.com').length === 1, 20_000, "dave's mail");
      const address = replyTo('dave@example.com');
      await send({ to: address, text: 'Looks right to me.\n\n> Look @dave\n' });
      const reviews = ok(await t.req('GET', `${base}/pulls/1/reviews`, { token: alice.token })).body.results as Array<{
        author_username: string;
        status: string;
        body: string;
      }>;
      assert.deepEqual(
        reviews.map((r) => [r.author_username, r.status, r.body]),
        [['dave', 'commented', 'Looks right to me.']],
      );
      await send({ to: address, subject: 'unsubscribe', text: '' });
      assert.equal(ok(await t.req('GET', `${base}/pulls/1/subscription`, { token: dave.token })).body.subscribed, false);
    });

    it('a mail over 10 MiB is refused at DATA', async () => {
      await assert.rejects(
        send({
          to: replyTo('carol@example.com'),
          text: 'big',
          attachments: [{ filename: 'big.bin', content: Buffer.alloc(11 * 1024 * 1024) }],
        }),
        (err: { responseCode?: number }) => {
          assert.equal(err.responseCode, 552);
          return true;
        },
      );
      assert.equal((await replies()).length, 2);
    });

    it('the same mail sent again (a lost 250) is posted once; another mail is posted', async () => {
      const before = (await replies()).length;
      const messageId = `<resend-${dialect}@example.org>`;
      await send({ to: replyTo('carol@example.com'), text: 'Once only.', messageId });
      await send({ to: replyTo('carol@example.com'), text: 'Once only.', messageId });
      await send({ to: replyTo('carol@example.com'), text: 'Another one.', messageId: `<other-${dialect}@example.org>` });
      const after = await replies();
      assert.deepEqual(
        after.slice(before).map((r) => r.body),
        ['Once only.', 'Another one.'],
      );
    });

    it('lost access: a reply from a user removed from the team changes nothing', async () => {
      const before = (await replies()).length;
      ok(await t.req('DELETE', '/api/v1/teams/crew/members/carol', { token: alice.token }), 204);
      await send({ to: replyTo('carol@example.com'), text: 'Still here?' });
      assert.equal((await replies()).length, before);
      ok(await t.req('GET', '/api/v1/user', { token: carol.token }));
    });
  });
}
