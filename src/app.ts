import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';

import { pingDatabase } from './db/index.ts';
import type { Deps } from './deps.ts';
import { activityRoutes } from './activity/routes.ts';
import { attachmentsRoutes } from './attachments/routes.ts';
import { eventsRoutes } from './activity/event-routes.ts';
import { webhooksDocument } from './hooks/openapi-webhooks.ts';
import { hooksRoutes } from './hooks/routes.ts';
import { notificationsRoutes } from './notifications/routes.ts';
import { ciApiRoutes } from './ci/api-routes.ts';
import { ciRoutes } from './ci/routes.ts';
import { ciSecretsRoutes } from './ci/secrets-routes.ts';
import { installAuth } from './http/auth.ts';
import { authenticate } from './tokens/service.ts';
import { resolveRepo } from './access/repo-read.ts';
import { siteTwoFactorRefusal } from './access/two-factor.ts';
import { installConventions } from './http/conventions.ts';
import { installDrainFlag } from './http/shutdown.ts';
import { installMetrics, metricsText, metricsRegistry } from './http/metrics.ts';
import { installJsonParser, installNoBodyCheck } from './http/body.ts';
import { installErrorHandling } from './http/error-handler.ts';
import { installLoadShedding, installTimeouts, serverTimeoutOptions } from './http/timeouts.ts';
import { installOpenApi } from './http/openapi.ts';
import { installTokenScopes } from './http/scopes.ts';
import { installPaging } from './http/paging.ts';
import { installRateLimit } from './http/rate-limit.ts';
import { clientErrorHandler, frameworkErrors, installUrlCheck } from './http/request-checks.ts';
import { installValidators, validatorFactory } from './http/validation.ts';
import { lazySerializerFactory } from './http/lazy-compilers.ts';
import { forksRoutes } from './forks/routes.ts';
import { invitesRoutes } from './invites/routes.ts';
import { rateLimitsRoutes } from './ratelimits/routes.ts';
import { settingsRoutes } from './settings/routes.ts';
import { gitHttpRoutes } from './code/git-http.ts';
import { lfsRoutes } from './lfs/routes.ts';
import { gitRoutes } from './code/ref-routes.ts';
import { codeRoutes } from './code/routes.ts';
import { protectionsRoutes } from './protections/routes.ts';
import { statusesRoutes } from './statuses/routes.ts';
import { searchRoutes } from './search/routes.ts';
import { pullsRoutes } from './pulls/routes.ts';
import { timersRoutes } from './timers/routes.ts';
import { reposRoutes } from './repos/routes.ts';
import { teamsRoutes } from './teams/routes.ts';
import { threadsRoutes } from './threads/routes.ts';
import { trackerRoutes } from './tracker/routes.ts';
import { uploadsRoutes } from './uploads/routes.ts';
import { releasesRoutes } from './releases/routes.ts';
import { mirrorsRoutes } from './mirrors/routes.ts';
import { tokensRoutes } from './tokens/routes.ts';
import { sshKeysRoutes } from './sshkeys/routes.ts';
import { usersRoutes } from './users/routes.ts';
import { sessionsRoutes } from './sessions/routes.ts';
import { signinRoutes } from './signin/routes.ts';
import { passkeyRoutes } from './signin/passkey-routes.ts';
import { authenticateSession } from './sessions/service.ts';
import { webRoutes } from './web/plugin.ts';

export interface AppOptions {
  logger?: boolean;
  /** where the log lines go (tests read them); stdout when absent */
  logStream?: { write(line: string): void };
  /**
   * The server's entry point (main.ts) passes `{ ready: false }` and sets it once the background
   * work runs; until then `/readyz` is 503. Without it the app is ready when built.
   */
  readiness?: { ready: boolean };
}

/** Each domain's routes, mounted under /api/v1. */
const MODULES = [
  usersRoutes,
  tokensRoutes,
  sessionsRoutes,
  eventsRoutes,
  teamsRoutes,
  activityRoutes,
  reposRoutes,
  forksRoutes,
  protectionsRoutes,
  pullsRoutes,
  settingsRoutes,
  rateLimitsRoutes,
  invitesRoutes,
  timersRoutes,
  threadsRoutes,
  trackerRoutes,
  uploadsRoutes,
  attachmentsRoutes,
  gitRoutes,
  sshKeysRoutes,
  codeRoutes,
  statusesRoutes,
  hooksRoutes,
  searchRoutes,
  notificationsRoutes,
  releasesRoutes,
  mirrorsRoutes,
  signinRoutes,
  passkeyRoutes,
  ciRoutes,
  ciApiRoutes,
  ciSecretsRoutes,
];

/** TRUST_PROXY as Fastify takes it: a hop count trusts that many proxies next to the server. */
const trustProxyOption = (t: boolean | number | string[]) =>
  typeof t === 'number' ? (_addr: string, hop: number) => hop < t : t;

export async function buildApp(deps: Deps, opts: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger:
      opts.logger === false
        ? false
        : {
            level: deps.config.logLevel,
            ...(opts.logStream ? { stream: opts.logStream } : {}),
            // LOG_FORMAT=pretty (npm run dev): readable lines through pino-pretty; JSON otherwise.
            ...(deps.config.logFormat === 'pretty'
              ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }
              : {}),
          },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    bodyLimit: 1024 * 1024,
    trustProxy: trustProxyOption(deps.config.trustProxy),
    // Shutdown drains keep-alive connections itself (http/shutdown.ts); requests that still
    // arrive while closing are served (with Connection: close), not refused with 503.
    forceCloseConnections: 'idle',
    return503OnClosing: false,
    routerOptions: { maxParamLength: 500 },
    // Response serializers compile on a route's first response, not at start-up.
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory(), buildValidator: validatorFactory } },
    frameworkErrors,
    clientErrorHandler,
    ...serverTimeoutOptions(deps.config),
  });
  installTimeouts(app, deps.config);
  // Once the server is closing, responses to in-flight requests close their keep-alive
  // connection: otherwise it would stay open (idle) and hold up a graceful shutdown.
  installDrainFlag(app);
  // One onSend hook for what every response carries (a hook per header costs a step each).
  app.addHook('onSend', (request, reply, payload, done) => {
    if (app.draining) reply.header('connection', 'close');
    reply.header('x-request-id', request.id);
    // No response may be sniffed into another type (a JSON body as HTML).
    reply.header('x-content-type-options', 'nosniff');
    // The "request completed" line names the route pattern and the caller (a token's, or a page's session's).
    const route = request.routeOptions.url;
    const user = request.viewer?.username ?? request.page?.viewer.username;
    if (route || user) reply.log = reply.log.child({ route, user });
    done(null, payload);
  });

  await installConventions(app, deps.config);
  installMetrics(app, deps.database, deps.config.metrics !== 'off');
  await installLoadShedding(app, deps.config);

  installValidators(app);
  installJsonParser(app);
  installNoBodyCheck(app);
  installErrorHandling(app);
  installTokenScopes(app);
  await installOpenApi(app, { webhooks: webhooksDocument });
  installUrlCheck(app);
  installAuth(
    app,
    (secret, target) => authenticate(deps, secret, target),
    (secret) => authenticateSession(deps, secret),
    (viewer, target) => resolveRepo(deps.database, viewer, target),
    siteTwoFactorRefusal,
  );
  installPaging(app, deps.config.publicUrl);
  installRateLimit(app, deps);

  app.get('/healthz', { config: { public: true }, schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    if (opts.readiness && !opts.readiness.ready) {
      return reply
        .status(503)
        .send({ error: 'service_unavailable', detail: 'The server is starting: its background work is not running yet.' });
    }
    const ok = await pingDatabase(deps.database);
    return reply
      .status(ok ? 200 : 503)
      .send(ok ? { status: 'ok' } : { error: 'service_unavailable', detail: 'The database is unreachable.' });
  });

  // git smart HTTP at each repo's clone_url, outside /api/v1 (its own body handling).
  await app.register(gitHttpRoutes, { deps });
  // Git LFS beside it (docs/lfs.md).
  await app.register(lfsRoutes, { deps });
  if (deps.config.metrics === 'api') {
    app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (_request, reply) =>
      reply.type(metricsRegistry.contentType).send(await metricsText()),
    );
  }

  await app.register(
    async (api) => {
      api.get(
        '/openapi.json',
        {
          config: { public: true },
          schema: {
            tags: ['meta'],
            summary: 'This OpenAPI 3.1.0 document',
            response: { 200: { type: 'object', additionalProperties: true, description: 'An OpenAPI 3.1.0 document' } },
          },
        },
        async () => app.swagger(),
      );
      for (const module of MODULES) await api.register(module, { deps });
    },
    { prefix: '/api/v1' },
  );
  // The web interface for people (README "Web interface"): pages under `/`.
  await app.register(webRoutes, { deps });
  return app;
}
