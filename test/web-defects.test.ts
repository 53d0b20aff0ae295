import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';
import { endOfDayOrAsIs } from '../src/time.ts';
import { DARK_CODE, LIGHT_CODE, contrastRatio } from '../src/web/highlight-theme.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

/**
 * Defects of the pages found by using them (README "Web interface"): an upload refused before its
 * body was read closes its connection; the upload form's CSRF token travels in the body, never the
 * address; a hook to a refused address is warned about at creation; expiry fields take a plain
 * date; log lines name a page's user; SSH_PORT = PORT is refused at start; code colours contrast.
 */

const multipart = (parts: Array<{ name: string; filename?: string; value: string | Buffer }>, boundary = 'XyZ') =>
  Buffer.concat([
    ...parts.flatMap((p) => [
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"\r\nContent-Type: text/plain` : ''}\r\n\r\n`,
      ),
      Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value),
      Buffer.from('\r\n'),
    ]),
    Buffer.from(`--${boundary}--\r\n`),
  ]);

for (const dialect of DIALECTS) {
  describe(`web page defects (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string };
    let ann: Browser;
    let base: string;
    const logs: string[] = [];
    const repo = '/teams/core/api';
    const api = '/api/v1/teams/core/repos/api';

    before(async () => {
      t = await startApp(dialect, {
        config: { maxUploadBytes: 1024, logLevel: 'info' },
        logStream: { write: (line: string) => void logs.push(line) },
      });
      alice = await t.user('ann');
      const ok = (res: { status: number; text: string }) => assert.equal(res.status, 201, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/repos', { token: alice.token, body: { name: 'API', slug: 'api' } }));
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'First' } }));
      ann = await signIn(t, 'ann');
      base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => t.close());

    it('closes the connection after refusing an upload whose body it did not read (413, forged form)', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const send = (body: Buffer) =>
        new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
          const req = httpRequest(
            `${base}${repo}/threads/1/attachments`,
            {
              method: 'POST',
              agent,
              headers: {
                cookie: ann.cookie,
                'content-type': 'multipart/form-data; boundary=XyZ',
                'content-length': String(body.length),
              },
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
            },
          );
          req.on('error', (err) => {
            // the server may close before the whole body was written: that is the point
            if ((err as { code?: string }).code !== 'EPIPE' && (err as { code?: string }).code !== 'ECONNRESET') reject(err);
          });
          // As a browser does: the body's start, then no more once the answer came (the rest of a
          // large file would follow). Left on a keep-alive connection, the next request would wait
          // for the rest of this body until the request timeout.
          req.write(body.subarray(0, 4096));
        });
      const big = Buffer.alloc(4 * 1024 * 1024, 'a');
      const tooLarge = await send(
        multipart([
          { name: '_csrf', value: ann.csrf },
          { name: 'file', filename: 'big.txt', value: big },
        ]),
      );
      assert.equal(tooLarge.status, 413);
      assert.equal(tooLarge.connection, 'close');
      const forged = await send(
        multipart([
          { name: '_csrf', value: 'nope' },
          { name: 'file', filename: 'big.txt', value: big },
        ]),
      );
      assert.equal(forged.status, 403);
      assert.equal(forged.connection, 'close');
      agent.destroy();
      assert.equal((await t.req('GET', `${api}/uploads`, { token: alice.token })).body.results.length, 0);
    });

    it('carries the upload form’s CSRF token in the body, never in its address', async () => {
      const page = await pageReq(t, 'GET', `${repo}/threads/1`, { cookie: ann.cookie });
      const form = /<form[^>]*attachments[^>]*>[\s\S]*?<\/form>/.exec(page.text)?.[0] ?? '';
      assert.match(form, /action="\/teams\/core\/api\/threads\/1\/attachments"/);
      assert.doesNotMatch(form, /_csrf=/);
      // the token field comes before the file, so it is read first
      assert.ok(form.indexOf('name="_csrf"') >= 0 && form.indexOf('name="_csrf"') < form.indexOf('name="file"'), form);
      const file = { name: 'file', filename: 'a.txt', value: 'abc' };
      const post = (url: string, payload: Buffer, headers: Record<string, string> = {}) =>
        t.app.inject({
          method: 'POST',
          url,
          headers: { cookie: ann.cookie, 'content-type': 'multipart/form-data; boundary=XyZ', ...headers },
          payload,
        });
      // the address no longer carries it
      const inUrl = await post(`${repo}/threads/1/attachments?_csrf=${encodeURIComponent(ann.csrf)}`, multipart([file]));
      assert.equal(inUrl.statusCode, 403, inUrl.body);
      const none = await post(`${repo}/threads/1/attachments`, multipart([file]));
      assert.equal(none.statusCode, 403, none.body);
      const afterFile = await post(`${repo}/threads/1/attachments`, multipart([file, { name: '_csrf', value: ann.csrf }]));
      assert.equal(afterFile.statusCode, 403, afterFile.body);
      assert.equal((await t.req('GET', `${api}/uploads`, { token: alice.token })).body.results.length, 0);
      const inBody = await post(`${repo}/threads/1/attachments`, multipart([{ name: '_csrf', value: ann.csrf }, file]));
      assert.equal(inBody.statusCode, 303, inBody.body);
      const inHeader = await post(`${repo}/threads/1/attachments`, multipart([file]), { 'x-csrf-token': ann.csrf });
      assert.equal(inHeader.statusCode, 303, inHeader.body);
      const list = await t.req('GET', `${api}/threads/1/attachments`, { token: alice.token });
      assert.equal(list.body.results.length, 2);
    });

    it('warns at creation about a hook whose address deliveries refuse (API warnings, and the page)', async () => {
      const refused = await t.req('POST', `${api}/hooks`, {
        token: alice.token,
        body: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
      });
      assert.equal(refused.status, 201, refused.text);
      assert.equal(refused.body.warnings.length, 1);
      assert.match(refused.body.warnings[0], /127\.0\.0\.1.*webhook_allowed_hosts/);
      const fine = await t.req('POST', `${api}/hooks`, {
        token: alice.token,
        body: { url: 'http://93.184.215.14/hook', events: ['*'] },
      });
      assert.deepEqual(fine.body.warnings, []);
      const page = await pageReq(t, 'POST', `${repo}/settings/hooks`, {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, url: 'http://10.1.2.3/hook', events: '*' },
      });
      assert.equal(page.status, 201, page.text);
      assert.match(page.text, /class="warning" role="alert"><strong>Warning:<\/strong> Deliveries to 10\.1\.2\.3/);
      const allowed = await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['10.0.0.0/8'] } });
      assert.equal(allowed.status, 200, allowed.text);
      const now = await t.req('POST', `${api}/hooks`, { token: alice.token, body: { url: 'http://10.1.2.3/x', events: ['*'] } });
      assert.deepEqual(now.body.warnings, []);
    });

    it('reads a plain date in an expiry field as the end of that day in the browser’s time zone', async () => {
      const res = await pageReq(t, 'POST', '/settings/tokens', {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, name: 'dated', expires_at: '2099-01-31', tz: 'Europe/Paris' },
      });
      assert.equal(res.status, 200, res.text);
      const tokens = await t.req('GET', '/api/v1/api-tokens', { token: alice.token });
      const dated = tokens.body.results.find((x: { name: string }) => x.name === 'dated');
      assert.equal(dated.expires_at, '2099-01-31T22:59:59.999Z');
      const page = await pageReq(t, 'GET', '/settings/tokens', { cookie: ann.cookie });
      assert.match(page.text, /name="tz" value="" data-tz/);
      // no time zone (no JavaScript): UTC; a bad date is the API's error beside the field
      const utc = await pageReq(t, 'POST', '/settings/tokens', {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, name: 'utc', expires_at: '2099-01-31', tz: '' },
      });
      assert.equal(utc.status, 200);
      const all = (await t.req('GET', '/api/v1/api-tokens', { token: alice.token })).body.results;
      assert.equal(all.find((x: { name: string }) => x.name === 'utc').expires_at, '2099-01-31T23:59:59.999Z');
      const bad = await pageReq(t, 'POST', '/settings/tokens', {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, name: 'bad', expires_at: '2099-02-30', tz: 'UTC' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-expires_at-error"/);
      assert.equal(endOfDayOrAsIs('2099-06-30', 'America/New_York'), '2099-07-01T03:59:59.999Z');
    });

    it('names a page’s signed-in user in the request log line', async () => {
      logs.length = 0;
      const res = await pageReq(t, 'GET', `${repo}/threads`, { cookie: ann.cookie, headers: { 'x-request-id': 'page-log-1' } });
      assert.equal(res.status, 200);
      const line = logs.map((l) => JSON.parse(l)).find((l) => l.reqId === 'page-log-1' && l.msg === 'request completed');
      assert.ok(line, logs.join(''));
      assert.equal(line.user, 'ann');
      assert.equal(line.route, '/teams/:team_slug/:repo_slug/threads');
    });

    it('serves code colours that all reach 4.5:1 in both themes', async () => {
      for (const theme of [LIGHT_CODE, DARK_CODE]) {
        for (const [sel, color] of Object.entries(theme.tokens)) {
          assert.ok(contrastRatio(color, theme.background) >= 4.5, `${sel} ${color} on ${theme.background}`);
        }
        for (const [sel, m] of Object.entries(theme.marks)) {
          assert.ok(contrastRatio(m.color, m.background) >= 4.5, `${sel}`);
        }
      }
      const css = await pageReq(t, 'GET', '/static/highlight.css');
      assert.match(css.text, /\.hljs-built_in,\.hljs-symbol\{color:#953800\}/);
      assert.match(css.text, /prefers-color-scheme:dark/);
      assert.doesNotMatch(css.text, /#e36209/);
    });
  });
}

describe('start-up configuration', () => {
  it('refuses SSH_PORT equal to PORT, naming both', () => {
    assert.throws(
      () => loadConfig({ PORT: '4000', SSH_PORT: '4000', DATA_DIR: '/tmp/x' }),
      (err: unknown) => err instanceof ConfigError && /SSH_PORT equals PORT \(4000\)/.test(err.message),
    );
    assert.equal(loadConfig({ PORT: '4000', SSH_PORT: '0', DATA_DIR: '/tmp/x' }).sshPort, 0);
    assert.equal(loadConfig({ PORT: '4000', SSH_PORT: '4000', SSH_HOST: '127.0.0.2', DATA_DIR: '/tmp/x' }).sshPort, 4000);
  });
});

describe('errors in words', () => {
  it('turns schema paths, codes and operation ids into sentences', async () => {
    const { inWords } = await import('../src/web/words.ts');
    assert.equal(
      inWords('body.password must NOT have fewer than 8 characters.'),
      'The password must have at least 8 characters.',
    );
    assert.equal(inWords('body has an unknown property "x".'), 'The form has a field it does not take (“x”).');
    assert.equal(inWords('body is missing the required property "display_name".'), 'Fill in the display name.');
    assert.equal(
      inWords('Too many requests for api:login: at most 5 in the window. Retry in 9 seconds.'),
      'Too many requests for signing in: at most 5 in the window. Retry in 9 seconds.',
    );
    assert.equal(inWords('body.max_requests must be >= 1.'), 'The max requests must be at least 1.');
  });
});
