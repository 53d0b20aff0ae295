import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type TestApp, startApp } from './helpers.ts';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked generically
type Json = any;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
/** docs/behaviour.md "Users and tokens": the only routes without an authentication requirement. */
const ALLOWED_PUBLIC = new Set([
  'get /check-username',
  'get /check-team-slug',
  'get /suggest-users',
  'get /openapi.json',
  'post /signup',
  'post /auth/login',
  // the runner protocol authenticates with the runner's own secret (X-Weft-Runner-Secret) or,
  // to register, the single-use registration token in the body (docs/ci.md)
  'post /runner/register',
  'post /runner/poll',
  'post /runner/jobs/{job_uuid}/log',
  'post /runner/jobs/{job_uuid}/steps',
  'post /runner/jobs/{job_uuid}/finish',
]);

const FOUNDATION_OPERATIONS = [
  'post /users',
  'get /user',
  'get /users',
  'get /users/{username}',
  'put /users/{username}',
  'get /check-username',
  'post /auth/login',
  'get /api-tokens',
  'post /api-tokens',
  'get /api-tokens/self',
  'get /api-tokens/{uuid}',
  'delete /api-tokens/{uuid}',
  'put /api-tokens/{uuid}/revoke',
  'get /events',
  'get /events/{id}',
  'get /openapi.json',
];

function isErrorSchema(schema: Json): boolean {
  return (
    schema?.type === 'object' &&
    schema.additionalProperties === false &&
    JSON.stringify([...(schema.required ?? [])].sort()) === JSON.stringify(['detail', 'error']) &&
    Object.keys(schema.properties ?? {}).every((k) => ['error', 'detail', 'conflict_paths'].includes(k))
  );
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: Json;
  let operations: Array<{ key: string; path: string; method: string; op: Json }>;
  before(async () => {
    t = await startApp('sqlite');
    const res = await t.req('GET', '/api/v1/openapi.json', { token: null });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /application\/json/);
    doc = res.body;
    operations = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (METHODS.includes(method)) operations.push({ key: `${method} ${path}`, path, method, op });
      }
    }
  });
  after(() => t.close());
  /** A schema, or the component schema its $ref names. */
  const deref = (schema: Json): Json =>
    typeof schema?.$ref === 'string' ? doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;

  it('is OpenAPI 3.1.0, document version 0.1.0, served under /api/v1', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '0.1.0');
    assert.equal(typeof doc.info.title, 'string');
    assert.ok(doc.info.description.length > 50);
    assert.deepEqual(doc.servers, [{ url: '/api/v1' }]);
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['basic', 'bearer']);
    assert.equal(doc.components.securitySchemes.bearer.scheme, 'bearer');
    assert.equal(doc.components.securitySchemes.basic.scheme, 'basic');
  });

  it('lists every foundation operation; no internal routes leak', () => {
    const keys = new Set(operations.map((o) => o.key));
    for (const key of FOUNDATION_OPERATIONS) assert.ok(keys.has(key), `missing ${key}`);
    for (const o of operations) {
      assert.ok(o.path.startsWith('/'), o.key);
      assert.ok(!o.path.startsWith('/api/v1'), `${o.key}: paths are relative to the server url`);
      assert.ok(!/^\/(docs|healthz|readyz)/.test(o.path), `${o.key} is not part of the API`);
      assert.ok(!o.path.includes(':'), `${o.key}: path parameters use {name}`);
    }
  });

  it('every operation has a summary, tags, a success response with a schema, and the error responses', () => {
    for (const { key, op } of operations) {
      assert.equal(typeof op.summary, 'string', `${key} summary`);
      assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${key} tags`);
      const statuses = Object.keys(op.responses);
      const success = statuses.filter((s) => /^2\d\d$/.test(s));
      assert.equal(success.length, 1, `${key}: one success status, got ${statuses}`);
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        assert.equal(typeof response.description, 'string', `${key} ${status} description`);
        assert.notEqual(response.description, 'Default Response', `${key} ${status} describes itself`);
        if (status === '204') {
          assert.equal(response.content, undefined, `${key} 204 has no body`);
          continue;
        }
        // A download answers with the file's bytes, not JSON.
        const binary = key.endsWith('/uploads/{upload_uuid}/content') && status === '200';
        // The live event stream answers with text/event-stream.
        const stream = key === 'get /tail-events' && status === '200';
        const type = binary ? 'application/octet-stream' : stream ? 'text/event-stream' : 'application/json';
        const schema = deref(response.content?.[type]?.schema);
        assert.ok(schema && typeof schema === 'object', `${key} ${status} has a JSON schema`);
        if (Number(status) >= 400 && !(key.startsWith('get /') && key.includes('/check-') && status === '409')) {
          assert.ok(isErrorSchema(schema), `${key} ${status} is the error body`);
        }
      }
      for (const status of ['400', '404', '500']) assert.ok(statuses.includes(status), `${key} documents ${status}`);
      if (op.requestBody) {
        for (const status of ['413', '415']) assert.ok(statuses.includes(status), `${key} documents ${status}`);
      }
    }
  });

  it('secured operations declare Bearer or Basic and 401; public ones are exactly the allowed set', () => {
    const publicOps = new Set<string>();
    for (const { key, op } of operations) {
      assert.ok(Array.isArray(op.security), `${key} declares security`);
      if (op.security.length === 0) {
        publicOps.add(key);
        continue;
      }
      // README "Scoped tokens": the one scope the operation needs, under both schemes
      const [scope] = op.security[0].bearer;
      assert.deepEqual(op.security, [{ bearer: [scope] }, { basic: [scope] }], key);
      assert.match(scope, /^(read|write):(user|repo|team)$|^read:events$|^admin$/, key);
      assert.ok(op.responses['403'], `${key} documents 403 (insufficient_scope)`);
      assert.ok(op.responses['401'], `${key} documents 401`);
    }
    for (const key of publicOps) assert.ok(ALLOWED_PUBLIC.has(key), `${key} must not be public`);
    // no rate-limit rule instruments a public read (docs/behaviour.md "Events and scopes"), so they document no 429
    for (const key of publicOps) {
      const op = operations.find((o) => o.key === key)!.op;
      if (key.startsWith('get ')) assert.equal(op.responses['429'], undefined, `${key} is not rate limited`);
      else assert.ok(op.responses['429'], `${key} documents 429`);
    }
    for (const key of ['get /check-username', 'get /openapi.json', 'post /auth/login'])
      assert.ok(publicOps.has(key), `${key} is public`);
  });

  it('request bodies are strict JSON objects; path and query parameters have schemas', () => {
    for (const { key, path, method, op } of operations) {
      if (op.requestBody && key.startsWith('post ') && key.endsWith('/uploads')) {
        // Uploads take the raw bytes or multipart/form-data, both documented.
        assert.ok(op.requestBody.content?.['multipart/form-data'], `${key} documents multipart`);
        assert.ok(op.requestBody.content?.['application/octet-stream'], `${key} documents the raw body`);
      } else if (op.requestBody && key.startsWith('post ') && key.endsWith('/releases/{tag}/assets')) {
        // A release asset is the raw bytes (docs/bring-in.md).
        assert.ok(op.requestBody.content?.['application/octet-stream'], `${key} documents the raw body`);
      } else if (op.requestBody) {
        const schema = op.requestBody.content?.['application/json']?.schema;
        assert.equal(schema?.type, 'object', `${key} body is an object`);
        assert.equal(schema.additionalProperties, false, `${key} body rejects unknown properties`);
      } else {
        const noBodyOps =
          /\/(revoke|archive|forks|rotate-secret|redeliver|pings|test|totp|registration-token|sync|cancel|approve|options)$/;
        assert.ok(method === 'get' || method === 'delete' || noBodyOps.test(key), `${key} has a body schema`);
      }
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const params: Json[] = op.parameters ?? [];
      for (const name of templated) {
        const p = params.find((x) => x.in === 'path' && x.name === name);
        assert.ok(p, `${key} declares path parameter ${name}`);
        assert.equal(p.required, true);
        assert.ok(p.schema, `${key} ${name} has a schema`);
      }
      for (const p of params) assert.ok(p.schema && ['path', 'query', 'header'].includes(p.in), `${key} ${p.name}`);
    }
  });

  it('paged lists document page and per_page; responses are Page envelopes', () => {
    for (const key of ['get /users', 'get /api-tokens']) {
      const op = operations.find((o) => o.key === key)!.op;
      const names = op.parameters.map((p: Json) => p.name);
      assert.ok(names.includes('page') && names.includes('per_page'), key);
      const page = op.parameters.find((p: Json) => p.name === 'page').schema;
      assert.equal(page.type, 'integer');
      assert.equal(page.minimum, 1);
      const schema = deref(op.responses['200'].content['application/json'].schema);
      assert.deepEqual(Object.keys(schema.properties).sort(), ['next', 'previous', 'results']);
      assert.equal(schema.additionalProperties, false);
    }
    const events = operations.find((o) => o.key === 'get /events')!.op;
    const names = events.parameters.map((p: Json) => p.name).sort();
    assert.deepEqual(names, ['after_id', 'before_id', 'kind', 'per_page', 'scope']);
    assert.equal(events.parameters.find((p: Json) => p.name === 'scope').required, true);
  });

  it('every $ref resolves inside the document', () => {
    const refs: string[] = [];
    const walk = (node: Json) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === '$ref' && typeof v === 'string') refs.push(v);
          else walk(v);
        }
      }
    };
    walk(doc);
    for (const ref of refs) {
      assert.ok(ref.startsWith('#/'), `${ref} is local`);
      let target: Json = doc;
      for (const part of ref.slice(2).split('/')) target = target?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
      assert.ok(target !== undefined, `${ref} resolves`);
    }
  });

  it('/docs serves the interactive Swagger UI for this document', async () => {
    const page = await t.req('GET', '/docs', { token: null });
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.text, /swagger-ui/i);
    const bundle = await t.req('GET', '/docs/static/swagger-ui-bundle.js', { token: null });
    assert.equal(bundle.status, 200);
    const json = await t.req('GET', '/docs/json', { token: null });
    assert.deepEqual(json.body, doc);
  });
});
