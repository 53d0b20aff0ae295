import { Type, type TSchema } from '@sinclair/typebox';
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';

/** A slug or a name in a page's address; an unknown one is the service's 404. */
export const PageSlug = Type.String({ minLength: 1, maxLength: 100 });

export interface PageRouteSchema {
  params?: Record<string, TSchema>;
  querystring?: TSchema;
  body?: TSchema;
}

export interface PageRouteExtra {
  compress?: false;
  /**
   * A streamed multipart form: its CSRF token is the form's first field `_csrf` (or the
   * `X-CSRF-Token` header), which the handler checks before it reads the file (web/plugin.ts).
   */
  csrfInBody?: true;
  /** bytes streamed for long (an archive): the longer body and idle limits (http/timeouts.ts) */
  longLived?: true;
}

/**
 * Registers one page route under `url`, with `params` (the address's own path parameters) and
 * `schema.params` (the page's) checked together. Pages are `public` to the API's authentication
 * hook because the page decides access through the same services as the API (README "Web
 * interface"), and hidden from the OpenAPI document.
 */
export function pageRoute(
  app: FastifyInstance,
  method: 'GET' | 'POST',
  url: string,
  params: Record<string, TSchema>,
  schema: PageRouteSchema,
  handler: RouteHandlerMethod,
  /** more route options (`compress: false` for bytes served as they are; `csrfInBody`: see PageRouteExtra) */
  extra: PageRouteExtra = {},
): void {
  const { csrfInBody, longLived, ...rest } = extra;
  app.route({
    method,
    url,
    config: { public: true, ...(csrfInBody ? { csrfInBody } : {}), ...(longLived ? { longLived } : {}) },
    schema: {
      hide: true,
      params: Type.Object({ ...params, ...(schema.params ?? {}) }),
      ...(schema.querystring ? { querystring: schema.querystring } : {}),
      ...(schema.body ? { body: schema.body } : {}),
    },
    handler,
    ...rest,
  });
}
