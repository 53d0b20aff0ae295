import type { Kysely } from 'kysely';

/**
 * CI secrets and variables (docs/ci.md "Secrets and variables") of a repo or a team. A secret's
 * value is sealed with the server secret (src/secrets/columns.ts); a variable's is plain text.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['ci_secrets', 'ci_variables']) {
    await db.schema
      .createTable(table)
      .addColumn('uuid', 'text', (c) => c.primaryKey())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('scope_uuid', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('value', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'text', (c) => c.notNull())
      .addUniqueConstraint(`${table}_name_uq`, ['scope', 'scope_uuid', 'name'])
      .execute();
  }
}
