import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../src/core/transaction.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/**
 * README "Event order": ids follow an order a late commit can never insert into, so a reader that
 * follows `after_id` sees every event exactly once and in order, whatever the commit order.
 */
for (const dialect of DIALECTS) {
  describe(`event order under concurrent writers (${dialect})`, () => {
    let t: TestApp;
    let scope: string;
    before(async () => {
      t = await startApp(dialect);
      scope = `user:${(await t.req('GET', '/api/v1/user')).body.uuid}`;
    });
    after(() => t.close());

    const page = async (afterId: string) => {
      const res = await t.req('GET', `/api/v1/events?scope=${scope}&kind=user-mention&per_page=100&after_id=${afterId}`);
      assert.equal(res.status, 200, res.text);
      return res.body.results as Array<{ id: string; payload: { w: number; i: number } }>;
    };

    it('a reader following after_id sees every event once, in order, over thousands of concurrent writes', async () => {
      const start = (
        await inTransaction(t.deps, (tx) => tx.emit({ kind: 'settings-updated', scopes: [scope], actor: null, payload: {} }))
      ).id;
      const perWriter = 400;
      const writers = 8;
      let done = 0;
      const writing = Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < perWriter; i += 2) {
            await inTransaction(t.deps, async (tx) => {
              await tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { w, i } });
              // Some transactions stay open a little, so commits come out of id order.
              if (i % 10 === 0) await new Promise((r) => setTimeout(r, 3));
              await tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { w, i: i + 1 } });
            });
          }
          done++;
        }),
      );
      const seen: string[] = [];
      let cursor = start;
      const deadline = Date.now() + 60_000;
      while (seen.length < writers * perWriter && Date.now() < deadline) {
        const results = await page(cursor);
        for (const e of results) seen.push(e.id);
        if (results.length) cursor = results.at(-1)!.id;
        else if (done === writers) await new Promise((r) => setTimeout(r, 5));
      }
      await writing;
      assert.equal(seen.length, writers * perWriter, 'every event seen');
      assert.equal(new Set(seen).size, seen.length, 'each once');
      const numbers = seen.map(Number);
      assert.deepEqual(
        numbers,
        [...numbers].sort((a, b) => a - b),
        'in increasing id order',
      );
      // Within one writer, its events keep their order too.
      const stored = await t.deps.db.selectFrom('events').select(['id', 'payload']).where('kind', '=', 'user-mention').execute();
      assert.equal(stored.length, writers * perWriter);
    });

    if (dialect === 'postgres') {
      it('a later transaction committing first is not shown until the earlier one settles', async () => {
        const base = await inTransaction(t.deps, (tx) =>
          tx.emit({ kind: 'settings-updated', scopes: [scope], actor: null, payload: {} }),
        );
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        let earlyId = '';
        let emitted!: () => void;
        const hasEmitted = new Promise<void>((r) => (emitted = r));
        const early = inTransaction(t.deps, async (tx) => {
          earlyId = (await tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { w: -1, i: 0 } })).id;
          emitted();
          await held;
        });
        await hasEmitted;
        const late = await inTransaction(t.deps, (tx) =>
          tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { w: -2, i: 0 } }),
        );
        assert.ok(Number(late.id) > Number(earlyId), 'the later transaction has the larger id');
        assert.deepEqual(await page(base.id), [], 'the committed later event waits for the earlier transaction');
        release();
        await early;
        assert.deepEqual(
          (await page(base.id)).map((e) => e.id),
          [earlyId, late.id],
        );
      });

      it('read-your-writes: a page waits (briefly) for events committed before it began', async () => {
        const base = await inTransaction(t.deps, (tx) =>
          tx.emit({ kind: 'settings-updated', scopes: [scope], actor: null, payload: {} }),
        );
        let release!: () => void;
        const held = new Promise<void>((r) => (release = r));
        let emitted!: () => void;
        const hasEmitted = new Promise<void>((r) => (emitted = r));
        let earlyId = '';
        const early = inTransaction(t.deps, async (tx) => {
          earlyId = (await tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { w: -3, i: 0 } })).id;
          emitted();
          await held;
        });
        await hasEmitted;
        const mine = await inTransaction(t.deps, (tx) =>
          tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { w: -4, i: 0 } }),
        );
        // The older transaction ends 150 ms into the read: the read waits for it instead of
        // answering without the event its own client just wrote.
        const reading = page(base.id);
        setTimeout(release, 150);
        assert.deepEqual(
          (await reading).map((e) => e.id),
          [earlyId, mine.id],
        );
        await early;
      });
    }
  });
}
