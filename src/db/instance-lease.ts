import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import type { Database, Dialect } from './index.ts';

/** Namespace of the PostgreSQL advisory locks that are instances' leases. */
const LEASE_CLASS = 7_401_030;

/** Instance ids whose lease this process holds. */
const held = new Set<string>();

/**
 * An instance's lease: who owns work left half-done (a merge claim) and whether that owner still
 * runs. On PostgreSQL the lease is a session advisory lock keyed by the instance id, held on a
 * connection of its own: a killed process's connection closes and the lease is gone at once, so
 * another instance (or the restarted one) can tell "crashed" from "still working" without waiting
 * for a timeout. On SQLite one process serves the file: an owner other than this process's own
 * instances is gone.
 */
export class InstanceLease {
  readonly id = randomUUID();
  private client: pg.Client | null = null;
  private holding: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly database: Pick<Database, 'pool'>) {}

  /** Takes the lease (once; later calls wait for the first). Call before recording the id anywhere. */
  hold(): Promise<void> {
    this.holding ??= this.take().catch((err) => {
      this.holding = null;
      throw err;
    });
    return this.holding;
  }

  private async take(): Promise<void> {
    if (this.database.pool) {
      const client = new pg.Client(this.database.pool.options);
      // A lost connection loses the lease: take it again on next use.
      client.on('error', () => undefined);
      client.on('end', () => {
        if (this.client === client) {
          this.client = null;
          this.holding = null;
          held.delete(this.id);
        }
      });
      await client.connect();
      // The lease must not keep a process alive that has nothing else to do.
      (client as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
      await client.query('select pg_advisory_lock($1, hashtext($2))', [LEASE_CLASS, this.id]);
      if (this.closed) {
        await client.end();
        return;
      }
      this.client = client;
    }
    held.add(this.id);
  }

  /** Gives the lease up (shutdown). */
  async release(): Promise<void> {
    this.closed = true;
    held.delete(this.id);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }
}

const leases = new WeakMap<object, InstanceLease>();

/** The lease of one app instance (keyed by its deps). */
export function instanceLease(deps: { database: Pick<Database, 'pool'> }): InstanceLease {
  let lease = leases.get(deps);
  if (!lease) {
    lease = new InstanceLease(deps.database);
    leases.set(deps, lease);
  }
  return lease;
}

/** Whether the instance `owner` no longer holds its lease (a null owner: written before leases existed). */
export async function ownerIsGone(db: Kysely<unknown>, dialect: Dialect, owner: string | null): Promise<boolean> {
  if (owner === null) return true;
  if (held.has(owner)) return false;
  if (dialect === 'sqlite') return true;
  // Free means nobody holds it; taken only for this statement (autocommit) or this transaction.
  const res = await sql<{ free: boolean }>`select pg_try_advisory_xact_lock(${LEASE_CLASS}, hashtext(${owner})) as free`.execute(
    db,
  );
  return res.rows[0]?.free === true;
}
