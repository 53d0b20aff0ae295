import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { EVENT_KINDS } from '../src/events/kinds.ts';
import { routesWithoutOperationId } from '../src/http/openapi.ts';
import { ERROR_CODES } from '../src/http/openapi-transform.ts';
import { OPERATION_IDS, RESPONSE_SCHEMAS, TAGS } from '../src/http/operation-ids.ts';
import { ROUTE_SCOPES } from '../src/http/route-scopes.ts';
import { ROOT } from './foundation-helpers.ts';
import { type TestApp, startApp } from './helpers.ts';

// The OpenAPI document as code generators see it. A route added later without its operationId,
// or answering an unnamed object, fails here with the line to add to src/http/operation-ids.ts.

type Json = any;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

describe('OpenAPI for code generators', () => {
  let t: TestApp;
  let doc: Json;
  let dir: string;
  let ops: Array<{ key: string; op: Json }>;
  before(async () => {
    t = await startApp('sqlite');
    const res = await t.req('GET', '/api/v1/openapi.json', { token: null });
    assert.equal(res.status, 200);
    doc = res.body;
    dir = mkdtempSync(join(tmpdir(), 'weft-openapi-'));
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc));
    ops = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const m of METHODS) if (item[m]) ops.push({ key: `${m} ${path}`, op: item[m] });
    }
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('every operation has a unique camelCase operationId; the existing ones are stable', () => {
    const ids = ops.map((o) => o.op.operationId);
    for (const { key, op } of ops) assert.match(String(op.operationId), /^[a-z][A-Za-z0-9]*$/, key);
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique');
    const byKey = Object.fromEntries(ops.map((o) => [o.key, o.op.operationId]));
    assert.equal(byKey['post /teams/{team_slug}/repos/{repo_slug}/pulls/{number}/merge'], 'mergePull');
    assert.equal(byKey['post /users/{username}/repos/{repo_slug}/pulls/{number}/merge'], 'mergeUserPull');
    assert.equal(byKey['get /teams/{team_slug}/repos/{repo_slug}'], 'getRepo');
    assert.equal(byKey['get /users/{username}/repos/{repo_slug}'], 'getUserRepo');
    assert.equal(byKey['get /user'], 'getAuthenticatedUser');
    assert.equal(byKey['get /events'], 'listEvents');
  });

  it('every route has the operationId chosen for it in src/http/operation-ids.ts', () => {
    const missing = routesWithoutOperationId(t.app);
    assert.deepEqual(
      missing,
      [],
      `routes without an operationId: add a line for each to OPERATION_IDS in src/http/operation-ids.ts, keyed as in src/http/route-scopes.ts, with a camelCase verb-noun id written for the team form (the user form inserts User after the verb), e.g.\n${missing.map((k) => `  '${k}': 'listThings',`).join('\n')}`,
    );
    const stale = Object.keys(OPERATION_IDS).filter((k) => !Object.hasOwn(ROUTE_SCOPES, k));
    assert.deepEqual(stale, [], 'entries in OPERATION_IDS (src/http/operation-ids.ts) without a route');
    const ids = new Set(ops.map((o) => o.op.operationId));
    const unused = Object.keys(RESPONSE_SCHEMAS).filter((id) => !ids.has(id));
    assert.deepEqual(unused, [], 'entries in RESPONSE_SCHEMAS (src/http/operation-ids.ts) naming no operation');
  });

  it('every 2xx JSON object body is a named component schema (a Page: its items too)', () => {
    const schemas = doc.components.schemas;
    const named = (schema: Json) => typeof schema?.$ref === 'string';
    const inline: string[] = [];
    for (const { key, op } of ops) {
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (!/^2\d\d$/.test(status)) continue;
        const body = response.content?.['application/json']?.schema;
        if (!body) continue;
        const branches = body.anyOf ?? body.oneOf ?? [body];
        for (const branch of branches) {
          if (branch.type === 'object' && !named(branch)) inline.push(`${key} ${status} (${op.operationId})`);
          const target = named(branch) ? schemas[branch.$ref.split('/').pop()] : null;
          const items = target?.properties?.results?.items;
          if (items?.type === 'object') inline.push(`${key} ${status} results items (${op.operationId})`);
        }
      }
    }
    assert.deepEqual(
      inline,
      [],
      "bodies a generator would call InlineResponse200: name each in RESPONSE_SCHEMAS (src/http/operation-ids.ts), keyed by the team-form operationId, e.g. `getThing: 'Thing'` (a Page: its items), or give an anyOf branch a `title`",
    );
    assert.equal(doc['x-schema-name-conflicts'], undefined, JSON.stringify(doc['x-schema-name-conflicts']));
    for (const name of [
      'Hook',
      'HookDelivery',
      'CommitStatus',
      'CombinedCommitStatus',
      'Thread',
      'Reply',
      'Label',
      'Timer',
      'DeployKey',
    ])
      assert.ok(schemas[name], `components.schemas.${name}`);
    const createHook = ops.find((o) => o.op.operationId === 'createHook')!.op;
    assert.equal(createHook.responses['201'].content['application/json'].schema.$ref, '#/components/schemas/NewHook');
    const listHooks = ops.find((o) => o.op.operationId === 'listUserHooks')!.op;
    assert.equal(listHooks.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/HooksPage');
    assert.equal(schemas.HooksPage.properties.results.items.$ref, '#/components/schemas/Hook');
  });

  it('top-level tags describe every tag an operation uses', () => {
    const used = new Set(ops.flatMap((o) => o.op.tags ?? []));
    const undescribed = [...used].filter((tag) => !Object.hasOwn(TAGS, tag));
    assert.deepEqual(undescribed, [], 'tags without a description: add them to TAGS in src/http/operation-ids.ts');
    const top = new Map<string, string>(doc.tags.map((tag: Json) => [tag.name, tag.description]));
    for (const tag of [...used, 'webhook-events']) assert.ok(top.get(tag), `tags: ${tag}`);
  });

  it("webhooks: one POST per event kind and ping, its body the delivery with that kind's payload, its headers documented", () => {
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...Object.keys(EVENT_KINDS), 'ping'].sort());
    const resolve = (node: Json) =>
      node.$ref
        ? node.$ref
            .split('/')
            .slice(1)
            .reduce((o: Json, k: string) => o[k], doc)
        : node;
    for (const [kind, item] of Object.entries<Json>(doc.webhooks)) {
      const op = item.post;
      assert.match(op.operationId, /^[a-z][A-Za-z0-9]*Webhook$/, kind);
      const headers = op.parameters.map((p: Json) => resolve(p).name);
      for (const h of [
        'webhook-id',
        'webhook-timestamp',
        'webhook-signature',
        'X-Weft-Event',
        'X-Weft-Hook',
        'X-Weft-Attempt',
        'X-Hub-Signature-256',
      ])
        assert.ok(headers.includes(h), `${kind} documents ${h}`);
      const delivery = resolve(op.requestBody.content['application/json'].schema);
      assert.deepEqual(delivery.required, ['hook_uuid', 'event']);
      assert.deepEqual(delivery.properties.event.properties.kind.enum, [kind]);
      const payload = resolve(delivery.properties.event.properties.payload);
      assert.equal(payload.type, 'object', kind);
    }
    // a field a privacy rule may clear is nullable in what a hook receives
    const opened = doc.components.schemas.PullOpenedPayload;
    assert.deepEqual(opened.properties.source_repo.properties.full_name.type, ['string', 'null']);
    assert.equal(doc.components.schemas.BranchPushedPayload.properties.forced.type, 'boolean');
  });

  it('names its schemas: Error with every code as an enum, records and Page envelopes by $ref', () => {
    const schemas = doc.components.schemas;
    for (const name of ['Error', 'User', 'UsersPage', 'Repo', 'Pull', 'PullsPage', 'Team', 'ApiToken', 'Event']) {
      assert.ok(schemas[name], `components.schemas.${name}`);
    }
    assert.deepEqual(schemas.Error.properties.error.enum, [...ERROR_CODES]);
    for (const code of ['not_found', 'method_not_allowed', 'username_taken', 'pull_merged', 'rate_limited'])
      assert.ok(schemas.Error.properties.error.enum.includes(code), code);
    assert.equal(schemas.PullsPage.properties.results.items.$ref, '#/components/schemas/Pull');
    const merge = ops.find((o) => o.op.operationId === 'mergePull')!.op;
    assert.equal(merge.responses['404'].content['application/json'].schema.$ref, '#/components/schemas/Error');
    // no error envelope is left inline anywhere
    const text = JSON.stringify(doc.paths);
    assert.doesNotMatch(text, /"required":\["error","detail"\]|"required":\["detail","error"\]/);
    // 2.0 MB with ~70 routes more than the foundation (review comments, search, notifications,
    // releases, sign-in, CI with runners, team secrets and auto-merge, mirror settings); each
    // operation's error responses are ~1.5 KB of it. The bound catches a schema inlined many times.
    assert.ok(JSON.stringify(doc).length < 2_400_000, 'the document is compact');
  });

  it('enums are real enums, not anyOf of constants', () => {
    let found = 0;
    const walk = (node: Json) => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (!node || typeof node !== 'object') return;
      if (Array.isArray(node.anyOf)) assert.ok(!node.anyOf.every((o: Json) => o && 'const' in o), JSON.stringify(node));
      if (Array.isArray(node.enum)) found++;
      Object.values(node).forEach(walk);
    };
    walk(doc);
    assert.ok(found > 5);
  });

  it('documents response headers, security schemes and the licence', () => {
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['basic', 'bearer']);
    assert.equal(doc.info.license.identifier, 'MIT');
    for (const { key, op } of ops) {
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        assert.ok(response.headers?.['X-Request-Id'], `${key} ${status} X-Request-Id`);
        if (status === '429')
          for (const h of ['Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'])
            assert.ok(response.headers[h], `${key} 429 ${h}`);
        if (status === '401') assert.ok(response.headers['WWW-Authenticate'], `${key} 401`);
      }
    }
    const listPulls = ops.find((o) => o.op.operationId === 'listPulls')!.op.responses['200'].headers;
    assert.ok(listPulls.Link && listPulls.ETag && listPulls['Cache-Control']);
    for (const name of ['Link', 'ETag', 'RetryAfter', 'RateLimitLimit', 'XRequestId'])
      assert.ok(doc.components.headers[name], name);
  });

  it('Redocly (recommended rules) reports no error and no warning', () => {
    const run = spawnSync(
      process.execPath,
      [join(ROOT, 'node_modules/@redocly/cli/bin/cli.js'), 'lint', '--format=json', join(dir, 'openapi.json')],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
    );
    const start = run.stdout.indexOf('{');
    assert.ok(start >= 0, `redocly printed no report: ${run.stderr}`);
    const report = JSON.parse(run.stdout.slice(start));
    const problems = (report.problems ?? []).map((p: Json) => `${p.severity} ${p.ruleId}: ${p.message}`);
    assert.deepEqual(
      { errors: report.totals.errors, warnings: report.totals.warnings },
      { errors: 0, warnings: 0 },
      problems.slice(0, 20).join('\n'),
    );
    assert.equal(run.status, 0);
  });

  it('openapi-typescript generates a client that type-checks a script calling operations by name', async () => {
    const ast = await openapiTS(doc);
    writeFileSync(join(dir, 'weft-api.ts'), astToString(ast));
    writeFileSync(
      join(dir, 'client.ts'),
      `import type { components, operations } from './weft-api.ts';
type Json<O> = O extends { content: { 'application/json': infer B } } ? B : never;
type Ok<K extends keyof operations> = operations[K]['responses'] extends { 200: infer R } ? Json<R> : never;
export function describePull(pull: Ok<'getPull'>): string {
  return \`#\${pull.number} \${pull.title}\`;
}
export function firstRepoName(page: Ok<'listTeamRepos'>): string | undefined {
  return page.results[0]?.name;
}
export type MergeBody = NonNullable<operations['mergePull']['requestBody']>['content']['application/json'];
export type MergeUserParams = operations['mergeUserPull']['parameters']['path'];
export const params: MergeUserParams = { username: 'alice', repo_slug: 'demo', number: 1 };
const code: components['schemas']['Error']['error'] = 'pull_merged';
export const error: components['schemas']['Error'] = { error: code, detail: 'This pull request is already merged.' };
// @ts-expect-error: not an error code
export const wrong: components['schemas']['Error']['error'] = 'no_such_code';
export const me = (u: Ok<'getAuthenticatedUser'>): boolean => u.is_staff;
export const hookUrl = (h: components['schemas']['Hook']): string => h.url;
export const threadNumber = (t: Ok<'getUserThread'>): number => t.number;
export const combined = (c: Ok<'getCombinedCommitStatus'>): components['schemas']['CombinedCommitStatus'] => c;
export const forced = (d: components['schemas']['BranchPushedDelivery']): boolean => d.event.payload.forced;
export const head = (d: components['schemas']['PullUpdatedDelivery']): string | undefined => d.event.payload.head_sha;
`,
    );
    const program = ts.createProgram([join(dir, 'client.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(diagnostics, []);
  });
});
