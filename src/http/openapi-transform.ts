/**
 * Post-processing of the generated OpenAPI document for code generators (README "Deploying",
 * "OpenAPI"): named component schemas referenced with $ref (src/http/operation-ids.ts names them),
 * real enums, documented response headers, tags, the webhooks and a licence. The operationIds are
 * set on the routes (src/http/openapi.ts, from src/http/operation-ids.ts).
 */
import { RESPONSE_SCHEMAS, TAGS } from './operation-ids.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked generically
type Json = any;

/** Every error code the API answers with (the `error` field of the error envelope). */
export const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'not_acceptable',
  'conflict',
  'gone',
  'payload_too_large',
  'uri_too_long',
  'unsupported_media_type',
  'request_timeout',
  'rate_limited',
  'request_header_fields_too_large',
  'internal_error',
  'service_unavailable',
  // 403
  'cannot_approve_own_pull',
  'invite_required',
  'ping_mentions_disabled',
  'signups_disabled',
  'team_inactive',
  'repo_archived',
  'insufficient_scope',
  // 409
  'already_member',
  'invalid_pull_policy',
  'invite_expired',
  'invite_not_pending',
  'invite_used',
  'last_owner',
  'merge_conflict',
  'source_branch_missing',
  'nothing_to_merge',
  'unrelated_histories',
  'checks_unsatisfied',
  'pull_closed',
  'pull_merged',
  'slug_taken',
  'username_taken',
  'target_read_only',
  'timer_finished',
  'upload_removed',
  // 413
  'quota_exceeded',
  // reading code (src/git/limits.ts): 422 an answer over the output cap, 503 too busy or too slow
  'too_large',
  'git_busy',
  'git_timeout',
] as const;

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

const pascal = (s: string) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

const VERBS: Record<string, string> = { get: 'get', put: 'update', post: 'create', delete: 'delete', patch: 'patch' };

/**
 * The id of a route missing from src/http/operation-ids.ts (verb + every path segment), so the
 * document stays usable; test/openapi-gate.test.ts fails on it.
 */
export function fallbackOperationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((seg) => (seg.startsWith('{') ? `By${pascal(seg)}` : pascal(seg)));
  return (VERBS[method] ?? method) + words.join('');
}

/** The team-form id of a user-form {repo} operation (`mergeUserPull` → `mergePull`). */
const canonicalId = (id: string, path: string): string =>
  path.startsWith('/users/{username}/repos/{repo_slug}') ? id.replace(/^([a-z]+)User/, '$1') : id;

const HEADERS: Record<string, Json> = {
  XRequestId: {
    description: 'The request id (yours when you sent a sane X-Request-Id); also in the server log',
    schema: { type: 'string' },
  },
  Link: {
    description: 'RFC 8288 links to the first, prev, next and (when known) last pages, absolute URLs on PUBLIC_URL',
    schema: { type: 'string' },
  },
  ETag: {
    description: 'Weak entity tag of the body; send it back in If-None-Match to get 304 when unchanged',
    schema: { type: 'string' },
  },
  CacheControl: { description: '`private, no-cache` on authenticated reads', schema: { type: 'string' } },
  RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
  RateLimitLimit: { description: 'Requests allowed in the current window', schema: { type: 'integer', minimum: 0 } },
  RateLimitRemaining: { description: 'Requests left in the current window', schema: { type: 'integer', minimum: 0 } },
  RateLimitReset: { description: 'Seconds until the window resets', schema: { type: 'integer', minimum: 0 } },
  WWWAuthenticate: { description: 'The accepted schemes: Bearer and Basic', schema: { type: 'string' } },
};
const ref = (kind: 'schemas' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });

function isErrorSchema(schema: Json): boolean {
  return (
    schema?.type === 'object' &&
    Array.isArray(schema.required) &&
    schema.required.includes('error') &&
    schema.required.includes('detail') &&
    Object.keys(schema.properties ?? {}).every((k) => ['error', 'detail', 'conflict_paths'].includes(k))
  );
}

/** The JSON bodies of an operation's 2xx responses. */
function successBodies(op: Json): Json[] {
  return Object.entries<Json>(op.responses ?? {})
    .filter(([status]) => /^2\d\d$/.test(status))
    .map(([, response]) => response?.content?.['application/json']?.schema)
    .filter(Boolean);
}

function hasResults(schema: Json): boolean {
  return schema?.type === 'object' && schema.properties?.results?.type === 'array';
}

function isPage(schema: Json): boolean {
  return schema?.type === 'object' && schema.properties?.results?.type === 'array' && 'next' in schema.properties;
}

/** `anyOf` of one-value schemas of one type becomes `{type, enum}`; recursive, in place. */
function realEnums(node: Json): Json {
  if (Array.isArray(node)) return node.map(realEnums);
  if (!node || typeof node !== 'object') return node;
  for (const key of Object.keys(node)) node[key] = realEnums(node[key]);
  const options = node.anyOf;
  if (Array.isArray(options) && options.length > 0 && options.every((o: Json) => o && typeof o === 'object' && 'const' in o)) {
    const types = new Set(options.map((o: Json) => o.type ?? typeof o.const));
    if (types.size === 1) {
      const { anyOf: _drop, ...rest } = node;
      return { type: [...types][0], ...rest, enum: options.map((o: Json) => o.const) };
    }
  }
  return node;
}

/** Replaces, everywhere below `node`, each schema structurally equal to a named one by its $ref. */
function refReplace(node: Json, byShape: Map<string, string>, skipTop = false): Json {
  if (Array.isArray(node)) return node.map((n) => refReplace(n, byShape));
  if (!node || typeof node !== 'object') return node;
  if (!skipTop) {
    const name = byShape.get(JSON.stringify(node));
    if (name) return ref('schemas', name);
  }
  for (const key of Object.keys(node)) node[key] = refReplace(node[key], byShape);
  return node;
}

/**
 * Names of the `*` (rest-of-path) parameter, by the segment before it: OpenAPI has no wildcard,
 * so `{*}` becomes a named parameter whose value may hold `/` (sent as is, or as %2F).
 */
const WILDCARD_NAMES: Record<string, string> = {
  commits: 'ref',
  compare: 'basehead',
  contents: 'path',
  raw: 'ref_and_path',
  archive: 'archive',
  branches: 'branch',
};

function namedWildcards(paths: Record<string, Json>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [path, item] of Object.entries<Json>(paths)) {
    const m = /\/([a-z_]+)\/\{\*\}$/.exec(path);
    if (!m) {
      out[path] = item;
      continue;
    }
    const name = WILDCARD_NAMES[m[1]!] ?? 'rest';
    for (const method of METHODS) {
      for (const param of item[method]?.parameters ?? []) if (param.in === 'path' && param.name === '*') param.name = name;
    }
    out[path.replace(/\{\*\}$/, `{${name}}`)] = item;
  }
  return out;
}

/** What higher layers add to the document: the webhooks (src/hooks/openapi-webhooks.ts). */
export interface DocumentExtras {
  webhooks?: () => { webhooks: Json; schemas: Json; parameters: Json; tag: { name: string; description: string } };
}

export function transformDocument(input: Json, extra: DocumentExtras = {}): Json {
  const doc = realEnums(structuredClone(input));
  doc.info.license = { name: 'MIT', identifier: 'MIT' };
  doc.components ??= {};
  const schemas: Record<string, Json> = (doc.components.schemas ??= {});
  doc.paths = namedWildcards(doc.paths ?? {});

  const ops: Array<{ method: string; path: string; op: Json }> = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) if (item[method]) ops.push({ method, path, op: item[method] });
  }
  const seen = new Set<string>();
  for (const o of ops) {
    let id: string = o.op.operationId ?? fallbackOperationId(o.method, o.path);
    if (seen.has(id)) id = fallbackOperationId(o.method, o.path);
    const base = id;
    for (let n = 2; seen.has(id); n++) id = `${base}${n}`;
    seen.add(id);
    o.op.operationId = id;
  }

  // Named schemas: the 2xx body of each operation (a Page's items) under the name that
  // RESPONSE_SCHEMAS gives it, and the Page envelope as <Things>Page after its list operation.
  const byShape = new Map<string, string>();
  const conflicts: string[] = [];
  const name = (schema: Json, n: string, by: string) => {
    const shape = JSON.stringify(schema);
    if (byShape.has(shape)) return;
    if (schemas[n]) {
      conflicts.push(`${by}: the name ${n} is taken by another shape`);
      return;
    }
    schemas[n] = structuredClone(schema);
    byShape.set(shape, n);
  };
  const isObject = (schema: Json) => schema?.type === 'object';
  for (const o of ops) {
    const id = canonicalId(o.op.operationId, o.path);
    const record = RESPONSE_SCHEMAS[id];
    for (const body of successBodies(o.op)) {
      if (!record) continue;
      if (hasResults(body)) {
        if (isObject(body.properties.results.items)) name(body.properties.results.items, record, id);
        if (!isPage(body)) name(body, `${record}List`, id);
      } else if (isObject(body)) name(body, record, id);
    }
  }
  // A body of several shapes: each object branch under its own `title`, as the route schema gives it.
  for (const o of ops) {
    for (const body of successBodies(o.op)) {
      for (const branch of [...(body.anyOf ?? []), ...(body.oneOf ?? [])]) {
        if (isObject(branch) && typeof branch.title === 'string') name(branch, branch.title, o.op.operationId);
      }
    }
  }
  // Page envelopes, named after their list operation (listForks → ForksPage).
  for (const o of ops) {
    for (const body of successBodies(o.op)) {
      if (isPage(body)) {
        const id = canonicalId(o.op.operationId, o.path);
        name(body, `${pascal(id.replace(/^list/, ''))}Page`, id);
      }
    }
  }
  if (conflicts.length > 0) doc['x-schema-name-conflicts'] = conflicts;
  // Error: one schema, its code an enum; every error response refers to it.
  let errorShape: Json = null;
  for (const o of ops) {
    for (const response of Object.values<Json>(o.op.responses ?? {})) {
      const schema = response?.content?.['application/json']?.schema;
      if (isErrorSchema(schema)) {
        if (!errorShape || Object.keys(schema.properties).length > Object.keys(errorShape.properties).length) errorShape = schema;
        byShape.set(JSON.stringify(schema), 'Error');
      }
    }
  }
  if (errorShape) {
    schemas.Error = structuredClone(errorShape);
    schemas.Error.properties.error = { ...schemas.Error.properties.error, type: 'string', enum: [...ERROR_CODES] };
    delete schemas.Error.properties.error.pattern;
  }

  for (const o of ops) refReplace(o.op, byShape);
  // Named schemas may contain other named ones (a Page holds records).
  for (const [n, schema] of Object.entries(schemas)) schemas[n] = refReplace(schema, byShape, true);

  // Top-level tags: every tag an operation uses, described (TAGS order first), then the webhooks.
  const used = new Set<string>();
  for (const o of ops) for (const tag of o.op.tags ?? []) used.add(tag);
  doc.tags = [
    ...Object.entries(TAGS)
      .filter(([tag]) => used.has(tag))
      .map(([tag, description]) => ({ name: tag, description })),
    ...[...used].filter((tag) => !Object.hasOwn(TAGS, tag)).map((tag) => ({ name: tag })),
  ];
  if (extra.webhooks) {
    const hooks = extra.webhooks();
    doc.webhooks = hooks.webhooks;
    for (const [n, schema] of Object.entries(hooks.schemas)) schemas[n] ??= schema;
    doc.components.parameters = { ...(doc.components.parameters ?? {}), ...hooks.parameters };
    doc.tags.push(hooks.tag);
  }

  // Response headers.
  doc.components.headers = { ...HEADERS, ...(doc.components.headers ?? {}) };
  for (const o of ops) {
    const isPublic = Array.isArray(o.op.security) && o.op.security.length === 0;
    for (const [status, response] of Object.entries<Json>(o.op.responses ?? {})) {
      const headers: Record<string, Json> = (response.headers ??= {});
      headers['X-Request-Id'] ??= ref('headers', 'XRequestId');
      const code = Number(status);
      if (code === 200 && o.method === 'get') {
        const body = response.content?.['application/json']?.schema;
        if (isPage(body?.$ref ? schemas[String(body.$ref).split('/').pop()!] : body)) headers.Link ??= ref('headers', 'Link');
      }
      if (code === 200 && o.method === 'get' && !isPublic) {
        headers.ETag ??= ref('headers', 'ETag');
        headers['Cache-Control'] ??= ref('headers', 'CacheControl');
      }
      if (code === 429) {
        headers['Retry-After'] ??= ref('headers', 'RetryAfter');
        headers['RateLimit-Limit'] ??= ref('headers', 'RateLimitLimit');
        headers['RateLimit-Remaining'] ??= ref('headers', 'RateLimitRemaining');
        headers['RateLimit-Reset'] ??= ref('headers', 'RateLimitReset');
      }
      if (code === 401) headers['WWW-Authenticate'] ??= ref('headers', 'WWWAuthenticate');
    }
  }
  return doc;
}
