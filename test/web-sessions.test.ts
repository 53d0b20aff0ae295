import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { eventFrames, listen, openSse } from './sse-client.ts';
import { type Browser, PASSWORD, loginForm, pageReq, signIn } from './web-helpers.ts';

/** README "Web interface": sessions, CSRF, the session cookie on tail-events only, stream tickets. */
for (const dialect of DIALECTS) {
  describe(`web sessions and stream tickets (${dialect})`, () => {
    let t: TestApp;
    let base: string;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    const sessionCount = async () =>
      Number(
        (
          await t.deps.db
            .selectFrom('web_sessions')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      t = await startApp(dialect);
      base = await listen(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
    });
    after(() => t.close());

    it('serves the sign-in page with a strict CSP, and / is the sign-in page when signed out', async () => {
      const res = await pageReq(t, 'GET', '/login');
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      const csp = String(res.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.match(res.text, /<form class="stack" method="post" action="\/login">/);
      assert.doesNotMatch(res.text, /<script>|<script [^>]*>[^<]/, 'no inline script');
      const home = await pageReq(t, 'GET', '/');
      assert.equal(home.status, 200);
      assert.match(home.text, /Sign in to Weft/);
      const deep = await pageReq(t, 'GET', '/teams/core');
      assert.equal(deep.status, 303);
      assert.equal(deep.headers.location, '/login?next=%2Fteams%2Fcore');
    });

    it('serves htmx, its SSE extension and the stylesheet from this origin', async () => {
      for (const [name, type] of [
        ['htmx.min.js', /javascript/],
        ['sse.js', /javascript/],
        ['weft.js', /javascript/],
        ['weft.css', /css/],
      ] as const) {
        const res = await pageReq(t, 'GET', `/static/${name}`);
        assert.equal(res.status, 200, name);
        assert.match(String(res.headers['content-type']), type);
      }
      assert.equal((await pageReq(t, 'GET', '/static/nope.js')).status, 404);
    });

    it('signs in: a hashed, listed session and an HttpOnly SameSite=Lax cookie; a wrong password is 401 and stores nothing', async () => {
      const before = await sessionCount();
      const form = await loginForm(t);
      const wrong = await pageReq(t, 'POST', '/login', {
        cookie: form.cookie,
        form: { _csrf: form.csrf, username: 'alice', password: 'not the password' },
      });
      assert.equal(wrong.status, 401);
      assert.match(wrong.text, /Wrong username or password/);
      assert.equal(await sessionCount(), before);

      const ok = await pageReq(t, 'POST', '/login', {
        cookie: form.cookie,
        form: { _csrf: form.csrf, username: 'Alice', password: PASSWORD, next: '/teams/x' },
      });
      assert.equal(ok.status, 303);
      assert.equal(ok.headers.location, '/teams/x');
      const set = (ok.headers['set-cookie'] as string[]).find((c) => c.startsWith('weft_session='))!;
      assert.match(set, /; HttpOnly/);
      assert.match(set, /; SameSite=Lax/);
      assert.match(set, /; Max-Age=2592000/);
      assert.doesNotMatch(set, /Secure/, 'PUBLIC_URL is http');
      const secret = set.split(';')[0]!.split('=')[1]!;
      const rows = await t.deps.db.selectFrom('web_sessions').selectAll().where('user_uuid', '=', alice.uuid).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.secret_hash, createHash('sha256').update(secret).digest('hex'));
      assert.ok(!JSON.stringify(rows).includes(secret), 'the secret itself is not stored');

      const listed = await t.req('GET', '/api/v1/sessions', { token: alice.token });
      assert.equal(listed.status, 200);
      assert.equal(listed.body.results.length, 1);
      assert.deepEqual(Object.keys(listed.body.results[0]).sort(), [
        'created_at',
        'expires_at',
        'last_used_at',
        'revoked_at',
        'user_agent',
        'username',
        'uuid',
      ]);
      assert.equal(listed.body.results[0].username, 'alice');
      // another user's sessions: 403 to list, 404 to read
      assert.equal((await t.req('GET', '/api/v1/sessions?username=alice', { token: bob.token })).status, 403);
      const foreign = await t.req('GET', `/api/v1/sessions/${rows[0]!.uuid}`, { token: bob.token });
      assert.equal(foreign.status, 404);
      assert.ok(isErrorBody(foreign.body, 'not_found'));
      // off-site `next` values are not followed
      const form2 = await loginForm(t);
      const off = await pageReq(t, 'POST', '/login', {
        cookie: form2.cookie,
        form: { _csrf: form2.csrf, username: 'alice', password: PASSWORD, next: '//evil.example/x' },
      });
      assert.equal(off.headers.location, '/');
    });

    it('refuses a sign-in form without its CSRF value (403) and changes nothing', async () => {
      const before = await sessionCount();
      const form = await loginForm(t);
      for (const [cookie, csrf] of [
        ['', form.csrf],
        [form.cookie, ''],
        [form.cookie, 'x'.repeat(24)],
      ] as const) {
        const res = await pageReq(t, 'POST', '/login', { cookie, form: { _csrf: csrf, username: 'alice', password: PASSWORD } });
        assert.equal(res.status, 403);
        assert.match(res.text, /<h1>Not allowed<\/h1>/);
        assert.equal(res.headers['set-cookie'], undefined);
      }
      const noField = await pageReq(t, 'POST', '/login', {
        cookie: form.cookie,
        form: { username: 'alice', password: PASSWORD },
      });
      assert.equal(noField.status, 403);
      assert.equal(await sessionCount(), before);
    });

    it('refuses bad forms with 400 and unknown fields, and still counts sign-ins under api:login', async () => {
      const form = await loginForm(t);
      const extra = await pageReq(t, 'POST', '/login', {
        cookie: form.cookie,
        form: { _csrf: form.csrf, username: 'alice', password: PASSWORD, admin: '1' },
      });
      assert.equal(extra.status, 400);
      assert.match(extra.text, /The form has a field it does not take/);
    });

    it('the API ignores the session cookie except on GET /api/v1/tail-events', async () => {
      const b = await signIn(t, 'bob');
      const user = await t.req('GET', '/api/v1/user', { token: null, headers: { cookie: b.cookie } });
      assert.equal(user.status, 401);
      assert.ok(isErrorBody(user.body, 'unauthorized'));
      const events = await t.req('GET', `/api/v1/events?scope=user:${bob.uuid}`, { token: null, headers: { cookie: b.cookie } });
      assert.equal(events.status, 401);
      const sse = await openSse(base, `/api/v1/tail-events?scope=user:${bob.uuid}&html=true`, null, { cookie: b.cookie });
      try {
        assert.equal(sse.status, 200);
        await sse.waitFor((f) => f.length >= 1);
        for (let i = 0; i < 200 && t.deps.live.subscriberCount < 1; i++) await new Promise((r) => setTimeout(r, 10));
        const created = await t.req('POST', '/api/v1/api-tokens', { token: bob.token, body: { name: 'seen-live' } });
        assert.equal(created.status, 201);
        await sse.waitFor((f) => eventFrames(f).length >= 1);
        const frame = eventFrames(sse.frames)[0]!;
        assert.equal(frame.event, 'token-created');
        assert.match(frame.data, /^<article id="event-\d+"/);
      } finally {
        sse.close();
      }
      // another user's scope through the cookie: 404, as with a token
      const other = await t.req('GET', `/api/v1/tail-events?scope=user:${alice.uuid}`, {
        token: null,
        headers: { cookie: b.cookie },
      });
      assert.equal(other.status, 404);
      // a bad cookie is no credential
      const bad = await t.req('GET', `/api/v1/tail-events?scope=user:${bob.uuid}`, {
        token: null,
        headers: { cookie: 'weft_session=weft_nope' },
      });
      assert.equal(bad.status, 401);
    });

    it('a revoked session stops at once, on pages and on its stream; logout needs the CSRF token', async () => {
      const b: Browser = await signIn(t, 'bob');
      const sse = await openSse(base, `/api/v1/tail-events?scope=user:${bob.uuid}`, null, { cookie: b.cookie });
      assert.equal(sse.status, 200);
      const noCsrf = await pageReq(t, 'POST', '/logout', { cookie: b.cookie, form: { _csrf: 'wrong' } });
      assert.equal(noCsrf.status, 403);
      assert.equal((await pageReq(t, 'GET', '/', { cookie: b.cookie })).text.includes('Dashboard'), true);
      // another session's CSRF token does not fit this one
      const other = await signIn(t, 'bob');
      assert.equal((await pageReq(t, 'POST', '/logout', { cookie: b.cookie, form: { _csrf: other.csrf } })).status, 403);
      const out = await pageReq(t, 'POST', '/logout', { cookie: b.cookie, form: { _csrf: b.csrf } });
      assert.equal(out.status, 303);
      assert.equal(out.headers.location, '/login');
      assert.match(String(out.headers['set-cookie']), /weft_session=; .*Max-Age=0/);
      assert.match((await pageReq(t, 'GET', '/', { cookie: b.cookie })).text, /Sign in to Weft/);
      await sse.ended(15_000);
      // revoking through the API ends the other session too
      const sessions = await t.req('GET', '/api/v1/sessions', { token: bob.token });
      const live = sessions.body.results.find((s: { revoked_at: string | null }) => s.revoked_at === null);
      const revoked = await t.req('PUT', `/api/v1/sessions/${live.uuid}/revoke`, { token: bob.token });
      assert.equal(revoked.status, 200);
      assert.ok(revoked.body.revoked_at);
      const again = await t.req('PUT', `/api/v1/sessions/${live.uuid}/revoke`, { token: bob.token });
      assert.equal(again.body.revoked_at, revoked.body.revoked_at);
      assert.equal((await pageReq(t, 'GET', '/teams/x', { cookie: other.cookie })).status, 303);
      const post = await pageReq(t, 'POST', '/logout', { cookie: other.cookie, form: { _csrf: other.csrf } });
      assert.equal(post.status, 401);
    });

    it('stream tickets: made with a token for a readable scope, open that stream without a header within 60 s', async () => {
      const scope = `user:${alice.uuid}`;
      const bad = await t.req('POST', '/api/v1/tail-events/tickets', { token: alice.token, body: { scope: 'nope' } });
      assert.equal(bad.status, 400);
      const hidden = await t.req('POST', '/api/v1/tail-events/tickets', { token: bob.token, body: { scope } });
      assert.equal(hidden.status, 404);
      const extra = await t.req('POST', '/api/v1/tail-events/tickets', { token: alice.token, body: { scope, x: 1 } });
      assert.equal(extra.status, 400);
      const anon = await t.req('POST', '/api/v1/tail-events/tickets', { token: null, body: { scope } });
      assert.equal(anon.status, 401);
      const made = await t.req('POST', '/api/v1/tail-events/tickets', { token: alice.token, body: { scope } });
      assert.equal(made.status, 201, made.text);
      assert.deepEqual(Object.keys(made.body).sort(), ['expires_at', 'ticket']);
      const ttl = Date.parse(made.body.expires_at) - Date.now();
      assert.ok(ttl > 50_000 && ttl <= 60_000, String(ttl));
      const ticket = encodeURIComponent(made.body.ticket);
      const stored = await t.deps.db.selectFrom('stream_tickets').selectAll().execute();
      assert.ok(!JSON.stringify(stored).includes(made.body.ticket), 'stored hashed');

      const wrongScope = await t.req('GET', `/api/v1/tail-events?scope=user:${bob.uuid}&ticket=${ticket}`, { token: null });
      assert.equal(wrongScope.status, 400);
      const wrongKind = await t.req('GET', `/api/v1/tail-events?scope=${scope}&kind=token-created&ticket=${ticket}`, {
        token: null,
      });
      assert.equal(wrongKind.status, 400);
      const unknown = await t.req('GET', `/api/v1/tail-events?scope=${scope}&ticket=weft_tk_nope`, { token: null });
      assert.equal(unknown.status, 401);

      const sse = await openSse(base, `/api/v1/tail-events?scope=${scope}&ticket=${ticket}`, null, {
        origin: 'https://app.example',
      });
      try {
        assert.equal(sse.status, 200);
        await sse.waitFor((f) => f.length >= 1);
        for (let i = 0; i < 200 && t.deps.live.subscriberCount < 1; i++) await new Promise((r) => setTimeout(r, 10));
        const tok = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'via-ticket' } });
        assert.equal(tok.status, 201);
        await sse.waitFor((f) => eventFrames(f).some((x) => x.event === 'token-created'));
        // the ticket lasts while its token does: revoking the token ends the stream
        const self = await t.req('GET', '/api/v1/api-tokens/self', { token: alice.token });
        assert.equal((await t.req('PUT', `/api/v1/api-tokens/${self.body.uuid}/revoke`, { token: alice.token })).status, 200);
        await sse.ended(15_000);
        const reopen = await t.req('GET', `/api/v1/tail-events?scope=${scope}&ticket=${ticket}`, { token: null });
        assert.equal(reopen.status, 401);
      } finally {
        sse.close();
      }
      alice.token = tokOf(await t.req('POST', '/api/v1/api-tokens', { body: { name: 'again', username: 'alice' } }));
      // past its 60 s a ticket opens nothing
      const late = await t.req('POST', '/api/v1/tail-events/tickets', { token: alice.token, body: { scope } });
      await t.deps.db
        .updateTable('stream_tickets')
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .execute();
      const expired = await t.req('GET', `/api/v1/tail-events?scope=${scope}&ticket=${encodeURIComponent(late.body.ticket)}`, {
        token: null,
      });
      assert.equal(expired.status, 401);
      assert.ok(isErrorBody(expired.body, 'unauthorized'));
    });

    it('counts sign-ins under the stored api:login rule: past it, 429 and no session', async () => {
      // the shipped sign-in rules, and what they counted so far
      await t.deps.db.deleteFrom('rate_limit_rules').execute();
      await t.deps.db.deleteFrom('rate_limit_hits').execute();
      const rule = await t.req('POST', '/api/v1/rate-limits', {
        body: { scope: 'api:login', max_requests: 1, window_seconds: 3600, is_enabled: true },
      });
      assert.equal(rule.status, 201, rule.text);
      const form = await loginForm(t);
      const attempt = () =>
        pageReq(t, 'POST', '/login', {
          cookie: form.cookie,
          form: { _csrf: form.csrf, username: 'bob', password: 'wrong password' },
        });
      assert.equal((await attempt()).status, 401);
      const before = await sessionCount();
      const limited = await pageReq(t, 'POST', '/login', {
        cookie: form.cookie,
        form: { _csrf: form.csrf, username: 'bob', password: PASSWORD },
      });
      assert.equal(limited.status, 429);
      assert.match(limited.text, /Too many failed sign-ins from this address/);
      assert.doesNotMatch(limited.text, /rate_limited|api:login/);
      assert.ok(limited.headers['retry-after']);
      assert.equal(await sessionCount(), before);
      assert.equal((await t.req('DELETE', `/api/v1/rate-limits/${rule.body.uuid}`)).status, 204);
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`stream tickets from another origin (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect, { config: { corsOrigins: ['https://app.example'] } });
    });
    after(() => t.close());

    it('the stream a ticket opens carries the CORS headers of CORS_ORIGINS', async () => {
      const base = await listen(t);
      const carol = await t.user('carol');
      const scope = `user:${carol.uuid}`;
      const made = await t.req('POST', '/api/v1/tail-events/tickets', {
        token: carol.token,
        body: { scope },
        headers: { origin: 'https://app.example' },
      });
      assert.equal(made.status, 201);
      assert.equal(made.headers['access-control-allow-origin'], 'https://app.example');
      const url = `/api/v1/tail-events?scope=${scope}&ticket=${encodeURIComponent(made.body.ticket)}`;
      const sse = await openSse(base, url, null, { origin: 'https://app.example' });
      try {
        assert.equal(sse.status, 200);
        assert.equal(sse.headers['access-control-allow-origin'], 'https://app.example');
        assert.equal(sse.headers['access-control-allow-credentials'], undefined);
      } finally {
        sse.close();
      }
    });
  });
}

function tokOf(res: { status: number; body: { token: string } }): string {
  assert.equal(res.status, 201);
  return res.body.token;
}
