/**
 * Which token scope each API route needs (README "Scoped tokens"): THE table. One line per
 * route under /api/v1, keyed `method path` as the OpenAPI document writes it; `{repo}` stands for
 * both owner forms (`/teams/{team_slug}/repos/{repo_slug}` and `/users/{username}/repos/{repo_slug}`).
 * `public` marks a route that needs no scope (it is marked `public` in its config too).
 *
 * The same table decides the 403 insufficient_scope of a scoped token (src/http/scopes.ts, before
 * any lookup) and writes each operation's `security` into the OpenAPI document. A route under
 * /api/v1 without an entry refuses every scoped token (unscoped tokens are not affected) and
 * test/scopes-table.test.ts names it. Routes outside /api/v1 are not in the table: git smart HTTP
 * decides read:repo / write:repo itself (src/git/http.ts), web pages use session cookies (full
 * access), and /healthz, /readyz, /metrics and /docs need no token.
 */
import type { TokenScope } from '../token-scopes.ts';

export type RouteScope = TokenScope | 'public';

export const ROUTE_SCOPES: Record<string, RouteScope> = {
  // meta, sign-in, sign-up, name checks
  'get /openapi.json': 'public',
  'post /auth/login': 'public',
  'post /signup': 'public',
  'get /check-username': 'public',
  'get /check-team-slug': 'public',
  'get /suggest-users': 'public',
  // users
  'post /users': 'admin',
  'get /users': 'admin',
  'get /user': 'read:user',
  'get /users/{username}': 'read:user',
  'put /users/{username}': 'write:user',
  'post /users/{username}/ping': 'write:user',
  'get /users/{username}/activity': 'read:events',
  'get /users/{username}/timers': 'read:user',
  'post /users/{username}/timers': 'write:user',
  'get /users/{username}/timers/{timer_uuid}': 'read:user',
  'patch /users/{username}/timers/{timer_uuid}': 'write:user',
  'delete /users/{username}/timers/{timer_uuid}': 'write:user',
  // SSH keys
  'get /user/keys': 'read:user',
  'post /user/keys': 'write:user',
  'get /user/keys/{uuid}': 'read:user',
  'delete /user/keys/{uuid}': 'write:user',
  // API tokens
  'get /api-tokens': 'read:user',
  'post /api-tokens': 'write:user',
  'get /api-tokens/self': 'read:user',
  'get /api-tokens/{uuid}': 'read:user',
  'delete /api-tokens/{uuid}': 'write:user',
  'put /api-tokens/{uuid}/revoke': 'write:user',
  'get /sessions': 'read:user',
  'get /sessions/{uuid}': 'read:user',
  'put /sessions/{uuid}/revoke': 'write:user',
  // signup invites
  'get /signup-invites': 'read:user',
  'post /signup-invites': 'write:user',
  'get /signup-invites/{uuid}': 'read:user',
  'put /signup-invites/{uuid}': 'write:user',
  'delete /signup-invites/{uuid}': 'write:user',
  // events
  'get /events': 'read:events',
  'get /events/{id}': 'read:events',
  'get /tail-events': 'read:events',
  'post /tail-events/tickets': 'read:events',
  // teams
  'get /teams': 'read:team',
  'post /teams': 'write:team',
  'get /teams/{team_slug}': 'read:team',
  'put /teams/{team_slug}': 'write:team',
  'get /teams/{team_slug}/activity': 'read:events',
  'get /teams/{team_slug}/members': 'read:team',
  'post /teams/{team_slug}/members': 'write:team',
  'get /teams/{team_slug}/members/{username}': 'read:team',
  'put /teams/{team_slug}/members/{username}': 'write:team',
  'delete /teams/{team_slug}/members/{username}': 'write:team',
  'get /teams/{team_slug}/timers': 'read:team',
  'post /teams/{team_slug}/timers': 'write:team',
  'get /teams/{team_slug}/timers/{timer_uuid}': 'read:team',
  'patch /teams/{team_slug}/timers/{timer_uuid}': 'write:team',
  'delete /teams/{team_slug}/timers/{timer_uuid}': 'write:team',
  'get /teams/{team_slug}/hooks': 'read:team',
  'post /teams/{team_slug}/hooks': 'write:team',
  'get /teams/{team_slug}/hooks/{hook_uuid}': 'read:team',
  'put /teams/{team_slug}/hooks/{hook_uuid}': 'write:team',
  'delete /teams/{team_slug}/hooks/{hook_uuid}': 'write:team',
  'post /teams/{team_slug}/hooks/{hook_uuid}/rotate-secret': 'write:team',
  'get /teams/{team_slug}/hooks/{hook_uuid}/deliveries': 'read:team',
  'get /teams/{team_slug}/hooks/{hook_uuid}/deliveries/{delivery_uuid}': 'read:team',
  'post /teams/{team_slug}/hooks/{hook_uuid}/deliveries/{delivery_uuid}/redeliver': 'write:team',
  'post /teams/{team_slug}/hooks/{hook_uuid}/pings': 'write:team',
  // staff
  'get /site-settings': 'admin',
  'put /site-settings': 'admin',
  'get /rate-limits': 'admin',
  'post /rate-limits': 'admin',
  'get /rate-limits/{uuid}': 'admin',
  'put /rate-limits/{uuid}': 'admin',
  'delete /rate-limits/{uuid}': 'admin',
  // site hooks (staff)
  'get /hooks': 'admin',
  'post /hooks': 'admin',
  'get /hooks/{hook_uuid}': 'admin',
  'put /hooks/{hook_uuid}': 'admin',
  'delete /hooks/{hook_uuid}': 'admin',
  'post /hooks/{hook_uuid}/rotate-secret': 'admin',
  'get /hooks/{hook_uuid}/deliveries': 'admin',
  'get /hooks/{hook_uuid}/deliveries/{delivery_uuid}': 'admin',
  'post /hooks/{hook_uuid}/deliveries/{delivery_uuid}/redeliver': 'admin',
  'post /hooks/{hook_uuid}/pings': 'admin',
  // repos: listing, creating, slugs
  'get /teams/{team_slug}/repos': 'read:repo',
  'post /teams/{team_slug}/repos': 'write:repo',
  'get /teams/{team_slug}/check-repo-slug': 'read:repo',
  'get /users/{username}/repos': 'read:repo',
  'post /users/{username}/repos': 'write:repo',
  'get /users/{username}/check-repo-slug': 'read:repo',
  'get /forks/{fork_uuid}': 'read:repo',
  // one repo and everything under it
  'get {repo}': 'read:repo',
  'get /repos/{repo_uuid}': 'read:repo',
  'put {repo}': 'write:repo',
  'delete {repo}': 'write:repo',
  'put {repo}/archive': 'write:repo',
  'delete {repo}/archive': 'write:repo',
  'post {repo}/forks': 'write:repo',
  'get {repo}/forks': 'read:repo',
  'get {repo}/fork': 'read:repo',
  'get {repo}/forks/team/{fork_team_slug}': 'read:repo',
  'get {repo}/forks/user/{fork_username}': 'read:repo',
  'get {repo}/protections': 'read:repo',
  'post {repo}/protections': 'write:repo',
  'get {repo}/protections/{protection_uuid}': 'read:repo',
  'put {repo}/protections/{protection_uuid}': 'write:repo',
  'delete {repo}/protections/{protection_uuid}': 'write:repo',
  'get {repo}/protections/{protection_uuid}/approvers': 'read:repo',
  'post {repo}/protections/{protection_uuid}/approvers': 'write:repo',
  'delete {repo}/protections/{protection_uuid}/approvers/{user_uuid}': 'write:repo',
  'get {repo}/pulls': 'read:repo',
  'post {repo}/pulls': 'write:repo',
  'get {repo}/pulls/{number}': 'read:repo',
  'put {repo}/pulls/{number}': 'write:repo',
  'post {repo}/pulls/{number}/merge': 'write:repo',
  'get {repo}/pulls/{number}/protection': 'read:repo',
  'get {repo}/pulls/{number}/commits': 'read:repo',
  'get {repo}/pulls/{number}/files': 'read:repo',
  'get {repo}/pulls/{number}/reviews': 'read:repo',
  'post {repo}/pulls/{number}/reviews': 'write:repo',
  'get {repo}/pulls/{number}/reviews/{review_uuid}': 'read:repo',
  'delete {repo}/pulls/{number}/reviews/{review_uuid}': 'write:repo',
  'get {repo}/pulls/{number}/attachments': 'read:repo',
  'post {repo}/pulls/{number}/attachments': 'write:repo',
  'delete {repo}/pulls/{number}/attachments/{upload_uuid}': 'write:repo',
  'get {repo}/pulls/{number}/reviews/{review_uuid}/attachments': 'read:repo',
  'post {repo}/pulls/{number}/reviews/{review_uuid}/attachments': 'write:repo',
  'delete {repo}/pulls/{number}/reviews/{review_uuid}/attachments/{upload_uuid}': 'write:repo',
  'get {repo}/branches': 'read:repo',
  'post {repo}/branches': 'write:repo',
  'get {repo}/branches/*': 'read:repo',
  'delete {repo}/branches/*': 'write:repo',
  'get {repo}/tags': 'read:repo',
  'get {repo}/commits': 'read:repo',
  'get {repo}/commits/*': 'read:repo',
  'post {repo}/statuses/{sha}': 'write:repo',
  'get {repo}/commits/{ref}/statuses': 'read:repo',
  'get {repo}/commits/{ref}/status': 'read:repo',
  'get {repo}/compare/*': 'read:repo',
  'get {repo}/contents': 'read:repo',
  'get {repo}/contents/*': 'read:repo',
  'get {repo}/raw/*': 'read:repo',
  'get {repo}/archive/*': 'read:repo',
  'get {repo}/keys': 'read:repo',
  'post {repo}/keys': 'write:repo',
  'get {repo}/keys/{key_uuid}': 'read:repo',
  'delete {repo}/keys/{key_uuid}': 'write:repo',
  'get {repo}/hooks': 'read:repo',
  'post {repo}/hooks': 'write:repo',
  'get {repo}/hooks/{hook_uuid}': 'read:repo',
  'put {repo}/hooks/{hook_uuid}': 'write:repo',
  'delete {repo}/hooks/{hook_uuid}': 'write:repo',
  'post {repo}/hooks/{hook_uuid}/rotate-secret': 'write:repo',
  'get {repo}/hooks/{hook_uuid}/deliveries': 'read:repo',
  'get {repo}/hooks/{hook_uuid}/deliveries/{delivery_uuid}': 'read:repo',
  'post {repo}/hooks/{hook_uuid}/deliveries/{delivery_uuid}/redeliver': 'write:repo',
  'post {repo}/hooks/{hook_uuid}/pings': 'write:repo',
  'get {repo}/timers': 'read:repo',
  'post {repo}/timers': 'write:repo',
  'get {repo}/timers/{timer_uuid}': 'read:repo',
  'patch {repo}/timers/{timer_uuid}': 'write:repo',
  'delete {repo}/timers/{timer_uuid}': 'write:repo',
  'get {repo}/threads': 'read:repo',
  'post {repo}/threads': 'write:repo',
  'get {repo}/threads/{number}': 'read:repo',
  'patch {repo}/threads/{number}': 'write:repo',
  'delete {repo}/threads/{number}': 'write:repo',
  'get {repo}/threads/{number}/participants': 'read:repo',
  'get {repo}/threads/{number}/replies': 'read:repo',
  'post {repo}/threads/{number}/replies': 'write:repo',
  'get {repo}/threads/{number}/replies/{reply_number}': 'read:repo',
  'patch {repo}/threads/{number}/replies/{reply_number}': 'write:repo',
  'delete {repo}/threads/{number}/replies/{reply_number}': 'write:repo',
  'get {repo}/threads/{number}/replies/{reply_number}/versions': 'read:repo',
  'get {repo}/threads/{number}/attachments': 'read:repo',
  'post {repo}/threads/{number}/attachments': 'write:repo',
  'delete {repo}/threads/{number}/attachments/{upload_uuid}': 'write:repo',
  'get {repo}/threads/{number}/replies/{reply_number}/attachments': 'read:repo',
  'post {repo}/threads/{number}/replies/{reply_number}/attachments': 'write:repo',
  'delete {repo}/threads/{number}/replies/{reply_number}/attachments/{upload_uuid}': 'write:repo',
  'get {repo}/uploads': 'read:repo',
  'post {repo}/uploads': 'write:repo',
  'get {repo}/uploads/{upload_uuid}': 'read:repo',
  'delete {repo}/uploads/{upload_uuid}': 'write:repo',
  'get {repo}/uploads/{upload_uuid}/content': 'read:repo',
  'post {repo}/upload-groups': 'write:repo',
  'get {repo}/upload-groups/{group_uuid}': 'read:repo',
  'delete {repo}/upload-groups/{group_uuid}': 'write:repo',
};

export const API_PREFIX = '/api/v1';
const REPO_FORMS = ['/teams/{team_slug}/repos/{repo_slug}', '/users/{username}/repos/{repo_slug}'];

/**
 * The table key of a Fastify route: `GET /api/v1/users/:username/repos/:repo_slug/pulls` →
 * `get {repo}/pulls`; HEAD is its GET. Null for a route outside /api/v1.
 */
export function routeScopeKey(method: string, url: string): string | null {
  if (url !== API_PREFIX && !url.startsWith(`${API_PREFIX}/`)) return null;
  let path = url.slice(API_PREFIX.length).replace(/:(\w+)/g, '{$1}');
  for (const form of REPO_FORMS) {
    if (path === form || path.startsWith(`${form}/`)) path = `{repo}${path.slice(form.length)}`;
  }
  const verb = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  return `${verb} ${path}`;
}

/** The scope a route needs, `public`, or undefined when the table has no entry for it. */
export const routeScope = (key: string): RouteScope | undefined =>
  Object.hasOwn(ROUTE_SCOPES, key) ? ROUTE_SCOPES[key] : undefined;
