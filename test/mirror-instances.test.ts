import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Database, openDatabase } from '../src/db/index.ts';
import { DIALECTS, freshStore } from './helpers.ts';
import {
  SERVER_ADMIN_TOKEN,
  type ServerProcess,
  type StoreHandle,
  eventually,
  freePort,
  startServer,
  stopServer,
  GIT_ENV,
  git,
} from './server-process.ts';

/**
 * docs/bring-in.md "Pull mirrors": two real server processes (dist/main.js) on one PostgreSQL
 * database and one DATA_DIR, four pull mirrors of git daemon sources. Counted in the mirrors'
 * sync history (`mirror_syncs`): each timed sync runs once per slot across both instances; a sync
 * asked for on one instance while the other holds the timed one runs once, after it; an
 * instance killed with `kill -9` mid-sync leaves the mirror syncing again (the job is taken over
 * once its lease runs out). Due times and the lease's end are moved in the jobs table, as a
 * clock would move them (the interval is at least 600 s, the lease 60 s).
 */
const MIRRORS = 4;

async function api(base: string, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown>, text };
}

/** A TCP relay to the git daemon that, while `stalled`, holds new connections unanswered: a sync that hangs. */
class StallingRelay {
  stalled = false;
  private held: Array<{ client: Socket; go: () => void }> = [];
  private readonly server: Server;
  port = 0;
  constructor(private readonly target: number) {
    this.server = createServer((client) => {
      client.on('error', () => undefined);
      const go = () => {
        const upstream = connect(this.target, '127.0.0.1');
        upstream.on('error', () => client.destroy());
        client.on('close', () => upstream.destroy());
        client.pipe(upstream).pipe(client);
      };
      if (this.stalled) this.held.push({ client, go });
      else go();
    });
  }
  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }
  /** Lets the held connections through (or cuts them: their git fails at once) and stops holding. */
  release(cut = false): void {
    this.stalled = false;
    for (const h of this.held.splice(0)) {
      if (cut) h.client.destroy();
      else h.go();
    }
  }
  close(): void {
    this.release(true);
    this.server.close();
  }
}

// several instances are a PostgreSQL deployment; SQLite serves one process
for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`pull mirrors across two server processes (${dialect})`, () => {
    let store: StoreHandle;
    let a: ServerProcess;
    let b: ServerProcess;
    let database: Database;
    let root: string;
    let work: string;
    let daemon: ChildProcess;
    let relay: StallingRelay;
    let token: string;
    const mirrors: Array<{ slug: string; uuid: string; source: string }> = [];

    const rows = (uuid: string) =>
      database.db.selectFrom('mirror_syncs').selectAll().where('repo_uuid', '=', uuid).orderBy('started_at').execute();
    const pidOf = (instance: string) => Number(instance.slice(instance.lastIndexOf(':') + 1));
    const servers = () => [a, b];
    const serverOf = (instance: string) => servers().find((s) => s.child.pid === pidOf(instance))!;
    /** The queued timed sync of these mirrors becomes due now (as the clock would make it). */
    const dueNow = async (uuids: string[]) => {
      for (const uuid of uuids) {
        const moved = await database.db
          .updateTable('jobs')
          .set({ run_at: new Date(Date.now() - 1000).toISOString() })
          .where('kind', '=', 'mirror-sync')
          .where('dedupe_key', 'like', `mirror-tick:${uuid}:%`)
          .where('locked_until', 'is', null)
          .executeTakeFirst();
        assert.equal(Number(moved.numUpdatedRows), 1, `one queued timed sync of ${uuid}`);
      }
    };
    const advance = (source: string, name: string) => {
      writeFileSync(join(work, 'f.txt'), `${name}\n`);
      git(['add', '-A'], work);
      git(['commit', '-q', '-m', name], work);
      git(['push', '-q', '--force', source, 'HEAD:refs/heads/main'], work);
      return git(['rev-parse', 'HEAD'], work).trim();
    };
    /** The mirror's main, as git over HTTP from the first instance gives it. */
    /** The mirror's main tip, read over HTTP from `via` (instance a unless it is the one killed). */
    const mirrorTip = async (slug: string, via: ServerProcess = a) => {
      const url = new URL(`/git/users/owner/${slug}.git`, via.base);
      url.username = 'x';
      url.password = token;
      return git(['ls-remote', url.toString(), 'refs/heads/main']).split('\t')[0] || null;
    };

    before(async () => {
      store = await freshStore(dialect);
      [a, b] = await Promise.all([startServer(store), startServer(store)]);
      database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
      root = mkdtempSync(join(tmpdir(), 'weft-mirror-instances-'));
      const served = join(root, 'served');
      mkdirSync(served);
      work = join(root, 'tree');
      mkdirSync(work);
      git(['init', '-q', '-b', 'main'], work);
      for (let i = 0; i < MIRRORS; i++) {
        git(['init', '-q', '--bare', join(served, `s${i}.git`)]);
        advance(join(served, `s${i}.git`), `first ${i}`);
      }
      const port = await freePort();
      daemon = spawn(
        'git',
        ['daemon', '--reuseaddr', '--export-all', `--base-path=${served}`, '--listen=127.0.0.1', `--port=${port}`, served],
        { stdio: 'ignore', env: GIT_ENV },
      );
      relay = new StallingRelay(port);
      await relay.listen();
      await eventually('the git daemon', async () => {
        try {
          git(['ls-remote', `git://127.0.0.1:${port}/s0.git`]);
          return true;
        } catch {
          return undefined;
        }
      });
      const user = await api(a.base, 'POST', '/users', SERVER_ADMIN_TOKEN, {
        username: 'owner',
        email: 'o@example.com',
        password: 'correct horse battery',
      });
      assert.equal(user.status, 201, user.text);
      token = (await api(a.base, 'POST', '/api-tokens', SERVER_ADMIN_TOKEN, { name: 't', username: 'owner' })).body
        .token as string;
      const allowed = await api(b.base, 'PUT', '/site-settings', SERVER_ADMIN_TOKEN, { webhook_allowed_hosts: ['127.0.0.1'] });
      assert.equal(allowed.status, 200, allowed.text);
      for (let i = 0; i < MIRRORS; i++) {
        const slug = `m${i}`;
        const created = await api(i % 2 ? a.base : b.base, 'POST', '/users/owner/repos', token, {
          name: slug,
          slug,
          import: { url: `git://127.0.0.1:${relay.port}/s${i}.git`, mirror: true, interval_seconds: 600 },
        });
        assert.equal(created.status, 201, created.text);
        mirrors.push({ slug, uuid: created.body.uuid as string, source: join(served, `s${i}.git`) });
      }
      for (const m of mirrors) {
        await eventually(`the import of ${m.slug}`, async () => {
          const r = await api(a.base, 'GET', `/users/owner/repos/${m.slug}/import`, token);
          if (r.body.import_status === 'failed') throw new Error(String(r.body.import_error));
          return r.body.import_status === 'done' ? true : undefined;
        });
      }
    });
    after(async () => {
      relay?.close();
      daemon?.kill();
      await Promise.all([stopServer(a, 'SIGTERM'), stopServer(b, 'SIGTERM')]);
      await database?.close();
      await store?.drop().catch(() => undefined);
      if (root) rmSync(root, { recursive: true, force: true });
    });

    /** Makes every mirror's timed sync due, and waits until each ran: its history has `slots` timed syncs finished. */
    async function timedSlot(slots: number, name: string): Promise<void> {
      const tips = mirrors.map((m) => advance(m.source, `${name} ${m.slug}`));
      await dueNow(mirrors.map((m) => m.uuid));
      for (const [i, m] of mirrors.entries()) {
        await eventually(
          `${name}: the timed sync of ${m.slug}`,
          async () => {
            const done = (await rows(m.uuid)).filter((r) => r.trigger === 'timer' && r.finished_at !== null);
            return done.length >= slots && (await mirrorTip(m.slug)) === tips[i] ? true : undefined;
          },
          90_000,
        );
      }
    }

    it('each timed sync runs once per slot across both instances', async () => {
      for (let slot = 1; slot <= 3; slot++) await timedSlot(slot, `slot ${slot}`);
      // a little longer: a second run of any slot would show now
      await new Promise((r) => setTimeout(r, 2500));
      const instances = new Set<string>();
      for (const m of mirrors) {
        const timed = (await rows(m.uuid)).filter((r) => r.trigger === 'timer');
        assert.equal(timed.length, 3, JSON.stringify(timed));
        assert.equal(new Set(timed.map((r) => r.slot)).size, 3, 'one run per slot');
        for (const r of timed) {
          assert.equal(r.error, null);
          assert.equal(r.refs_moved, 1);
          instances.add(r.instance);
        }
        // and the next slot is queued, once
        const next = await database.db
          .selectFrom('jobs')
          .select('run_at')
          .where('dedupe_key', 'like', `mirror-tick:${m.uuid}:%`)
          .execute();
        assert.equal(next.length, 1);
        assert.ok(Date.parse(next[0]!.run_at) > Date.now() + 500_000);
      }
      for (const i of instances) assert.ok(serverOf(i), `run by one of the two servers: ${i}`);
      console.log(`# 12 timed syncs run by ${instances.size} instance(s)`);
    });

    it('a sync asked for on one instance while the other holds the timed sync runs once, after it', async () => {
      const m = mirrors[0]!;
      relay.stalled = true;
      const tip = advance(m.source, 'held');
      await dueNow([m.uuid]);
      const held = await eventually('the timed sync running', async () =>
        (await rows(m.uuid)).find((r) => r.trigger === 'timer' && r.finished_at === null),
      );
      const holder = serverOf(held.instance);
      const other = holder === a ? b : a;
      for (let i = 0; i < 2; i++) {
        const asked = await api(other.base, 'POST', `/users/owner/repos/${m.slug}/mirror/sync`, token);
        assert.equal(asked.status, 202, asked.text);
      }
      // the other instance takes the job and waits for the repo's lock: nothing runs beside the held sync
      await new Promise((r) => setTimeout(r, 2500));
      assert.deepEqual(
        (await rows(m.uuid)).filter((r) => r.finished_at === null).map((r) => r.uuid),
        [held.uuid],
      );
      relay.release();
      await eventually('the sync on demand, after the timed one', async () => {
        const demand = (await rows(m.uuid)).filter((r) => r.trigger === 'demand');
        return demand.length === 1 && demand[0]!.finished_at !== null ? true : undefined;
      });
      await new Promise((r) => setTimeout(r, 2500));
      const all = await rows(m.uuid);
      const demand = all.filter((r) => r.trigger === 'demand');
      assert.equal(demand.length, 1, JSON.stringify(all));
      assert.equal(all.filter((r) => r.slot === held.slot).length, 1);
      const timed = all.find((r) => r.uuid === held.uuid)!;
      assert.equal(timed.error, null);
      assert.equal(timed.refs_moved, 1);
      assert.equal(demand[0]!.error, null);
      assert.equal(demand[0]!.refs_moved, 0, 'the timed sync had moved main already');
      assert.ok(demand[0]!.started_at >= timed.finished_at!, 'after the timed sync');
      assert.equal(await mirrorTip(m.slug), tip);
    });

    it('kill -9 of the instance mid-sync: the sync is taken over and the mirror keeps syncing', async () => {
      const m = mirrors[1]!;
      relay.stalled = true;
      const tip = advance(m.source, 'killed');
      await dueNow([m.uuid]);
      const held = await eventually('the timed sync running', async () =>
        (await rows(m.uuid)).find((r) => r.trigger === 'timer' && r.finished_at === null),
      );
      const victim = serverOf(held.instance);
      const survivor = victim === a ? b : a;
      await stopServer(victim, 'SIGKILL');
      // the killed process's git is cut off with it
      relay.release(true);
      // its job's lease runs out (moved here, as a clock would)
      const lease = await database.db
        .updateTable('jobs')
        .set({ locked_until: new Date(Date.now() - 1000).toISOString() })
        .where('dedupe_key', 'like', `mirror-tick:${m.uuid}:%`)
        .where('locked_until', 'is not', null)
        .executeTakeFirst();
      assert.equal(Number(lease.numUpdatedRows), 1);
      const retried = await eventually(
        'the timed sync taken over',
        async () => (await rows(m.uuid)).find((r) => r.slot === held.slot && r.uuid !== held.uuid && r.finished_at !== null),
        90_000,
      );
      assert.equal(serverOf(retried.instance), survivor);
      assert.equal(retried.error, null);
      assert.equal(await mirrorTip(m.slug, survivor), tip);
      const cut = (await rows(m.uuid)).find((r) => r.uuid === held.uuid)!;
      assert.equal(cut.finished_at, null, 'the killed run never finished');

      // the killed instance comes back; both go on syncing every mirror, once per slot
      if (victim === a) a = await startServer(store);
      else b = await startServer(store);
      const before = new Map<string, number>();
      for (const x of mirrors)
        before.set(x.uuid, (await rows(x.uuid)).filter((r) => r.trigger === 'timer' && r.finished_at !== null).length);
      const tips = mirrors.map((x) => advance(x.source, `after ${x.slug}`));
      await dueNow(mirrors.map((x) => x.uuid));
      for (const [i, x] of mirrors.entries()) {
        await eventually(
          `the timed sync of ${x.slug} after the restart`,
          async () => {
            const n = (await rows(x.uuid)).filter((r) => r.trigger === 'timer' && r.finished_at !== null).length;
            return n === before.get(x.uuid)! + 1 && (await mirrorTip(x.slug)) === tips[i] ? true : undefined;
          },
          90_000,
        );
      }
      const last = await rows(m.uuid);
      assert.equal(last[last.length - 1]!.error, null);
      // on demand, through the restarted instance, once
      const restarted = victim === a ? a : b;
      const again = advance(m.source, 'on demand after the restart');
      assert.equal((await api(restarted.base, 'POST', `/users/owner/repos/${m.slug}/mirror/sync`, token)).status, 202);
      await eventually('the sync on demand after the restart', async () =>
        (await mirrorTip(m.slug)) === again ? true : undefined,
      );
      const demand = (await rows(m.uuid)).filter((r) => r.trigger === 'demand');
      assert.equal(demand.length, 1);
      assert.equal(demand[0]!.error, null);
    });
  });
}
