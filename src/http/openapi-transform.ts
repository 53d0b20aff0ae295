/**
 * Post-processing of the generated OpenAPI document for code generators (README "Deploying",
 * "OpenAPI"): operationIds, named component schemas referenced with $ref, real enums, documented
 * response headers and a licence. It works on whatever routes exist, so routes added later get
 * deterministic fallback ids and the same treatment.
 */

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
const REPO_TEAM = '/teams/{team_slug}/repos/{repo_slug}';
const REPO_USER = '/users/{username}/repos/{repo_slug}';

/**
 * Explicit ids for the routes that exist; `{repo}` stands for both owner forms: the team form
 * gets the id as written, the user form inserts `User` after the verb (`mergePull`, `mergeUserPull`).
 */
const OPERATION_IDS: Record<string, string> = {
  'get /openapi.json': 'getOpenApiDocument',
  'post /auth/login': 'login',
  'post /users': 'createUser',
  'get /user': 'getAuthenticatedUser',
  'get /users': 'listUsers',
  'get /users/{username}': 'getUser',
  'put /users/{username}': 'updateUser',
  'get /users/{username}/activity': 'listUserActivity',
  'get /check-username': 'checkUsername',
  'get /suggest-users': 'suggestUsers',
  'get /api-tokens': 'listApiTokens',
  'post /api-tokens': 'createApiToken',
  'get /api-tokens/self': 'getCurrentApiToken',
  'get /api-tokens/{uuid}': 'getApiToken',
  'delete /api-tokens/{uuid}': 'deleteApiToken',
  'put /api-tokens/{uuid}/revoke': 'revokeApiToken',
  'get /user/keys': 'listSshKeys',
  'post /user/keys': 'createSshKey',
  'get /user/keys/{uuid}': 'getSshKey',
  'delete /user/keys/{uuid}': 'deleteSshKey',
  'get /events': 'listEvents',
  'get /events/{id}': 'getEvent',
  'get /teams': 'listTeams',
  'post /teams': 'createTeam',
  'get /teams/{team_slug}': 'getTeam',
  'put /teams/{team_slug}': 'updateTeam',
  'get /teams/{team_slug}/activity': 'listTeamActivity',
  'get /check-team-slug': 'checkTeamSlug',
  'get /teams/{team_slug}/members': 'listMembers',
  'post /teams/{team_slug}/members': 'addMember',
  'get /teams/{team_slug}/members/{username}': 'getMember',
  'put /teams/{team_slug}/members/{username}': 'updateMember',
  'delete /teams/{team_slug}/members/{username}': 'removeMember',
  'get /teams/{team_slug}/repos': 'listTeamRepos',
  'post /teams/{team_slug}/repos': 'createTeamRepo',
  'get /users/{username}/repos': 'listUserRepos',
  'post /users/{username}/repos': 'createUserRepo',
  'get /teams/{team_slug}/check-repo-slug': 'checkTeamRepoSlug',
  'get /users/{username}/check-repo-slug': 'checkUserRepoSlug',
  'get /forks/{fork_uuid}': 'getFork',
  'get {repo}': 'getRepo',
  'put {repo}': 'updateRepo',
  'delete {repo}': 'deleteRepo',
  'put {repo}/archive': 'archiveRepo',
  'delete {repo}/archive': 'unarchiveRepo',
  'post {repo}/forks': 'createFork',
  'get {repo}/forks': 'listForks',
  'get {repo}/fork': 'getRepoForkRecord',
  'get {repo}/forks/team/{fork_team_slug}': 'getTeamFork',
  'get {repo}/forks/user/{fork_username}': 'getUserFork',
  'get {repo}/protections': 'listProtections',
  'post {repo}/protections': 'createProtection',
  'get {repo}/protections/{protection_uuid}': 'getProtection',
  'put {repo}/protections/{protection_uuid}': 'updateProtection',
  'delete {repo}/protections/{protection_uuid}': 'deleteProtection',
  'get {repo}/protections/{protection_uuid}/approvers': 'listProtectionApprovers',
  'post {repo}/protections/{protection_uuid}/approvers': 'addProtectionApprover',
  'delete {repo}/protections/{protection_uuid}/approvers/{user_uuid}': 'removeProtectionApprover',
  'get {repo}/pulls': 'listPulls',
  'post {repo}/pulls': 'createPull',
  'get {repo}/pulls/{number}': 'getPull',
  'put {repo}/pulls/{number}': 'updatePull',
  'post {repo}/pulls/{number}/merge': 'mergePull',
  'get {repo}/pulls/{number}/protection': 'getPullProtectionStatus',
  'get {repo}/pulls/{number}/reviews': 'listReviews',
  'post {repo}/pulls/{number}/reviews': 'createReview',
  'get {repo}/pulls/{number}/reviews/{review_uuid}': 'getReview',
  'delete {repo}/pulls/{number}/reviews/{review_uuid}': 'removeReview',
  // reading code (src/code/)
  'get {repo}/commits': 'listCommits',
  'get {repo}/commits/{ref}': 'getCommit',
  'get {repo}/compare/{basehead}': 'compareCommits',
  'get {repo}/contents': 'getRootContents',
  'get {repo}/contents/{path}': 'getContents',
  'get {repo}/raw/{ref_and_path}': 'getRawFile',
  'get {repo}/archive/{archive}': 'getArchive',
  'get {repo}/branches/{branch}': 'getBranch',
  'post {repo}/branches': 'createBranch',
  'delete {repo}/branches/{branch}': 'deleteBranch',
  'get {repo}/tags': 'listTags',
  // commit statuses (src/statuses/)
  'post {repo}/statuses/{sha}': 'createCommitStatus',
  'get {repo}/commits/{ref}/statuses': 'listCommitStatuses',
  'get {repo}/commits/{ref}/status': 'getCombinedCommitStatus',
};

/** Component names for the records read by these operations (their 200 body, or Page items). */
const RECORDS: Record<string, string> = {
  getAuthenticatedUser: 'User',
  getApiToken: 'ApiToken',
  getSshKey: 'SshKey',
  getEvent: 'Event',
  getTeam: 'Team',
  getMember: 'Member',
  getRepo: 'Repo',
  getFork: 'Fork',
  getProtection: 'Protection',
  getPull: 'Pull',
  getPullProtectionStatus: 'PullProtectionStatus',
  getReview: 'Review',
  listUsers: 'User',
  listProtectionApprovers: 'Approver',
  listCommits: 'CodeCommit',
  getCommit: 'CommitDetail',
  compareCommits: 'Comparison',
  getContents: 'Contents',
  listTags: 'Tag',
};

const VERBS: Record<string, string> = { get: 'get', put: 'update', post: 'create', delete: 'delete', patch: 'patch' };

const pascal = (s: string) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

/** A deterministic id for a route without an explicit one: verb + every path segment. */
export function fallbackOperationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((seg) => (seg.startsWith('{') ? `By${pascal(seg)}` : pascal(seg)));
  return (VERBS[method] ?? method) + words.join('');
}

export function operationIdFor(method: string, path: string): string {
  const key = `${method} ${path}`;
  if (OPERATION_IDS[key]) return OPERATION_IDS[key];
  for (const [prefix, owner] of [
    [REPO_TEAM, ''],
    [REPO_USER, 'User'],
  ] as const) {
    if (path === prefix || path.startsWith(`${prefix}/`)) {
      const id = OPERATION_IDS[`${method} {repo}${path.slice(prefix.length)}`];
      if (id) return owner ? id.replace(/^([a-z]+)/, `$1${owner}`) : id;
    }
  }
  return fallbackOperationId(method, path);
}

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

export function transformDocument(input: Json): Json {
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
    let id: string = o.op.operationId ?? operationIdFor(o.method, o.path);
    if (seen.has(id)) id = fallbackOperationId(o.method, o.path);
    const base = id;
    for (let n = 2; seen.has(id); n++) id = `${base}${n}`;
    seen.add(id);
    o.op.operationId = id;
  }

  // Named schemas: the error envelope, the records read by the RECORDS operations, Page envelopes.
  const byShape = new Map<string, string>();
  const name = (schema: Json, n: string) => {
    const shape = JSON.stringify(schema);
    if (byShape.has(shape) || schemas[n]) return;
    schemas[n] = structuredClone(schema);
    byShape.set(shape, n);
  };
  const success = (op: Json) =>
    op.responses?.['200']?.content?.['application/json']?.schema ?? op.responses?.['201']?.content?.['application/json']?.schema;
  for (const o of ops) {
    const record = RECORDS[o.op.operationId];
    const body = success(o.op);
    if (!record || !body) continue;
    if (isPage(body)) {
      name(body.properties.results.items, record);
      name(body, `${record}Page`);
    } else name(body, record);
  }
  // Page envelopes of every other list, named after their operation (listForks → ForksPage).
  for (const o of ops) {
    const body = success(o.op);
    if (body && isPage(body) && !byShape.has(JSON.stringify(body))) {
      name(body, `${pascal(o.op.operationId.replace(/^list/, ''))}Page`);
    }
  }
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
