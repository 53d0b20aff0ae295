import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type RequestOptions, type Res, type TestApp, isErrorBody, startApp } from './helpers.ts';

/**
 * Bad input for every operation of the OpenAPI document, generically: the document says which
 * operations take a body, which query parameters are integers and which path parameters exist,
 * and every such operation gets the same battery of malformed requests. Every refusal must be a
 * 4xx error envelope, nothing may be a 5xx, and the refused requests must change no row.
 */

type Json = any;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const TABLES = [
  'users',
  'api_tokens',
  'teams',
  'team_members',
  'repos',
  'forks',
  'protections',
  'protection_approvers',
  'pulls',
  'reviews',
  'events',
] as const;

interface Operation {
  key: string;
  method: string;
  path: string;
  op: Json;
  body: Json | null;
  params: Json[];
}

/** One exchange, kept for the final "no 5xx anywhere" check. */
interface Seen {
  what: string;
  status: number;
}

function typesOf(schema: Json): string[] {
  if (Array.isArray(schema?.type)) return schema.type;
  if (typeof schema?.type === 'string') return [schema.type];
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  if (Array.isArray(alternatives)) return [...new Set(alternatives.flatMap(typesOf))];
  if (schema?.const !== undefined) return [typeof schema.const];
  if (Array.isArray(schema?.enum)) return [...new Set(schema.enum.map((v: unknown) => typeof v))] as string[];
  return [];
}

/** A value the schema accepts: the first literal of an enum, a plausible string, the minimum. */
function sampleOf(schema: Json): unknown {
  if (schema?.const !== undefined) return schema.const;
  if (Array.isArray(schema?.enum)) return schema.enum[0];
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  if (Array.isArray(alternatives)) return sampleOf(alternatives[0]);
  const types = typesOf(schema);
  if (types.includes('string')) {
    if (schema.format === 'email') return 'fuzz@example.com';
    if (schema.format === 'date-time') return '2999-01-01T00:00:00.000Z';
    return 'fuzzvalue'.padEnd(schema.minLength ?? 1, 'x');
  }
  if (types.includes('integer') || types.includes('number')) return schema.minimum ?? 1;
  if (types.includes('boolean')) return false;
  if (types.includes('null')) return null;
  if (types.includes('object')) return {};
  if (types.includes('array')) return [];
  return 'x';
}

/** The required properties only, each with a sample value. */
function minimalBody(schema: Json): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of schema.required ?? []) out[name] = sampleOf(schema.properties[name]);
  return out;
}

/**
 * Values a property's schema refuses: a number for a string, a string for an integer or a
 * boolean, an object, null where not nullable, a value outside an enum, too long, out of range.
 */
function wrongValues(schema: Json): unknown[] {
  const types = typesOf(schema);
  const wrong: unknown[] = [];
  if (types.includes('string')) wrong.push(12345, { nested: 'object' }, ['array'], true);
  if (types.includes('integer') || types.includes('number')) wrong.push('abc', '12', 1.5, { n: 1 }, true);
  if (types.includes('integer')) {
    wrong.push(1e300, Number.MAX_SAFE_INTEGER + 2);
    if (typeof schema.minimum === 'number') wrong.push(schema.minimum - 1);
    if (typeof schema.maximum === 'number') wrong.push(schema.maximum + 1);
  }
  if (types.includes('boolean')) wrong.push('abc', 'true', 1, { b: true });
  if (!types.includes('null')) wrong.push(null);
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  if (Array.isArray(schema?.enum) || (Array.isArray(alternatives) && alternatives.every((a: Json) => a.const !== undefined))) {
    wrong.push('not-one-of-them', '');
  }
  if (typeof schema?.maxLength === 'number') wrong.push('x'.repeat(schema.maxLength + 1));
  return wrong;
}

const integerQueryValues = ['abc', '-1', '0', '1.5', '99999999999999999999', '', '0x10', '1e2', '+1', ' 1', 'Infinity', '1,2'];

for (const dialect of DIALECTS) {
  describe(`bad input for every operation of the OpenAPI document (${dialect})`, () => {
    let t: TestApp;
    let operations: Operation[];
    let adminUuid: string;
    /** real values for every path parameter name, so that paths resolve */
    const real: Record<string, string> = {};
    const seen: Seen[] = [];
    let counts: Record<string, number>;

    async function rowCounts(): Promise<Record<string, number>> {
      const out: Record<string, number> = {};
      for (const table of TABLES) {
        const row = await t.deps.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow();
        out[table] = Number(row.n);
      }
      return out;
    }

    async function send(method: string, url: string, opts: RequestOptions = {}): Promise<Res> {
      const res = await t.req(method, url, opts);
      seen.push({ what: `${method} ${url.slice(0, 200)}`, status: res.status });
      return res;
    }

    /** Failures of the current test, collected so one run reports all of them. */
    let problems: string[] = [];
    const check = (ok: boolean, message: string) => {
      if (!ok) problems.push(message);
    };
    const noProblems = () => {
      const found = problems;
      problems = [];
      assert.ok(found.length === 0, `${found.length} problems:\n${found.slice(0, 60).join('\n')}`);
    };

    /** The request must be refused with one of `statuses` and exactly the error envelope. */
    async function refused(what: string, statuses: number[], method: string, url: string, opts: RequestOptions = {}) {
      const res = await send(method, url, opts);
      const where = `${what}: ${method} ${url.slice(0, 120)}`;
      if (!statuses.includes(res.status)) check(false, `${where} gave ${res.status} ${res.text.slice(0, 160)}`);
      else check(isErrorBody(res.body) && res.body.conflict_paths === undefined, `${where} envelope: ${res.text.slice(0, 160)}`);
      return res;
    }

    /** The path with every parameter filled with its real value, or with an override. */
    function urlOf(o: Operation, override: Record<string, string> = {}, query = ''): string {
      const path = o.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
        if (name in override) return override[name]!;
        assert.ok(name in real, `no real value for path parameter ${name} (${o.key})`);
        return encodeURIComponent(real[name]!);
      });
      return `/api/v1${path}${query}`;
    }

    /** Required query parameters of an operation, filled with sane values. */
    function requiredQuery(o: Operation): Record<string, string> {
      const out: Record<string, string> = {};
      for (const p of o.params) {
        if (p.in !== 'query' || !p.required) continue;
        if (p.name === 'scope') out.scope = `user:${adminUuid}`;
        else out[p.name] = String(sampleOf(p.schema));
      }
      return out;
    }

    const qs = (params: Record<string, string>) => {
      const s = new URLSearchParams(params).toString();
      return s ? `?${s}` : '';
    };

    before(async () => {
      t = await startApp(dialect);
      const doc = (await t.req('GET', '/api/v1/openapi.json', { token: null })).body;
      operations = [];
      for (const [path, item] of Object.entries<Json>(doc.paths)) {
        for (const [method, op] of Object.entries<Json>(item)) {
          if (!METHODS.includes(method)) continue;
          operations.push({
            key: `${method.toUpperCase()} ${path}`,
            method: method.toUpperCase(),
            path,
            op,
            body: op.requestBody?.content?.['application/json']?.schema ?? null,
            params: op.parameters ?? [],
          });
        }
      }
      assert.ok(operations.length > 50, 'the document lists the API');

      // A small world so every path resolves: team fz (with a member), a public team repo, a
      // user repo, a fork, a protection with an approver, a pull with a review, a spare token.
      const me = await t.req('GET', '/api/v1/user');
      adminUuid = me.body.uuid;
      const fzu = await t.user('fzu');
      const ok = (res: Res, what: string) => {
        assert.ok(res.status >= 200 && res.status < 300, `set-up ${what}: ${res.status} ${res.text}`);
        return res.body;
      };
      ok(await t.req('POST', '/api/v1/teams', { body: { name: 'Fuzz', slug: 'fz' } }), 'team');
      ok(await t.req('POST', '/api/v1/teams/fz/members', { body: { username: 'fzu', role: 'member' } }), 'member');
      ok(await t.req('POST', '/api/v1/teams/fz/repos', { body: { name: 'r1', slug: 'r1', visibility: 'public' } }), 'team repo');
      ok(
        await t.req('POST', '/api/v1/users/fzu/repos', {
          body: { name: 'r1', slug: 'r1', visibility: 'public' },
          token: fzu.token,
        }),
        'user repo',
      );
      ok(await t.req('POST', '/api/v1/teams', { body: { name: 'Fuzz forks', slug: 'fzf' } }), 'fork team');
      const fork = ok(await t.req('POST', '/api/v1/teams/fz/repos/r1/forks?team=fzf'), 'fork');
      const protection = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/protections', { body: { branch: 'main', required_approvals: 1 } }),
        'protection',
      );
      ok(
        await t.req('POST', `/api/v1/teams/fz/repos/r1/protections/${protection.uuid}/approvers`, { body: { username: 'fzu' } }),
        'approver',
      );
      ok(
        await t.req('POST', `/api/v1/users/fzu/repos/r1/protections`, { body: { branch: 'main' }, token: fzu.token }),
        'user protection',
      );
      const pull = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/pulls', {
          body: { title: 'Fuzz', body: '', source_branch: 'feature/fz', target_branch: 'main' },
        }),
        'pull',
      );
      ok(
        await t.req('POST', '/api/v1/users/fzu/repos/r1/pulls', {
          body: { title: 'Fuzz', body: '', source_branch: 'feature/fz', target_branch: 'main' },
          token: fzu.token,
        }),
        'user pull',
      );
      const review = ok(
        await t.req('POST', `/api/v1/teams/fz/repos/r1/pulls/${pull.number}/reviews`, { body: { status: 'commented' } }),
        'review',
      );
      const spare = ok(await t.req('POST', '/api/v1/api-tokens', { body: { name: 'spare', username: 'fzu' } }), 'spare token');
      const thread = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/threads', { body: { title: 'Fuzz', body: 'x' } }),
        'thread',
      );
      assert.equal(thread.number, pull.number, 'the thread and the pull share the number parameter');
      const reply = ok(
        await t.req('POST', `/api/v1/teams/fz/repos/r1/threads/${thread.number}/replies`, { body: { body: 'x' } }),
        'reply',
      );
      const upload = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/uploads?filename=a.txt', {
          rawBody: 'abc',
          headers: { 'content-type': 'text/plain' },
        }),
        'upload',
      );
      const group = ok(await t.req('POST', '/api/v1/teams/fz/repos/r1/upload-groups', { body: {} }), 'upload group');
      const timer = ok(
        await t.req('POST', '/api/v1/users/fzu/timers', { token: fzu.token, body: { message: 'x', every_seconds: 86400 } }),
        'timer',
      );
      const events = ok(await t.req('GET', `/api/v1/events?scope=user:${fzu.uuid}`), 'events');

      const hook = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/hooks', { body: { url: 'http://127.0.0.1:9/hook', events: ['*'] } }),
        'hook',
      );

      const label = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/labels', { body: { name: 'fzbug', color: 'ff0000' } }),
        'label',
      );
      const teamRepo = ok(await t.req('GET', '/api/v1/teams/fz/repos/r1'), 'team repo read');
      // a draft release (no tag needed) with an asset
      ok(await t.req('POST', '/api/v1/teams/fz/repos/r1/releases', { body: { tag_name: 'v1', draft: true } }), 'release');
      const asset = ok(
        await t.req('POST', '/api/v1/teams/fz/repos/r1/releases/v1/assets?name=a.bin', {
          rawBody: 'abc',
          headers: { 'content-type': 'application/octet-stream' },
        }),
        'asset',
      );

      Object.assign(real, {
        name: label.name,
        repo_uuid: teamRepo.uuid,
        key_uuid: '00000000-0000-4000-8000-000000000000',
        username: 'fzu',
        team_slug: 'fz',
        repo_slug: 'r1',
        uuid: spare.uuid,
        id: events.results[0].id,
        fork_uuid: fork.uuid ?? fork.fork?.uuid ?? '',
        fork_team_slug: 'fzf',
        fork_username: 'fzu',
        protection_uuid: protection.uuid,
        user_uuid: fzu.uuid,
        number: String(pull.number),
        review_uuid: review.uuid,
        comment_uuid: '00000000-0000-4000-8000-000000000000',
        reply_number: String(reply.number),
        upload_uuid: upload.uuid,
        group_uuid: group.uuid,
        timer_uuid: timer.uuid,
        tag: 'v1',
        asset_uuid: asset.uuid,
        mirror_uuid: '00000000-0000-4000-8000-000000000000',
        // reading code (the repo has no commit: these resolve to a 404, which is enough for the paths)
        ref: 'main',
        basehead: 'main...main',
        path: 'README.md',
        ref_and_path: 'main/README.md',
        archive: 'main.tar.gz',
        branch: 'main',
        hook_uuid: hook.uuid,
        delivery_uuid: '00000000-0000-4000-8000-000000000000',
        // CI: a runner route refuses before it looks a job up (no runner secret: 401)
        job_uuid: '00000000-0000-4000-8000-000000000000',
        runner_uuid: '00000000-0000-4000-8000-000000000000',
        file: 'ci.yml',
        sha: '0'.repeat(40),
      });
      counts = await rowCounts();
    });
    after(() => t.close());

    it('every path parameter has a real value', () => {
      for (const o of operations) urlOf(o);
    });

    it('bodies: malformed, not an object, unknown or mistyped properties, NUL, too large, not JSON, not UTF-8', async () => {
      const withBody = operations.filter((o) => o.body);
      assert.ok(withBody.length > 20);
      for (const o of withBody) {
        const url = urlOf(o);
        const json = (rawBody: string | Buffer) => ({ rawBody, headers: { 'content-type': 'application/json' } });
        const minimal = minimalBody(o.body);
        for (const raw of [
          '{',
          '{"a":',
          '{"a" 1}',
          "{'a':1}",
          '[]',
          '[{}]',
          '"a string"',
          '1',
          'true',
          'null',
          '{"a":1}{"b":2}',
          '{"a":1,}',
          'NaN',
        ]) {
          await refused(`${o.key} body ${raw}`, [400], o.method, url, json(raw));
        }
        // An empty body is no body: refused where the body has required properties.
        if (o.body.required?.length) await refused(`${o.key} empty JSON body`, [400], o.method, url, json(''));
        await refused(`${o.key} unknown property`, [400], o.method, url, { body: { ...minimal, __unknown__: 1 } });
        await refused(
          `${o.key} __proto__`,
          [400],
          o.method,
          url,
          json(`{"__proto__":{"is_staff":true},${JSON.stringify(minimal).slice(1)}`),
        );
        for (const [name, schema] of Object.entries<Json>(o.body.properties ?? {})) {
          for (const value of wrongValues(schema)) {
            await refused(`${o.key} ${name}=${JSON.stringify(value)}`, [400], o.method, url, {
              body: { ...minimal, [name]: value },
            });
          }
          if (typesOf(schema).includes('string')) {
            await refused(`${o.key} ${name} with NUL`, [400], o.method, url, { body: { ...minimal, [name]: 'a\u0000b' } });
            await refused(
              `${o.key} ${name} lone surrogate`,
              [400],
              o.method,
              url,
              json(JSON.stringify({ ...minimal, [name]: 'x' }).replace('"x"', '"\\ud800"')),
            );
          }
        }
        const big = JSON.stringify({ ...minimal, __pad__: 'x'.repeat(1024 * 1024 + 10) });
        await refused(`${o.key} over 1 MiB`, [413], o.method, url, json(big));
        for (const type of [
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'application/json; charset=latin1',
        ]) {
          await refused(`${o.key} ${type}`, [415], o.method, url, {
            rawBody: JSON.stringify(minimal),
            headers: { 'content-type': type },
          });
        }
        await refused(`${o.key} gzip`, [415], o.method, url, {
          rawBody: JSON.stringify(minimal),
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        });
        const invalidUtf8 = Buffer.concat([Buffer.from('{"x":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]);
        await refused(`${o.key} invalid UTF-8`, [400], o.method, url, json(invalidUtf8));
        const overlong = Buffer.concat([Buffer.from('{"x":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]);
        await refused(`${o.key} overlong UTF-8`, [400], o.method, url, json(overlong));
      }
      noProblems();
    });

    it('bodies on operations that declare none are refused before anything happens', async () => {
      // Operations with a raw or multipart body (uploads) declare it without a JSON schema.
      const noBody = operations.filter((o) => !o.op.requestBody && o.method !== 'GET');
      assert.ok(noBody.length > 5);
      for (const o of noBody) {
        const url = urlOf(o, {}, qs(requiredQuery(o)));
        const json = (rawBody: string | Buffer) => ({ rawBody, headers: { 'content-type': 'application/json' } });
        for (const raw of ['{', '[]', '"s"', '{"__unknown__":1}', '{"a":"\\u0000"}']) {
          await refused(`${o.key} body ${raw}`, [400], o.method, url, json(raw));
        }
        await refused(`${o.key} over 1 MiB`, [413], o.method, url, json(JSON.stringify({ p: 'x'.repeat(1024 * 1024 + 10) })));
        await refused(`${o.key} text/plain`, [415], o.method, url, {
          rawBody: 'hello',
          headers: { 'content-type': 'text/plain' },
        });
      }
      noProblems();
    });

    it('query parameters: integers that are not positive decimal integers are 400; a huge per_page clamps', async () => {
      let checked = 0;
      for (const o of operations) {
        for (const p of o.params.filter((x) => x.in === 'query')) {
          const types = typesOf(p.schema);
          const base = requiredQuery(o);
          if (types.includes('integer')) {
            for (const value of integerQueryValues) {
              const url = urlOf(o, {}, qs({ ...base, [p.name]: value }));
              if (p.name === 'per_page' && value === '99999999999999999999') {
                const res = await send(o.method, url);
                check(res.status < 500, `${o.key} ${url}: ${res.status}`);
                if (res.status === 200) {
                  for (const link of [res.body.next, res.body.previous]) {
                    if (link) check(/per_page=100(&|$)/.test(link), `${o.key}: per_page clamped in links: ${link}`);
                  }
                } else check(isErrorBody(res.body), `${o.key} ${url}: ${res.text}`);
                continue;
              }
              await refused(`${o.key} ${p.name}=${value}`, [400], o.method, url);
            }
            await refused(
              `${o.key} ${p.name} twice`,
              [400],
              o.method,
              `${urlOf(o, {}, qs(base))}${Object.keys(base).length ? '&' : '?'}${p.name}=1&${p.name}=2`,
            );
            checked++;
          } else if (types.includes('boolean')) {
            for (const value of ['abc', 'yes', '1', '']) {
              await refused(`${o.key} ${p.name}=${value}`, [400], o.method, urlOf(o, {}, qs({ ...base, [p.name]: value })));
            }
          } else if (p.schema?.anyOf || p.schema?.enum) {
            await refused(`${o.key} ${p.name}=bogus`, [400], o.method, urlOf(o, {}, qs({ ...base, [p.name]: 'bogus-value' })));
          }
          // Every kind of query parameter: NUL and broken percent-encoding.
          for (const raw of ['%00', '%', '%zz', '%ff', '%ed%a0%80']) {
            const url = `${urlOf(o, {}, qs(base))}${Object.keys(base).length ? '&' : '?'}${p.name}=${raw}`;
            await refused(`${o.key} ${p.name}=${raw}`, [400], o.method, url);
          }
          // Long and unusual text: refused or answered, never a 5xx.
          // (Reads only: a write given such text may legitimately succeed, e.g. an upload's filename.)
          // An event stream's success never ends under inject: its refusals are checked, its streams in tail-events.test.ts.
          for (const value of o.method === 'GET' && o.path !== '/tail-events'
            ? ['x'.repeat(5000), 'ünïcødé 😀', '../..', "' or 1=1 --", '%', '\\', '*', '[]']
            : []) {
            const url = urlOf(o, {}, qs({ ...base, [p.name]: value }));
            const res = await send(o.method, url);
            check(
              res.status < 500 && (res.status < 300 || isErrorBody(res.body)),
              `${o.key} ${p.name}=${value.slice(0, 20)}: ${res.status} ${res.text.slice(0, 160)}`,
            );
          }
          if (p.required) {
            const rest = { ...base };
            delete rest[p.name];
            await refused(`${o.key} without ${p.name}`, [400], o.method, urlOf(o, {}, qs(rest)));
          }
        }
      }
      assert.ok(checked > 20, `integer query parameters checked: ${checked}`);
      noProblems();
    });

    it('path parameters: dot segments, NUL, very long, unicode, bad encoding, case', async () => {
      const tricks = [
        '..',
        '%2e%2e',
        '.',
        '%2E%2E%2F%2E%2E',
        '%00',
        'a%00b',
        'x'.repeat(5000),
        encodeURIComponent('ünïcødé'),
        encodeURIComponent('😀'),
        '%ff',
        '%ed%a0%80',
        '%',
        '%zz',
        '%20',
        '-1',
        '0',
        '1.5',
        '99999999999999999999',
        'abc',
        '0x1',
        '1e0',
        '%2B1',
        '%201',
        'Infinity',
      ];
      for (const o of operations) {
        const names = [...o.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
        // Writes get a body that passes the schema, so the path is what is judged.
        const opts: RequestOptions = o.body ? { body: minimalBody(o.body) } : {};
        const query = qs(requiredQuery(o));
        for (const name of names) {
          for (const trick of tricks) {
            const url = urlOf(o, { [name]: trick }, query);
            // A client (and inject) normalises dot segments away before sending: the request then
            // names another resource, which may exist. Over a raw socket the server refuses them (400).
            if (new URL(url, 'http://x').pathname !== url.split('?')[0]) continue;
            const res = await send(o.method, url, opts);
            check(
              res.status >= 400 && res.status < 500,
              `${o.key} ${name}=${trick.slice(0, 40)}: ${res.status} ${res.text.slice(0, 200)}`,
            );
            check(isErrorBody(res.body), `${o.key} ${name}=${trick.slice(0, 40)} envelope: ${res.text.slice(0, 200)}`);
          }
          if (o.method === 'GET') {
            // The same resource in upper case: found (names are case-insensitive) or not, never a 5xx.
            const url = urlOf(o, { [name]: encodeURIComponent(real[name]!.toUpperCase()) }, query);
            const res = await send(o.method, url);
            check(
              res.status < 500 && (res.status < 300 || isErrorBody(res.body)),
              `${o.key} ${name} upper case: ${res.status} ${res.text.slice(0, 200)}`,
            );
          }
        }
      }
      noProblems();
    });

    it('no 5xx anywhere, and the refused requests changed no row', async () => {
      assert.ok(seen.length > 1000, `requests sent: ${seen.length}`);
      const failures = seen.filter((s) => s.status >= 500);
      assert.deepEqual(failures, []);
      assert.deepEqual(await rowCounts(), counts);
    });
  });
}
