import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { CreateRuleBody, ListRulesQuery, RateLimitRule, RuleParams, UpdateRuleBody } from './schemas.ts';
import { createRule, deleteRule, getRule, listRules, updateRule } from './service.ts';

const ENFORCEMENT =
  'A rule is enforced only while its is_enabled and the site setting rate_limits_enabled are both true. It counts requests ' +
  'per caller (the user, or the client IP when anonymous) in an exact sliding window: request max_requests + 1 within ' +
  'window_seconds is 429 rate_limited with Retry-After, RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (seconds); ' +
  'successful responses carry the RateLimit-* headers too. A request is counted once it passes authentication and ' +
  'validation, whatever the operation then answers; a refused request is not counted. Counting is shared by every ' +
  'instance on the database; a change to a rule applies from the next request. Non-staff get 403.';

export async function rateLimitsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['rate-limits'];

  r.get(
    '/rate-limits',
    {
      schema: {
        tags,
        summary: 'The stored rate-limit rules, oldest first (staff only)',
        description: ENFORCEMENT,
        querystring: ListRulesQuery,
        response: { 200: Page(RateLimitRule), ...errors(403) },
      },
    },
    async (request, reply) => {
      const p = pageParams(request.query);
      return pageOf(request, reply, p, await listRules(deps, requireViewer(request), p));
    },
  );

  r.post(
    '/rate-limits',
    {
      schema: {
        tags,
        summary: 'Store a rate-limit rule for an instrumented operation (staff only)',
        description: `A scope that already has a rule is 409 conflict; an unknown scope is 400. ${ENFORCEMENT}`,
        body: CreateRuleBody,
        response: { 201: RateLimitRule, ...errors(403, 409) },
      },
    },
    async (request, reply) => reply.status(201).send(await createRule(deps, requireViewer(request), request.body)),
  );

  r.get(
    '/rate-limits/:uuid',
    {
      schema: {
        tags,
        summary: 'Get a rate-limit rule (staff only)',
        params: RuleParams,
        response: { 200: RateLimitRule, ...errors(403) },
      },
    },
    async (request) => getRule(deps, requireViewer(request), request.params.uuid),
  );

  r.put(
    '/rate-limits/:uuid',
    {
      schema: {
        tags,
        summary: 'Change a rate-limit rule (staff only); omitted fields keep their values',
        description: `Moving a rule to a scope another rule has is 409 conflict; moving it resets the counts of both scopes. ${ENFORCEMENT}`,
        params: RuleParams,
        body: UpdateRuleBody,
        response: { 200: RateLimitRule, ...errors(403, 409) },
      },
    },
    async (request) => updateRule(deps, requireViewer(request), request.params.uuid, request.body),
  );

  r.delete(
    '/rate-limits/:uuid',
    {
      schema: {
        tags,
        summary: 'Delete a rate-limit rule and its counts (staff only)',
        params: RuleParams,
        response: { 204: { type: 'null', description: 'Deleted' }, ...errors(403) },
      },
    },
    async (request, reply) => {
      await deleteRule(deps, requireViewer(request), request.params.uuid);
      return reply.status(204).send();
    },
  );
}
