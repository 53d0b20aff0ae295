import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Kysely, Selectable } from 'kysely';
import { assertCanManageRateLimits } from '../access/index.ts';
import type { RateLimitRulesTable } from '../db/tables/limits.ts';
import { isUniqueViolation } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { conflict, notFound } from '../errors.ts';
import { actorOf, type EventKind } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import type { Viewer } from '../viewer.ts';
import type { CreateRuleBody, RateLimitRule, UpdateRuleBody } from './schemas.ts';

type RuleRow = Selectable<RateLimitRulesTable>;
export type RuleJson = Static<typeof RateLimitRule>;

export const ruleToJson = (row: RuleRow): RuleJson => ({
  uuid: row.uuid,
  scope: row.scope as RuleJson['scope'],
  max_requests: row.max_requests,
  window_seconds: row.window_seconds,
  is_enabled: row.is_enabled === 1,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

const scopeTaken = (scope: string) => conflict('conflict', `A rate-limit rule for "${scope}" already exists.`);

async function findRule(db: Kysely<DB>, uuid: string): Promise<RuleRow> {
  const row = await db.selectFrom('rate_limit_rules').selectAll().where('uuid', '=', uuid).executeTakeFirst();
  if (!row) throw notFound('Rate-limit rule');
  return row;
}

async function emitRuleEvent(tx: TxContext, viewer: Viewer, kind: EventKind, rule: RuleJson): Promise<void> {
  await tx.emit({ kind, scopes: [`user:${viewer.uuid}`], actor: actorOf(viewer), payload: { rule } });
}

export async function listRules(deps: Deps, viewer: Viewer, page: { offset: number; limit: number }): Promise<RuleJson[]> {
  assertCanManageRateLimits(viewer);
  // The page's keys from rate_limit_rules_list_idx (index entries only), then their rows
  // (README "Performance").
  const keys = deps.db
    .selectFrom('rate_limit_rules')
    .select('uuid')
    .orderBy('created_at')
    .orderBy('uuid')
    .offset(page.offset)
    .limit(page.limit);
  const rows = await deps.db
    .selectFrom('rate_limit_rules')
    .selectAll()
    .where('uuid', 'in', keys)
    .orderBy('created_at')
    .orderBy('uuid')
    .execute();
  return rows.map(ruleToJson);
}

export async function getRule(deps: Deps, viewer: Viewer, uuid: string): Promise<RuleJson> {
  assertCanManageRateLimits(viewer);
  return ruleToJson(await findRule(deps.db, uuid));
}

/** Rate-limit rules are staff's (403 otherwise). */
const staffOnly = decide(async (_db, v: Viewer) => assertCanManageRateLimits(v));

export async function createRule(deps: Deps, viewer: Viewer, input: Static<typeof CreateRuleBody>): Promise<RuleJson> {
  return command(deps, viewer, staffOnly, async (tx) => {
    const existing = await tx.db
      .selectFrom('rate_limit_rules')
      .select('uuid')
      .where('scope', '=', input.scope)
      .executeTakeFirst();
    if (existing) throw scopeTaken(input.scope);
    const now = deps.clock.now().toISOString();
    const row: RuleRow = {
      uuid: randomUUID(),
      scope: input.scope,
      max_requests: input.max_requests,
      window_seconds: input.window_seconds,
      is_enabled: input.is_enabled ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    try {
      await tx.db.insertInto('rate_limit_rules').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw scopeTaken(input.scope);
      throw err;
    }
    const json = ruleToJson(row);
    await emitRuleEvent(tx, viewer, 'rate-limit-created', json);
    return json;
  });
}

export async function updateRule(
  deps: Deps,
  viewer: Viewer,
  uuid: string,
  input: Static<typeof UpdateRuleBody>,
): Promise<RuleJson> {
  return command(deps, viewer, staffOnly, async (tx) => {
    const row = await findRule(tx.db, uuid);
    const changes: Partial<RuleRow> = {};
    if (input.scope !== undefined && input.scope !== row.scope) {
      const other = await tx.db.selectFrom('rate_limit_rules').select('uuid').where('scope', '=', input.scope).executeTakeFirst();
      if (other) throw scopeTaken(input.scope);
      changes.scope = input.scope;
    }
    if (input.max_requests !== undefined) changes.max_requests = input.max_requests;
    if (input.window_seconds !== undefined) changes.window_seconds = input.window_seconds;
    if (input.is_enabled !== undefined) changes.is_enabled = input.is_enabled ? 1 : 0;
    if (Object.keys(changes).length === 0) return ruleToJson(row);
    const updated: RuleRow = { ...row, ...changes, updated_at: deps.clock.now().toISOString() };
    try {
      await tx.db
        .updateTable('rate_limit_rules')
        .set({ ...changes, updated_at: updated.updated_at })
        .where('uuid', '=', uuid)
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw scopeTaken(input.scope ?? row.scope);
      throw err;
    }
    // A rule moved to another operation starts that operation's count afresh.
    if (changes.scope !== undefined)
      await tx.db.deleteFrom('rate_limit_hits').where('scope', 'in', [row.scope, changes.scope]).execute();
    const json = ruleToJson(updated);
    await emitRuleEvent(tx, viewer, 'rate-limit-updated', json);
    return json;
  });
}

export async function deleteRule(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  await command(deps, viewer, staffOnly, async (tx) => {
    const row = await findRule(tx.db, uuid);
    await tx.db.deleteFrom('rate_limit_rules').where('uuid', '=', uuid).execute();
    await tx.db.deleteFrom('rate_limit_hits').where('scope', '=', row.scope).execute();
    await emitRuleEvent(tx, viewer, 'rate-limit-deleted', ruleToJson(row));
  });
}
