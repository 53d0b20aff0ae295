import assert from 'node:assert/strict';
import type { TestApp } from './helpers.ts';

/** A signed-in browser for page tests: its session cookie and the session's CSRF token. */
export interface Browser {
  cookie: string;
  csrf: string;
}

export interface PageRes {
  status: number;
  text: string;
  headers: Record<string, string | string[] | number | undefined>;
}

export const PASSWORD = 'correct horse battery';

function cookiePairs(setCookie: unknown): string[] {
  const list = Array.isArray(setCookie) ? setCookie : setCookie === undefined ? [] : [String(setCookie)];
  return list.map((c: string) => c.split(';')[0]!);
}

/** A page request through the app (no socket): a cookie header and an urlencoded form. */
export async function pageReq(
  t: TestApp,
  method: string,
  url: string,
  opts: { cookie?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<PageRes> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.cookie) headers.cookie = opts.cookie;
  let payload: string | undefined;
  if (opts.form) {
    payload = new URLSearchParams(opts.form).toString();
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
  }
  const res = await t.app.inject({ method: method as 'GET', url, headers, ...(payload === undefined ? {} : { payload }) });
  return { status: res.statusCode, text: res.body, headers: res.headers };
}

/** The sign-in form's login cookie and CSRF value. */
export async function loginForm(t: TestApp): Promise<{ cookie: string; csrf: string }> {
  const res = await pageReq(t, 'GET', '/login');
  assert.equal(res.status, 200);
  const cookie = cookiePairs(res.headers['set-cookie']).find((c) => c.startsWith('weft_login='))!;
  return { cookie, csrf: cookie.split('=')[1]! };
}

/** Signs in through `POST /login` and reads the CSRF token from the dashboard. */
export async function signIn(t: TestApp, username: string, password = PASSWORD): Promise<Browser> {
  const form = await loginForm(t);
  const res = await pageReq(t, 'POST', '/login', {
    cookie: form.cookie,
    form: { _csrf: form.csrf, username, password, next: '/' },
  });
  assert.equal(res.status, 303, res.text);
  const cookie = cookiePairs(res.headers['set-cookie']).find((c) => c.startsWith('weft_session='))!;
  assert.ok(cookie, 'a session cookie');
  const home = await pageReq(t, 'GET', '/', { cookie });
  assert.equal(home.status, 200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(home.text)?.[1];
  assert.ok(csrf, 'the dashboard carries a CSRF token');
  return { cookie, csrf };
}
