/**
 * Webhooks through HTTP with a real receiver on 127.0.0.1 (README "Webhooks"): hook CRUD and its
 * refusals, Standard Webhooks signatures checked with the `standardwebhooks` package, retries,
 * disabling (410, 20 failures, the creator's lost access), redelivery, pings, rotation, the branch
 * filter and the private-address refusal.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { inTransaction } from '../src/core/transaction.ts';
import type { Webhooks } from '../src/hooks/background.ts';
import type { Person } from './common.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { waitUntil } from './common.ts';
import { Receiver } from './webhooks-helpers.ts';

for (const dialect of DIALECTS) {
  describe(`webhooks (${dialect})`, () => {
    let t: TestApp;
    let rx: Receiver;
    let alice: Person; // team owner
    let bob: Person; // team maintainer
    let carol: Person; // outsider
    let team: { uuid: string; slug: string };
    let repo: { uuid: string; slug: string };
    let base: string;

    before(async () => {
      t = await startApp(dialect);
      rx = await new Receiver().start();
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      team = await seedTeam(t, 'acme', [
        { uuid: alice.uuid, role: 'owner' },
        { uuid: bob.uuid, role: 'maintainer' },
      ]);
      repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'app');
      base = `/api/v1/teams/acme/repos/app/hooks`;
      const s = await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } });
      assert.equal(s.status, 200, s.text);
      assert.deepEqual(s.body.webhook_allowed_hosts, ['127.0.0.1']);
    });
    after(async () => {
      await t.close();
      await rx.close();
    });

    /** An event in the repo's scope (set-up: the event store is what hooks follow). */
    const repoEvent = (payload: Record<string, unknown> = {}, kind: 'repo-updated' | 'branch-pushed' = 'repo-updated') =>
      inTransaction(t.deps, (tx) =>
        tx.emit({ kind, scopes: [`repo:${repo.uuid}`], actor: null, payload: { repo_uuid: repo.uuid, ...payload } }),
      );
    const count = async (table: 'hooks' | 'events' | 'hook_deliveries') =>
      Number(
        (
          await t.deps.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirst()
        )?.n,
      );
    const newHook = async (body: Record<string, unknown>, token = bob.token, path = base) => {
      const res = await t.req('POST', path, { token, body: { url: rx.url(), events: ['*'], ...body } });
      assert.equal(res.status, 201, res.text);
      return res.body as { uuid: string; secret: string };
    };
    const deliveries = async (hookUuid: string, query = '', path = base) => {
      const res = await t.req('GET', `${path}/${hookUuid}/deliveries${query}`, { token: bob.token });
      assert.equal(res.status, 200, res.text);
      return res.body.results as Array<Record<string, any>>;
    };

    it('creates a hook, shows the secret once, and refuses bad input with nothing changed', async () => {
      const res = await t.req('POST', base, { token: bob.token, body: { url: rx.url('/x'), events: ['repo-updated'] } });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(Object.keys(res.body).sort(), [
        'active',
        'branch_filter',
        'consecutive_failures',
        'created_at',
        'created_by_username',
        'disabled_reason',
        'events',
        'last_delivery_at',
        'last_status',
        'secret',
        'updated_at',
        'url',
        'uuid',
        'warnings',
      ]);
      assert.deepEqual(res.body.warnings, [], '127.0.0.1 is in webhook_allowed_hosts');
      assert.match(res.body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.equal(Buffer.from(res.body.secret.slice(6), 'base64').length, 32);
      assert.equal(res.body.active, true);
      assert.equal(res.body.created_by_username, 'bob');
      const got = await t.req('GET', `${base}/${res.body.uuid}`, { token: bob.token });
      assert.equal(got.status, 200);
      assert.equal(got.body.secret, undefined);
      // the hook-created event, in the repo's scope
      const ev = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}&kind=hook-created`, { token: alice.token });
      assert.equal(ev.status, 200, ev.text);
      assert.equal(ev.body.results.at(-1).payload.hook.uuid, res.body.uuid);

      const before = { hooks: await count('hooks'), events: await count('events') };
      const bad: Array<[Record<string, unknown>, number, string]> = [
        [{ url: 'ftp://example.com/x', events: ['*'] }, 400, 'invalid_request'],
        [{ url: 'not a url', events: ['*'] }, 400, 'invalid_request'],
        [{ url: `https://e.com/${'a'.repeat(2048)}`, events: ['*'] }, 400, 'invalid_request'],
        [{ url: rx.url(), events: ['no-such-kind'] }, 400, 'invalid_request'],
        [{ url: rx.url(), events: ['*', 'repo-updated'] }, 400, 'invalid_request'],
        [{ url: rx.url(), events: [] }, 400, 'invalid_request'],
        [{ url: rx.url(), events: ['*'], secret: 'whsec_short' }, 400, 'invalid_request'],
        [{ url: rx.url(), events: ['*'], secret: 'plain-text-secret-of-some-length-0123456789' }, 400, 'invalid_request'],
        [{ url: rx.url(), events: ['*'], branch_filter: 'a{b' }, 400, 'invalid_request'],
        [{ url: rx.url(), events: ['*'], extra: 1 }, 400, 'invalid_request'],
        [{ events: ['*'] }, 400, 'invalid_request'],
      ];
      for (const [body, status, code] of bad) {
        const r = await t.req('POST', base, { token: bob.token, body });
        assert.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
        assert.ok(isErrorBody(r.body, code), r.text);
      }
      // permissions: a reader-less outsider 404, staff-only site hooks 403, a team's hooks for owners
      const outsider = await t.req('POST', base, { token: carol.token, body: { url: rx.url(), events: ['*'] } });
      assert.equal(outsider.status, 404);
      assert.ok(isErrorBody(outsider.body, 'not_found'));
      const site = await t.req('GET', '/api/v1/hooks', { token: bob.token });
      assert.equal(site.status, 403);
      assert.ok(isErrorBody(site.body, 'forbidden'));
      const teamHooks = await t.req('POST', '/api/v1/teams/acme/hooks', {
        token: bob.token,
        body: { url: rx.url(), events: ['*'] },
      });
      assert.equal(teamHooks.status, 403);
      const wrongScope = await t.req('GET', `/api/v1/teams/acme/hooks/${res.body.uuid}`, { token: alice.token });
      assert.equal(wrongScope.status, 404);
      assert.deepEqual({ hooks: await count('hooks'), events: await count('events') }, before);

      // PUT changes only what it names; DELETE removes it (and emits hook-deleted)
      const put = await t.req('PUT', `${base}/${res.body.uuid}`, { token: bob.token, body: { branch_filter: 'release/*' } });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.branch_filter, 'release/*');
      assert.deepEqual(put.body.events, ['repo-updated']);
      assert.equal(put.body.url, rx.url('/x'));
      const badPut = await t.req('PUT', `${base}/${res.body.uuid}`, { token: bob.token, body: { events: ['nope'] } });
      assert.equal(badPut.status, 400);
      const list = await t.req('GET', `${base}?per_page=1`, { token: bob.token });
      assert.equal(list.status, 200);
      assert.equal(list.body.results.length, 1);
      const del = await t.req('DELETE', `${base}/${res.body.uuid}`, { token: bob.token });
      assert.equal(del.status, 204);
      assert.equal((await t.req('GET', `${base}/${res.body.uuid}`, { token: bob.token })).status, 404);
      const bads = await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['10.0.0.0/99'] } });
      assert.equal(bads.status, 400);
      assert.ok(isErrorBody(bads.body, 'invalid_request'));
    });

    it('delivers a matching event, signed as Standard Webhooks and X-Hub-Signature-256', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      const e = await repoEvent({ changes: { description: 'x' } });
      await repoEvent({}, 'branch-pushed'); // not subscribed
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 1, 20_000, 'the delivery');
      const got = rx.forHook(hook.uuid)[0]!;
      const verified = new Webhook(hook.secret).verify(got.body, got.headers as Record<string, string>) as Record<string, any>;
      assert.equal(verified.hook_uuid, hook.uuid);
      assert.equal(verified.event.id, e.id);
      assert.equal(verified.event.kind, 'repo-updated');
      assert.equal(got.headers['x-weft-event'], 'repo-updated');
      assert.equal(got.headers['x-weft-attempt'], '1');
      assert.match(String(got.headers['user-agent']), /^Weft-Hookshot\/\d/);
      assert.equal(got.headers['content-type'], 'application/json');
      const hub = `sha256=${createHmac('sha256', hook.secret).update(got.body).digest('hex')}`;
      assert.equal(got.headers['x-hub-signature-256'], hub);
      await waitUntil(async () => (await deliveries(hook.uuid))[0]?.status === 'success', 10_000, 'success recorded');
      const [d] = await deliveries(hook.uuid);
      assert.equal(d!.uuid, got.headers['webhook-id']);
      assert.equal(d!.event_id, e.id);
      assert.equal(d!.attempts, 1);
      assert.equal(d!.last_attempt.response_status, 200);
      assert.equal(d!.last_attempt.response_body, 'ok');
      assert.equal(d!.last_attempt.request_headers['webhook-id'], d!.uuid);
      assert.equal(d!.last_attempt.error, null);
      const one = await t.req('GET', `${base}/${hook.uuid}/deliveries/${d!.uuid}`, { token: bob.token });
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, d);
      const h = await t.req('GET', `${base}/${hook.uuid}`, { token: bob.token });
      assert.equal(h.body.last_status, 'success');
      assert.equal(rx.forHook(hook.uuid).length, 1);
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('retries after a 500 with the same webhook-id and attempt 2; redelivers; pings', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      let first = true;
      rx.respond = (r, res) => {
        if (r.headers['x-weft-hook'] === hook.uuid && first) {
          first = false;
          res.writeHead(500).end('boom');
        } else res.writeHead(200).end('ok');
      };
      await repoEvent();
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 1, 20_000, 'the first attempt');
      await waitUntil(async () => (await deliveries(hook.uuid))[0]?.last_attempt?.response_status === 500, 10_000, 'the failure');
      const [failed] = await deliveries(hook.uuid, '?status=pending');
      assert.equal(failed!.attempts, 1);
      const wait = Date.parse(failed!.next_attempt_at) - Date.parse(failed!.last_attempt.at);
      assert.ok(wait >= 8000 && wait <= 12_000, `retry in ${wait} ms`);
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 2, 30_000, 'the retry');
      const [a1, a2] = rx.forHook(hook.uuid);
      assert.equal(a2!.headers['webhook-id'], a1!.headers['webhook-id']);
      assert.equal(a2!.headers['x-weft-attempt'], '2');
      await waitUntil(async () => (await deliveries(hook.uuid))[0]?.status === 'success', 10_000, 'success');
      assert.equal((await deliveries(hook.uuid, '?status=failed')).length, 0);

      // redeliver: a third attempt of the same delivery
      const red = await t.req('POST', `${base}/${hook.uuid}/deliveries/${failed!.uuid}/redeliver`, { token: bob.token });
      assert.equal(red.status, 202, red.text);
      assert.deepEqual(red.body, { delivery_uuid: failed!.uuid });
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 3, 20_000, 'the redelivery');
      const a3 = rx.forHook(hook.uuid)[2]!;
      assert.equal(a3.headers['webhook-id'], failed!.uuid);
      assert.equal(a3.headers['x-weft-attempt'], '3');
      const missing = await t.req('POST', `${base}/${hook.uuid}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`, {
        token: bob.token,
      });
      assert.equal(missing.status, 404);

      // ping: delivered although the hook does not subscribe to it
      const p = await t.req('POST', `${base}/${hook.uuid}/pings`, { token: bob.token });
      assert.equal(p.status, 202, p.text);
      await rx.waitFor(() => rx.forHook(hook.uuid).some((r) => r.json.event.kind === 'ping'), 20_000, 'the ping');
      const pr = rx.forHook(hook.uuid).find((r) => r.json.event.kind === 'ping')!;
      assert.equal(pr.headers['webhook-id'], p.body.delivery_uuid);
      assert.equal(pr.headers['x-weft-event'], 'ping');
      new Webhook(hook.secret).verify(pr.body, pr.headers as Record<string, string>);
      rx.respond = (_r, res) => res.writeHead(200).end('ok');
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('a 503 or 429 with Retry-After waits at least that long before the retry; a shorter one does not hurry it', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      const answers: Array<[number, Record<string, string>]> = [
        [503, { 'retry-after': '600' }],
        [429, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() }],
        [503, { 'retry-after': '1' }],
      ];
      rx.respond = (r, res) => {
        if (r.headers['x-weft-hook'] !== hook.uuid) return void res.writeHead(200).end('ok');
        const [status, headers] = answers[rx.forHook(hook.uuid).length - 1]!;
        res.writeHead(status, headers).end('busy');
      };
      for (let i = 0; i < answers.length; i++) await repoEvent({ n: i });
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 3, 20_000, 'three first attempts');
      await waitUntil(
        // a first attempt not yet recorded is pending too (with its first next_attempt_at): wait for the three records
        async () =>
          (await deliveries(hook.uuid, '?status=pending')).filter((d) => d.last_attempt && d.next_attempt_at).length === 3,
        10_000,
        'three failures recorded',
      );
      // the first attempts go out in event order, so the answers above match events 0, 1, 2
      const pending = (await deliveries(hook.uuid, '?status=pending')).sort(
        (a, b) => Date.parse(a.last_attempt.at) - Date.parse(b.last_attempt.at),
      );
      const waits = pending.map((d) => Date.parse(d.next_attempt_at) - Date.parse(d.last_attempt.at));
      assert.deepEqual(
        pending.map((d) => d.last_attempt.response_status),
        [503, 429, 503],
      );
      assert.ok(waits[0]! >= 600_000 && waits[0]! < 601_000, `Retry-After: 600 → ${waits[0]} ms`);
      assert.ok(waits[1]! >= 3_590_000 && waits[1]! <= 3_601_000, `Retry-After as a date an hour on → ${waits[1]} ms`);
      assert.ok(waits[2]! >= 8000 && waits[2]! <= 12_000, `Retry-After: 1 keeps the schedule's 10 s ±20 % → ${waits[2]} ms`);
      assert.equal(rx.forHook(hook.uuid).length, 3, 'no early retry');
      rx.respond = (_r, res) => res.writeHead(200).end('ok');
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('records the first 64 KiB of an answer; a redirect is a failure and is not followed', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      rx.respond = (r, res) => {
        if (r.headers['x-weft-hook'] !== hook.uuid) return void res.writeHead(200).end('ok');
        if (r.headers['x-weft-attempt'] === '1' && rx.forHook(hook.uuid).length === 1)
          return void res.writeHead(200, { 'x-answer': 'big' }).end(`\u0000${'a'.repeat(100 * 1024)}`);
        res.writeHead(302, { location: rx.url('/elsewhere') }).end();
      };
      await repoEvent();
      await waitUntil(async () => (await deliveries(hook.uuid))[0]?.status === 'success', 20_000, 'the big answer');
      const [big] = await deliveries(hook.uuid);
      assert.equal(big!.last_attempt.response_body.length, 64 * 1024);
      assert.ok(!big!.last_attempt.response_body.includes('\u0000'));
      assert.equal(big!.last_attempt.response_headers['x-answer'], 'big');
      await repoEvent();
      await waitUntil(
        async () => (await deliveries(hook.uuid))[0]?.last_attempt?.response_status === 302,
        20_000,
        'the redirect',
      );
      const [moved] = await deliveries(hook.uuid);
      assert.equal(moved!.status, 'pending');
      assert.equal(moved!.last_attempt.error, 'redirect');
      assert.ok(moved!.next_attempt_at !== null);
      assert.equal(rx.received.filter((r) => r.headers['x-weft-hook'] === hook.uuid).length, 2);
      rx.respond = (_r, res) => res.writeHead(200).end('ok');
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('signs with both secrets for a day after a rotation', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      const rot = await t.req('POST', `${base}/${hook.uuid}/rotate-secret`, { token: bob.token });
      assert.equal(rot.status, 200, rot.text);
      assert.notEqual(rot.body.secret, hook.secret);
      await repoEvent();
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 1, 20_000, 'the delivery');
      const got = rx.forHook(hook.uuid)[0]!;
      const sigs = String(got.headers['webhook-signature']).split(' ');
      assert.equal(sigs.length, 2);
      new Webhook(hook.secret).verify(got.body, got.headers as Record<string, string>);
      new Webhook(rot.body.secret).verify(got.body, got.headers as Record<string, string>);
      // the GitHub-style signature uses the newest secret only
      assert.equal(
        got.headers['x-hub-signature-256'],
        `sha256=${createHmac('sha256', rot.body.secret).update(got.body).digest('hex')}`,
      );
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('filters by branch: pushes to matching branches only', async () => {
      const hook = await newHook({ events: ['branch-pushed'], branch_filter: 'release/*' });
      await repoEvent({ ref: 'refs/heads/main' }, 'branch-pushed');
      await repoEvent({ ref: 'refs/heads/release/1.0' }, 'branch-pushed');
      await repoEvent({ ref: 'refs/heads/release/1.0/hotfix' }, 'branch-pushed');
      await rx.waitFor(() => rx.forHook(hook.uuid).length >= 1, 20_000, 'the delivery');
      await new Promise((r) => setTimeout(r, 1000));
      const got = rx.forHook(hook.uuid);
      assert.equal(got.length, 1);
      assert.equal(got[0]!.json.event.payload.ref, 'refs/heads/release/1.0');
      assert.equal((await deliveries(hook.uuid)).length, 1);
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('a 410 disables the hook at once', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      rx.respond = (r, res) => res.writeHead(r.headers['x-weft-hook'] === hook.uuid ? 410 : 200).end();
      await repoEvent();
      await waitUntil(
        async () => (await t.req('GET', `${base}/${hook.uuid}`, { token: bob.token })).body.disabled_reason === 'gone',
        20_000,
        'disabled',
      );
      const h = (await t.req('GET', `${base}/${hook.uuid}`, { token: bob.token })).body;
      assert.equal(h.active, false);
      assert.equal(h.last_status, 'failed');
      const [d] = await deliveries(hook.uuid);
      assert.equal(d!.status, 'failed');
      assert.equal(d!.next_attempt_at, null);
      const ev = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}&kind=hook-disabled`, { token: alice.token });
      assert.deepEqual(ev.body.results.at(-1).payload, { repo_uuid: repo.uuid, hook_uuid: hook.uuid, reason: 'gone' });
      await repoEvent();
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(rx.forHook(hook.uuid).length, 1);
      // ping and redeliver refuse an inactive hook
      const p = await t.req('POST', `${base}/${hook.uuid}/pings`, { token: bob.token });
      assert.equal(p.status, 409);
      assert.ok(isErrorBody(p.body, 'hook_inactive'));
      // re-enabled: active again, the count reset
      const on = await t.req('PUT', `${base}/${hook.uuid}`, { token: bob.token, body: { active: true } });
      assert.equal(on.status, 200);
      assert.equal(on.body.active, true);
      assert.equal(on.body.disabled_reason, null);
      rx.respond = (_r, res) => res.writeHead(200).end('ok');
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('20 failed attempts in a row disable the hook', async () => {
      const hook = await newHook({ events: ['repo-updated'] });
      rx.respond = (r, res) => res.writeHead(r.headers['x-weft-hook'] === hook.uuid ? 500 : 200).end();
      for (let i = 0; i < 20; i++) await repoEvent({ i });
      await waitUntil(
        async () => (await t.req('GET', `${base}/${hook.uuid}`, { token: bob.token })).body.disabled_reason === 'failures',
        60_000,
        'disabled after 20 failures',
      );
      const h = (await t.req('GET', `${base}/${hook.uuid}`, { token: bob.token })).body;
      assert.equal(h.consecutive_failures, 20);
      assert.equal(h.active, false);
      assert.equal(rx.forHook(hook.uuid).length, 20);
      assert.equal((await deliveries(hook.uuid, '?status=pending')).length, 0);
      const on = await t.req('PUT', `${base}/${hook.uuid}`, { token: bob.token, body: { active: true } });
      assert.equal(on.body.consecutive_failures, 0);
      rx.respond = (_r, res) => res.writeHead(200).end('ok');
      await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
    });

    it('refuses private addresses without the allow-list, also a name resolving to 127.0.0.1, and does not retry', async () => {
      await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: [] } });
      try {
        const byIp = await newHook({ events: ['repo-updated'] });
        const byName = await newHook({ events: ['repo-updated'], url: `http://localhost:${rx.port}/hook` });
        await repoEvent();
        for (const hook of [byIp, byName]) {
          await waitUntil(async () => (await deliveries(hook.uuid))[0]?.status === 'failed', 20_000, 'refused');
          const [d] = await deliveries(hook.uuid);
          assert.equal(d!.last_attempt.error, 'address_not_allowed');
          assert.equal(d!.last_attempt.response_status, null);
          assert.equal(d!.next_attempt_at, null);
          assert.equal(d!.attempts, 1);
          assert.equal(rx.forHook(hook.uuid).length, 0);
          await t.req('DELETE', `${base}/${hook.uuid}`, { token: bob.token });
        }
        // a host name in the list allows it whatever it resolves to
        await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['localhost'] } });
        const named = await newHook({ events: ['repo-updated'], url: `http://localhost:${rx.port}/hook` });
        await repoEvent();
        await rx.waitFor(() => rx.forHook(named.uuid).length === 1, 20_000, 'allowed by name');
        await t.req('DELETE', `${base}/${named.uuid}`, { token: bob.token });
      } finally {
        await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } });
      }
    });

    it('shows events as the creator may see them; a creator removed from the team disables the hook', async () => {
      // a team hook made by dave, a second owner, who then leaves the team
      const dave = await t.user('dave');
      await t.deps.db
        .insertInto('team_members')
        .values({
          team_uuid: team.uuid,
          user_uuid: dave.uuid,
          role: 'owner',
          created_at: new Date().toISOString(),
          team_created_at: new Date().toISOString(),
        })
        .execute();
      const hook = await newHook({ events: ['repo-updated'] }, dave.token, '/api/v1/teams/acme/hooks');
      await repoEvent({ n: 1 });
      await rx.waitFor(() => rx.forHook(hook.uuid).length === 1, 20_000, 'the team hook delivery');
      assert.equal(rx.forHook(hook.uuid)[0]!.json.event.payload.n, 1);
      const removed = await t.req('DELETE', `/api/v1/teams/acme/members/dave`, { token: alice.token });
      assert.equal(removed.status, 204, removed.text);
      await repoEvent({ n: 2 });
      await waitUntil(
        async () =>
          (await t.req('GET', `/api/v1/teams/acme/hooks/${hook.uuid}`, { token: alice.token })).body.disabled_reason ===
          'creator_lost_access',
        20_000,
        'creator_lost_access',
      );
      await repoEvent({ n: 3 });
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(rx.forHook(hook.uuid).length, 1);
      const list = await t.req('GET', `/api/v1/teams/acme/hooks/${hook.uuid}/deliveries`, { token: alice.token });
      assert.equal(list.status, 200);
      assert.ok(list.body.results.every((d: { status: string }) => d.status !== 'pending'));
    });

    it('site hooks receive every event; deliveries older than 30 days are pruned', async () => {
      const hook = await newHook({ events: ['user-created'] }, t.adminToken, '/api/v1/hooks');
      await t.user('erin');
      await rx.waitFor(() => rx.forHook(hook.uuid).length === 1, 20_000, 'the site delivery');
      assert.equal(rx.forHook(hook.uuid)[0]!.json.event.kind, 'user-created');
      const list = await t.req('GET', `/api/v1/hooks/${hook.uuid}/deliveries`);
      assert.equal(list.status, 200);
      assert.equal(list.body.results.length, 1);
      await t.deps.db
        .updateTable('hook_deliveries')
        .set({ created_at: new Date(Date.now() - 31 * 86_400_000).toISOString() })
        .where('hook_uuid', '=', hook.uuid)
        .execute();
      assert.equal(await (t.deps.webhooks as Webhooks).sender.prune(), 1);
      assert.equal((await t.req('GET', `/api/v1/hooks/${hook.uuid}/deliveries`)).body.results.length, 0);
    });
  });
}
