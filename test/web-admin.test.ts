/**
 * The hooks, staff and signup pages over HTTP (README "Web interface"): the same access as the API
 * (staff pages 403 to others as the API's staff routes, hooks pages 404 to outsiders), CSRF
 * enforced, the API's error detail beside the field it concerns with the typed values kept,
 * destructive actions asking for a typed confirmation, and the signup page following the site
 * settings and invites.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';
import { waitUntil } from './common.ts';
import { Receiver } from './webhooks-helpers.ts';

const csrfOf = (text: string) => /name="_csrf" value="([^"]+)"/.exec(text)?.[1] ?? '';
const cookieOf = (setCookie: unknown, name: string) =>
  (Array.isArray(setCookie) ? setCookie : [String(setCookie ?? '')])
    .map((c: string) => c.split(';')[0]!)
    .find((c) => c.startsWith(`${name}=`));

for (const dialect of DIALECTS) {
  describe(`hooks, staff and signup pages over HTTP (${dialect})`, () => {
    let t: TestApp;
    let rx: Receiver;
    let ann: { token: string; uuid: string };
    let staff: Browser;
    let owner: Browser;
    let member: Browser;
    let olga: Browser;
    const repo = '/teams/core/api';
    const hooks = `${repo}/settings/hooks`;

    before(async () => {
      t = await startApp(dialect);
      rx = await new Receiver().start();
      await t.user('sam', { staff: true });
      ann = await t.user('ann');
      await t.user('bea');
      await t.user('olga');
      const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: ann.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/members', { token: ann.token, body: { username: 'bea', role: 'member' } }));
      ok(
        await t.req('POST', '/api/v1/teams/core/repos', {
          token: ann.token,
          body: { name: 'API', slug: 'api', visibility: 'private' },
        }),
      );
      ok(await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } }), 200);
      staff = await signIn(t, 'sam');
      owner = await signIn(t, 'ann');
      member = await signIn(t, 'bea');
      olga = await signIn(t, 'olga');
    });
    after(async () => {
      await t.close();
      await rx.close();
    });

    it('staff pages are for staff: 403 to others as the API, the sign-in page for the signed-out', async () => {
      for (const path of [
        '/admin',
        '/admin/users',
        '/admin/users/ann',
        '/admin/invites',
        '/admin/rate-limits',
        '/admin/settings',
        '/admin/hooks',
      ]) {
        const page = await pageReq(t, 'GET', path, { cookie: olga.cookie });
        assert.equal(page.status, 403, path);
        assert.equal((await pageReq(t, 'GET', path)).status, 303, path);
        assert.equal((await pageReq(t, 'GET', path, { cookie: staff.cookie })).status, path === '/admin' ? 303 : 200, path);
      }
      const api = await t.req('GET', '/api/v1/users', { token: ann.token });
      assert.equal(api.status, 403);
      // the layout links the staff pages for staff only
      assert.match((await pageReq(t, 'GET', '/', { cookie: staff.cookie })).text, /<a href="\/admin">Admin<\/a>/);
      assert.doesNotMatch((await pageReq(t, 'GET', '/', { cookie: olga.cookie })).text, /href="\/admin"/);
      const refused = await pageReq(t, 'POST', '/admin/users', {
        cookie: olga.cookie,
        form: { _csrf: olga.csrf, username: 'mallory', email: 'm@example.com' },
      });
      assert.equal(refused.status, 403);
      assert.equal((await t.req('GET', '/api/v1/users/mallory')).status, 404);
    });

    it('refuses a form post without the session CSRF token, changing nothing', async () => {
      const res = await pageReq(t, 'POST', '/admin/users', {
        cookie: staff.cookie,
        form: { username: 'eve', email: 'eve@example.com' },
      });
      assert.equal(res.status, 403);
      assert.equal((await t.req('GET', '/api/v1/users/eve')).status, 404);
      const hook = await pageReq(t, 'POST', hooks, {
        cookie: owner.cookie,
        form: { _csrf: 'wrong', url: rx.url(), events: '*', active: 'on' },
      });
      assert.equal(hook.status, 403);
      assert.equal((await t.req('GET', '/api/v1/teams/core/repos/api/hooks', { token: ann.token })).body.results.length, 0);
    });

    it('creates, searches, deactivates (with a typed confirmation) and makes staff', async () => {
      const bad = await pageReq(t, 'POST', '/admin/users', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, username: 'dora', email: 'not-an-email', display_name: 'Dora D', password: 'secret123' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /<p id="f-email-error" class="field-error" role="alert">The email must be an email address\./);
      assert.match(bad.text, /id="f-email"[^>]*aria-invalid="true"/);
      assert.match(bad.text, /id="f-username" name="username" type="text" value="dora"/);
      assert.match(bad.text, /value="Dora D"/);
      assert.doesNotMatch(bad.text, /secret123/);
      const taken = await pageReq(t, 'POST', '/admin/users', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, username: 'ann', email: 'other@example.com' },
      });
      assert.equal(taken.status, 409);
      assert.match(taken.text, /id="f-username-error"[^>]*>The username &quot;ann&quot; is not available/);
      const made = await pageReq(t, 'POST', '/admin/users', {
        cookie: staff.cookie,
        form: {
          _csrf: staff.csrf,
          username: 'dora',
          email: 'dora@example.com',
          display_name: 'Dora D',
          password: 'secret123',
          is_staff: 'off',
        },
      });
      assert.equal(made.status, 303, made.text);
      assert.equal(made.headers.location, '/admin/users/dora');
      const found = await pageReq(t, 'GET', '/admin/users?search=DORA', { cookie: staff.cookie });
      assert.match(found.text, /<a href="\/admin\/users\/dora">dora<\/a>/);
      assert.doesNotMatch(found.text, /href="\/admin\/users\/ann"/);
      // deactivating asks for the username typed
      const unconfirmed = await pageReq(t, 'POST', '/admin/users/dora', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, is_active: 'false', confirm: 'dor' },
      });
      assert.equal(unconfirmed.status, 400);
      assert.match(unconfirmed.text, /id="danger-confirm-error"[^>]*>Type dora to confirm/);
      assert.match(unconfirmed.text, /value="dor"/);
      assert.equal((await t.req('GET', '/api/v1/users/dora')).body.is_active, true);
      const off = await pageReq(t, 'POST', '/admin/users/dora', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, is_active: 'false', confirm: 'dora' },
      });
      assert.equal(off.status, 303);
      assert.equal((await t.req('GET', '/api/v1/users/dora')).body.is_active, false);
      assert.match((await pageReq(t, 'GET', '/admin/users/dora', { cookie: staff.cookie })).text, /deactivated/);
      assert.equal(
        (await pageReq(t, 'POST', '/admin/users/dora', { cookie: staff.cookie, form: { _csrf: staff.csrf, is_active: 'true' } }))
          .status,
        303,
      );
      assert.equal(
        (await pageReq(t, 'POST', '/admin/users/dora', { cookie: staff.cookie, form: { _csrf: staff.csrf, is_staff: 'true' } }))
          .status,
        303,
      );
      const dora = (await t.req('GET', '/api/v1/users/dora')).body;
      assert.equal(dora.is_active, true);
      assert.equal(dora.is_staff, true);
    });

    it('edits the site settings, each refusal beside its field', async () => {
      const form = {
        _csrf: staff.csrf,
        rate_limits_enabled: 'on',
        signups_enabled: 'on',
        signups_require_invite: 'off',
        signup_invite_creators: 'staff',
        signup_invite_max_per_24h: '10',
        signup_invite_min_account_age: '7x',
        max_timers_per_owner: '1000',
        max_reply_versions: '1000',
        webhook_allowed_hosts: '127.0.0.1',
      };
      const bad = await pageReq(t, 'POST', '/admin/settings', { cookie: staff.cookie, form });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-signup_invite_min_account_age-error"[^>]*>signup_invite_min_account_age must be a duration/);
      assert.match(bad.text, /value="7x"/);
      const host = await pageReq(t, 'POST', '/admin/settings', {
        cookie: staff.cookie,
        form: { ...form, signup_invite_min_account_age: '1d', webhook_allowed_hosts: '127.0.0.1\nbad!host' },
      });
      assert.equal(host.status, 400);
      assert.match(host.text, /id="f-webhook_allowed_hosts-error"[^>]*>webhook_allowed_hosts: &quot;bad!host/);
      assert.match(host.text, /bad!host<\/textarea>/);
      const number = await pageReq(t, 'POST', '/admin/settings', {
        cookie: staff.cookie,
        form: { ...form, signup_invite_min_account_age: '1d', max_timers_per_owner: 'many' },
      });
      assert.equal(number.status, 400);
      assert.match(number.text, /id="f-max_timers_per_owner-error"/);
      const saved = await pageReq(t, 'POST', '/admin/settings', {
        cookie: staff.cookie,
        form: { ...form, signup_invite_min_account_age: '1d', webhook_allowed_hosts: '127.0.0.1\n10.0.0.0/8' },
      });
      assert.equal(saved.status, 303, saved.text);
      const s = (await t.req('GET', '/api/v1/site-settings')).body;
      assert.equal(s.signup_invite_min_account_age, '1d');
      assert.deepEqual(s.webhook_allowed_hosts, ['127.0.0.1', '10.0.0.0/8']);
      const page = await pageReq(t, 'GET', '/admin/settings', { cookie: staff.cookie });
      assert.match(page.text, /127\.0\.0\.1\n10\.0\.0\.0\/8<\/textarea>/);
    });

    it('lists, creates, edits and deletes rate-limit rules', async () => {
      const bad = await pageReq(t, 'POST', '/admin/rate-limits', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, scope: 'api:create-repo', max_requests: '0', window_seconds: '60', is_enabled: 'on' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="new-rule-max_requests-error"[^>]*>The max requests must be at least 1/);
      const made = await pageReq(t, 'POST', '/admin/rate-limits', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, scope: 'api:create-repo', max_requests: '50', window_seconds: '60', is_enabled: 'on' },
      });
      assert.equal(made.status, 303, made.text);
      const twice = await pageReq(t, 'POST', '/admin/rate-limits', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, scope: 'api:create-repo', max_requests: '5', window_seconds: '60', is_enabled: 'on' },
      });
      assert.equal(twice.status, 409);
      assert.match(twice.text, /already exists/);
      const rule = (await t.req('GET', '/api/v1/rate-limits')).body.results.find(
        (r: { scope: string }) => r.scope === 'api:create-repo',
      );
      const edited = await pageReq(t, 'POST', `/admin/rate-limits/${rule.uuid}`, {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, scope: 'api:create-repo', max_requests: '70', window_seconds: '120', is_enabled: 'off' },
      });
      assert.equal(edited.status, 303);
      const after = (await t.req('GET', `/api/v1/rate-limits/${rule.uuid}`)).body;
      assert.deepEqual([after.max_requests, after.window_seconds, after.is_enabled], [70, 120, false]);
      const list = await pageReq(t, 'GET', '/admin/rate-limits', { cookie: staff.cookie });
      assert.match(list.text, /api:create-repo<\/strong>: 70 requests per 120 s/);
      assert.equal(
        (
          await pageReq(t, 'POST', `/admin/rate-limits/${rule.uuid}/delete`, {
            cookie: staff.cookie,
            form: { _csrf: staff.csrf, confirm: 'no' },
          })
        ).status,
        400,
      );
      const gone = await pageReq(t, 'POST', `/admin/rate-limits/${rule.uuid}/delete`, {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, confirm: 'delete' },
      });
      assert.equal(gone.status, 303);
      assert.equal((await t.req('GET', `/api/v1/rate-limits/${rule.uuid}`)).status, 404);
    });

    it('signs a new user up with an invite, following the site settings', async () => {
      // invite-only: the sign-in page offers signing up; a signup without an invite is refused
      assert.equal((await t.req('PUT', '/api/v1/site-settings', { body: { signups_require_invite: true } })).status, 200);
      const login = await pageReq(t, 'GET', '/login');
      assert.match(login.text, /href="\/signup"/);
      const form = await pageReq(t, 'GET', '/signup');
      const bound = cookieOf(form.headers['set-cookie'], 'weft_login')!;
      const csrf = csrfOf(form.text);
      assert.match(form.text, /needs an invite/);
      const noCsrf = await pageReq(t, 'POST', '/signup', {
        cookie: bound,
        form: { username: 'nia', email: 'nia@example.com', password: 'long enough' },
      });
      assert.equal(noCsrf.status, 403);
      const noInvite = await pageReq(t, 'POST', '/signup', {
        cookie: bound,
        form: { _csrf: csrf, username: 'nia', email: 'nia@example.com', password: 'long enough' },
      });
      assert.equal(noInvite.status, 403);
      assert.match(noInvite.text, /id="f-invite_uuid-error"[^>]*>Signing up needs an invite/);
      assert.match(noInvite.text, /value="nia@example.com"/);
      // staff creates an invite; its link carries the code into the form
      const badInvite = await pageReq(t, 'POST', '/admin/invites', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, expires_at: 'soon', email: '' },
      });
      assert.equal(badInvite.status, 400);
      assert.match(badInvite.text, /id="f-expires_at-error"[^>]*>expires_at must be an ISO 8601 timestamp/);
      const made = await pageReq(t, 'POST', '/admin/invites', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, expires_at: new Date(Date.now() + 86_400_000).toISOString(), email: '' },
      });
      assert.equal(made.status, 201, made.text);
      const link = /<code id="invite-link" class="wrap">([^<]+)<\/code>/.exec(made.text)![1]!;
      const code = new URL(link).searchParams.get('invite')!;
      const withCode = await pageReq(t, 'GET', `/signup?invite=${code}`);
      assert.match(withCode.text, new RegExp(`name="invite_uuid" type="text" value="${code}"`));
      const signed = await pageReq(t, 'POST', '/signup', {
        cookie: cookieOf(withCode.headers['set-cookie'], 'weft_login')!,
        form: {
          _csrf: csrfOf(withCode.text),
          username: 'nia',
          email: 'nia@example.com',
          password: 'long enough',
          invite_uuid: code,
        },
      });
      assert.equal(signed.status, 303, signed.text);
      const session = cookieOf(signed.headers['set-cookie'], 'weft_session')!;
      const home = await pageReq(t, 'GET', '/', { cookie: session });
      assert.match(home.text, /<a href="\/users\/nia">nia<\/a>/);
      assert.equal((await t.req('GET', `/api/v1/signup-invites/${code}`)).body.status, 'accepted');
      // no API token was made for a web signup: the page signed the user in with a session
      const invites = await pageReq(t, 'GET', '/admin/invites?status=accepted', { cookie: staff.cookie });
      assert.match(invites.text, /accepted by nia/);
      // closed: the page says so and the sign-in page does not offer it
      assert.equal((await t.req('PUT', '/api/v1/site-settings', { body: { signups_enabled: false } })).status, 200);
      assert.equal((await pageReq(t, 'GET', '/signup')).status, 403);
      assert.doesNotMatch((await pageReq(t, 'GET', '/login')).text, /href="\/signup"/);
      assert.equal(
        (await t.req('PUT', '/api/v1/site-settings', { body: { signups_enabled: true, signups_require_invite: false } })).status,
        200,
      );
    });

    it('revokes an invite after a typed confirmation', async () => {
      const made = await t.req('POST', '/api/v1/signup-invites', {
        body: { expires_at: new Date(Date.now() + 86_400_000).toISOString() },
      });
      assert.equal(made.status, 201);
      const path = `/admin/invites/${made.body.uuid}/delete`;
      const unconfirmed = await pageReq(t, 'POST', path, { cookie: staff.cookie, form: { _csrf: staff.csrf, confirm: '' } });
      assert.equal(unconfirmed.status, 400);
      assert.match(unconfirmed.text, /Type revoke to confirm/);
      assert.equal(
        (await pageReq(t, 'POST', path, { cookie: staff.cookie, form: { _csrf: staff.csrf, confirm: 'revoke' } })).status,
        303,
      );
      assert.equal((await t.req('GET', `/api/v1/signup-invites/${made.body.uuid}`)).status, 404);
    });

    it('hooks pages: 404 to outsiders, the API status to members, the whole life of a hook to maintainers', async () => {
      for (const path of [hooks, '/teams/core/-/settings/hooks']) {
        assert.equal((await pageReq(t, 'GET', path, { cookie: olga.cookie })).status, 404, path);
        assert.equal(
          (await pageReq(t, 'POST', path, { cookie: olga.cookie, form: { _csrf: olga.csrf, url: rx.url(), events: '*' } }))
            .status,
          404,
        );
      }
      const api = await t.req('GET', '/api/v1/teams/core/repos/api/hooks', {
        token: (await t.req('POST', '/api/v1/api-tokens', { body: { name: 'x', username: 'bea' } })).body.token,
      });
      assert.equal((await pageReq(t, 'GET', hooks, { cookie: member.cookie })).status, api.status);
      // a refused create: the error beside the field, what was typed kept
      const bad = await pageReq(t, 'POST', hooks, {
        cookie: owner.cookie,
        form: {
          _csrf: owner.csrf,
          url: 'ftp://example.com/x',
          events: 'pull-opened, thread-created',
          branch_filter: 'main',
          active: 'on',
        },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-url-error"[^>]*>url must be an http/);
      assert.match(bad.text, /value="pull-opened, thread-created"/);
      const unknown = await pageReq(t, 'POST', hooks, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, url: rx.url(), events: 'no-such-kind' },
      });
      assert.equal(unknown.status, 400);
      assert.match(unknown.text, /id="f-events-error"[^>]*>events: unknown event kind/);
      // created: the secret on the answer page, once
      const made = await pageReq(t, 'POST', hooks, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, url: rx.url(), events: '*', active: 'on' },
      });
      assert.equal(made.status, 201, made.text);
      const secret = /<code id="hook-secret" class="wrap">(whsec_[^<]+)<\/code>/.exec(made.text)?.[1];
      assert.ok(secret);
      const [hook] = (await t.req('GET', '/api/v1/teams/core/repos/api/hooks', { token: ann.token })).body.results;
      const page = `${hooks}/${hook.uuid}`;
      const shown = await pageReq(t, 'GET', page, { cookie: owner.cookie });
      assert.equal(shown.status, 200);
      assert.doesNotMatch(shown.text, /whsec_/);
      assert.equal((await pageReq(t, 'GET', page, { cookie: olga.cookie })).status, 404);
      // edit: the changes through the API's rules
      const edited = await pageReq(t, 'POST', page, {
        cookie: owner.cookie,
        form: {
          _csrf: owner.csrf,
          url: rx.url('/edited'),
          events: 'thread-created, pull-opened',
          branch_filter: '',
          active: 'on',
        },
      });
      assert.equal(edited.status, 303);
      const after = (await t.req('GET', `/api/v1/teams/core/repos/api/hooks/${hook.uuid}`, { token: ann.token })).body;
      assert.deepEqual(
        [after.url, after.events, after.branch_filter],
        [rx.url('/edited'), ['thread-created', 'pull-opened'], null],
      );
      const badGlob = await pageReq(t, 'POST', page, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, url: rx.url('/edited'), events: '*', branch_filter: '{a', active: 'on' },
      });
      assert.equal(badGlob.status, 400);
      assert.match(badGlob.text, /id="f-branch_filter-error"/);
      // rotating shows the new secret once
      const rotated = await pageReq(t, 'POST', `${page}/rotate-secret`, { cookie: owner.cookie, form: { _csrf: owner.csrf } });
      assert.equal(rotated.status, 200);
      assert.notEqual(/<code id="hook-secret" class="wrap">(whsec_[^<]+)<\/code>/.exec(rotated.text)?.[1], secret);
      // ping: a delivery, its request and response on its page
      const pinged = await pageReq(t, 'POST', `${page}/pings`, { cookie: owner.cookie, form: { _csrf: owner.csrf } });
      assert.equal(pinged.status, 303);
      const deliveryPage = String(pinged.headers.location);
      await waitUntil(() => rx.forHook(hook.uuid).length >= 1, 20_000, 'the ping');
      await waitUntil(
        async () => /HTTP 200/.test((await pageReq(t, 'GET', deliveryPage, { cookie: owner.cookie })).text),
        20_000,
        'the recorded answer',
      );
      const delivery = await pageReq(t, 'GET', deliveryPage, { cookie: owner.cookie });
      assert.match(delivery.text, /<code>webhook-signature<\/code>/);
      assert.match(delivery.text, /&quot;kind&quot;: &quot;ping&quot;/);
      assert.match(delivery.text, />ok<\/code><\/pre>/);
      const apiDelivery = (await t.req('GET', `/api/v1/teams/core/repos/api/hooks/${hook.uuid}/deliveries`, { token: ann.token }))
        .body.results[0];
      assert.equal(apiDelivery.last_attempt.request_body, rx.forHook(hook.uuid)[0]!.body);
      // redeliver: one more attempt of the same delivery
      const again = await pageReq(t, 'POST', `${deliveryPage}/redeliver`, { cookie: owner.cookie, form: { _csrf: owner.csrf } });
      assert.equal(again.status, 303);
      await waitUntil(() => rx.forHook(hook.uuid).length >= 2, 20_000, 'the redelivery');
      assert.equal(rx.forHook(hook.uuid)[1]!.headers['webhook-id'], rx.forHook(hook.uuid)[0]!.headers['webhook-id']);
      // deleting asks for confirmation
      const unconfirmed = await pageReq(t, 'POST', `${page}/delete`, {
        cookie: owner.cookie,
        form: { _csrf: owner.csrf, confirm: 'x' },
      });
      assert.equal(unconfirmed.status, 400);
      assert.match(unconfirmed.text, /id="danger-confirm-error"/);
      assert.equal(
        (await pageReq(t, 'POST', `${page}/delete`, { cookie: owner.cookie, form: { _csrf: owner.csrf, confirm: 'delete' } }))
          .status,
        303,
      );
      assert.equal((await t.req('GET', `/api/v1/teams/core/repos/api/hooks/${hook.uuid}`, { token: ann.token })).status, 404);
    });

    it('pages through all deliveries of a hook with a status filter', async () => {
      const made = await t.req('POST', '/api/v1/teams/core/hooks', {
        token: ann.token,
        body: { url: rx.url('/team'), events: ['*'] },
      });
      assert.equal(made.status, 201, made.text);
      const api = `/api/v1/teams/core/hooks/${made.body.uuid}`;
      for (let i = 0; i < 32; i++) assert.equal((await t.req('POST', `${api}/pings`, { token: ann.token })).status, 202);
      await waitUntil(
        async () =>
          (await t.req('GET', `${api}/deliveries?status=success&per_page=100`, { token: ann.token })).body.results.length === 32,
        30_000,
        'the pings',
      );
      const base = `/teams/core/-/settings/hooks/${made.body.uuid}/deliveries`;
      const first = await pageReq(t, 'GET', `${base}?status=success`, { cookie: owner.cookie });
      assert.equal(first.status, 200);
      assert.equal((first.text.match(/<li class="delivery">/g) ?? []).length, 30);
      assert.match(first.text, /HTTP 200/);
      assert.match(first.text, /status=success&amp;page=2" rel="next"/);
      const second = await pageReq(t, 'GET', `${base}?status=success&page=2`, { cookie: owner.cookie });
      assert.equal((second.text.match(/<li class="delivery">/g) ?? []).length, 2);
      const all = await pageReq(t, 'GET', `${base}?page=2`, { cookie: owner.cookie });
      assert.equal((all.text.match(/<li class="delivery">/g) ?? []).length, 2);
      const failed = await pageReq(t, 'GET', `${base}?status=failed`, { cookie: owner.cookie });
      assert.match(failed.text, /No failed deliveries/);
      assert.equal((await pageReq(t, 'GET', base, { cookie: member.cookie })).status, 403);
      assert.equal((await pageReq(t, 'GET', base, { cookie: olga.cookie })).status, 404);
    });

    it("shows a failed delivery's error", async () => {
      // a hook whose address is refused (not allowed): the ping fails at once, finally
      assert.equal((await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } })).status, 200);
      const made = await t.req('POST', '/api/v1/teams/core/hooks', {
        token: ann.token,
        body: { url: 'http://10.255.255.1:9/x', events: ['*'] },
      });
      assert.equal(made.status, 201, made.text);
      const api = `/api/v1/teams/core/hooks/${made.body.uuid}`;
      assert.equal((await t.req('POST', `${api}/pings`, { token: ann.token })).status, 202);
      await waitUntil(
        async () => (await t.req('GET', `${api}/deliveries?status=failed`, { token: ann.token })).body.results.length === 1,
        30_000,
        'the failed ping',
      );
      const base = `/teams/core/-/settings/hooks/${made.body.uuid}/deliveries`;
      const list = await pageReq(t, 'GET', `${base}?status=failed`, { cookie: owner.cookie });
      assert.match(list.text, /address_not_allowed/);
      const one = /href="([^"]+\/deliveries\/[0-9a-f-]+)"/.exec(list.text)![1]!;
      const page = await pageReq(t, 'GET', one, { cookie: owner.cookie });
      assert.match(page.text, /No answer · <strong>address_not_allowed<\/strong>/);
    });
  });
}
