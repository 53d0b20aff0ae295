import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { ERROR_CODES } from '../src/http/openapi-transform.ts';
import { ROOT } from './foundation-helpers.ts';
import { type TestApp, startApp } from './helpers.ts';

// The OpenAPI document as code generators see it. Generic rules only, so routes added later
// (which get fallback operationIds) keep this gate green.

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

  it('names its schemas: Error with every code as an enum, records and Page envelopes by $ref', () => {
    const schemas = doc.components.schemas;
    for (const name of ['Error', 'User', 'UserPage', 'Repo', 'Pull', 'PullsPage', 'Team', 'ApiToken', 'Event']) {
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
    assert.ok(JSON.stringify(doc).length < 1_500_000, 'the document is compact');
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
