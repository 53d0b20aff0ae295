import type { Kysely } from 'kysely';
import type { Config } from './config.ts';
import type { Database, Dialect } from './db/index.ts';
import type { DB } from './db/types.ts';
import type { EventBus } from './events/bus.ts';

/** What services need from the outside world, built once in main.ts (or a test helper). */
export interface Deps {
  config: Config;
  database: Database;
  db: Kysely<DB>;
  dialect: Dialect;
  bus: EventBus;
}
