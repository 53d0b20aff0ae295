/** The two stores, and what a migration is told of the one it runs on (no imports: the bottom of db/). */
export type Dialect = 'sqlite' | 'postgres';

/** What a migration's `up` is told besides the database (db/migrate.ts runs them). */
export interface MigrationContext {
  dialect: Dialect;
}
