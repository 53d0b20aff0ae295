/**
 * How a filtered list is read (docs/tracker.md "How a list is read", tracker/items.ts drivingSet),
 * with the driving threshold lowered to 3 so that a few threads reach each path: one small set
 * drives the list; two sets each over the threshold are intersected and drive it when the
 * intersection is small; an intersection over the threshold falls back to the sort index with
 * existence checks; an empty intersection is an empty list. The sets are sized first, so the
 * smallest drives whatever the filters' order, and an intersection is read either by merging the
 * sets (SQLite) or by probing the smallest's items in the others' keys. Every path gives the same
 * rows, in order, as the list read without a driving set (threshold 0), on both databases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setDrivingSetMax } from '../src/tracker/items.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

for (const dialect of DIALECTS) {
  describe(`tracker list driving sets (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string };
    const api = '/api/v1/teams/lists/repos/work';
    // thread n (1-10): label a on 1-6, b on 3-8, c on 7-10; words "alpha" in 1-6, "beta" in 4-9
    const labelsOf = (n: number) => [n <= 6 && 'a', n >= 3 && n <= 8 && 'b', n >= 7 && 'c'].filter(Boolean) as string[];
    const titleOf = (n: number) => [`Item ${n}`, n <= 6 && 'alpha', n >= 4 && n <= 9 && 'beta'].filter(Boolean).join(' ');

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      const ok = (res: { status: number; text: string }) => assert.equal(res.status, 201, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Lists', slug: 'lists' } }));
      ok(await t.req('POST', '/api/v1/teams/lists/repos', { token: alice.token, body: { name: 'Work', slug: 'work' } }));
      for (const name of ['a', 'b', 'c'])
        ok(await t.req('POST', `${api}/labels`, { token: alice.token, body: { name, color: '0969da' } }));
      for (let n = 1; n <= 10; n++) {
        ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: titleOf(n), labels: labelsOf(n) } }));
      }
    });
    after(async () => {
      setDrivingSetMax();
      await t?.close();
    });

    const numbers = async (query: string) => {
      const res = await t.req('GET', `${api}/threads?state=all&per_page=100&${query}`, { token: alice.token });
      assert.equal(res.status, 200, res.text);
      return res.body.results.map((r: { number: number }) => r.number) as number[];
    };

    const CASES: Array<[string, number[]]> = [
      ['labels=a,b', [6, 5, 4, 3]], // 6 and 6 over 3: intersected, 4 > 3: the sort index
      ['labels=a,b&direction=asc', [3, 4, 5, 6]],
      ['labels=b,c', [8, 7]], // 6 and 4 over 3: intersected, 2: drives the list
      ['labels=a,c', []], // 6 and 4 over 3, no thread has both: empty
      ['labels=a,b,c', []], // three sets: the first's items checked on the other two
      ['q=alpha beta', [6, 5, 4]], // two words, 6 each: intersected, 3: drives the list
      ['q=alpha beta&labels=c', []],
      ['q=beta&labels=c', [9, 8, 7]], // c's 4 and beta's 6: intersected
      ['labels=b&q=alpha&sort=updated', [6, 5, 4, 3]],
    ];

    // the intersection of large sets read by merging them (SQLite; the default at these sizes), by
    // probing the smallest's items in the others' keys (probe cost 0), and as sized by default
    const INTERSECTIONS: Array<[string, number | undefined]> = [
      ['merge', Infinity],
      ['probe', 0],
      ['default', undefined],
    ];

    it('the intersection of two sets over the threshold drives the list: the same rows as the sort index gives', async () => {
      for (const [how, probe] of INTERSECTIONS) {
        for (const [query] of CASES) {
          setDrivingSetMax(0); // no set drives: every list walks its sort index with existence checks
          const walked = await numbers(query);
          setDrivingSetMax(3, probe);
          assert.deepEqual(await numbers(query), walked, `${query} (${how})`);
          setDrivingSetMax();
        }
        setDrivingSetMax(3, probe);
        for (const [query, expected] of CASES) assert.deepEqual(await numbers(query), expected, `${query} (${how})`);
        setDrivingSetMax();
      }
    });

    it('sets are sized before any is read: the smallest drives, whatever the order of the filters', async () => {
      setDrivingSetMax(5); // a: 6, b: 6, c: 4 items; c drives in either order
      try {
        assert.deepEqual(await numbers('labels=c,a'), []);
        assert.deepEqual(await numbers('labels=a,c'), []);
        assert.deepEqual(await numbers('labels=b,c&direction=asc'), [7, 8]);
        assert.deepEqual(await numbers('labels=c,b'), [8, 7]);
        assert.deepEqual(await numbers('q=beta&labels=c'), [9, 8, 7]);
        assert.deepEqual(await numbers('labels=a&q=nosuchword'), []);
      } finally {
        setDrivingSetMax();
      }
    });

    it('pages of a driven list and of an intersection over the threshold follow by keyset', async () => {
      setDrivingSetMax(3);
      try {
        const res = await t.req('GET', `${api}/threads?state=all&per_page=2&labels=b,c`, { token: alice.token });
        assert.deepEqual(
          res.body.results.map((r: { number: number }) => r.number),
          [8, 7],
        );
        const page2 = await t.req('GET', `${api}/threads?state=all&per_page=2&labels=a,b`, { token: alice.token });
        assert.deepEqual(
          page2.body.results.map((r: { number: number }) => r.number),
          [6, 5],
        );
        assert.ok(page2.body.next, 'a next page');
        const next = await t.req('GET', page2.body.next, { token: alice.token });
        assert.deepEqual(
          next.body.results.map((r: { number: number }) => r.number),
          [4, 3],
        );
      } finally {
        setDrivingSetMax();
      }
    });

    it('a walk bounded before its page is found reads the intersection instead (its matches closed)', async () => {
      // a and b hold 3-6; with 3, 4 and 5 closed the open list's only match is 6, past the fence
      for (const n of [3, 4, 5]) {
        const res = await t.req('PATCH', `${api}/threads/${n}`, { token: alice.token, body: { state: 'closed' } });
        assert.equal(res.status, 200, res.text);
      }
      const follow = async (query: string) => {
        const seen: number[] = [];
        let url: string | null = `${api}/threads?${query}&per_page=1`;
        for (let i = 0; url && i < 20; i++) {
          const res = await t.req('GET', url, { token: alice.token });
          assert.equal(res.status, 200, res.text);
          seen.push(...res.body.results.map((r: { number: number }) => r.number));
          url = res.body.next ?? null;
        }
        return seen;
      };
      const PATHS: Array<[number, number | undefined]> = [
        [3, undefined],
        [3, 0],
        [3, Infinity],
        [0, undefined], // the intersection over the fallback's bound: walked on to the end
      ];
      try {
        for (const [max, probe] of PATHS) {
          setDrivingSetMax(max, probe, 1);
          const how = `threshold ${max}, probe cost ${probe ?? 'default'}`;
          assert.deepEqual(await follow('labels=a,b'), [6], how);
          assert.deepEqual(await follow('labels=a,b&direction=asc'), [6], how);
          assert.deepEqual(await follow('labels=b,a&state=closed'), [5, 4, 3], how);
          assert.deepEqual(await follow('labels=b&q=alpha&state=closed&sort=updated&direction=asc'), [3, 4, 5], how);
          assert.deepEqual(await follow('labels=c&state=closed'), [], how);
        }
      } finally {
        setDrivingSetMax();
      }
    });
  });
}

/**
 * Keyset pages on every path of the list (the sort index walked with per-row checks, an
 * intersection driving the list, a small set driving it), in each sort and direction, with ties
 * in every sort key (threads with the same created_at, the same updated_at, the same reply count):
 * following `next` two at a time gives exactly the whole list, which is the matching threads in
 * (sort key, number) order as computed here from the threads' own fields.
 */
for (const dialect of DIALECTS) {
  describe(`tracker list keyset pages on every path (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string };
    const api = '/api/v1/teams/pages/repos/deep';
    // thread n (1-12): label a on 1-9, b on 3-12, c on 3, 6, 9, 12; words "alpha" in 1-8, "beta" in
    // 4-12, "gamma" in 2, 6, 10. With the threshold at 3: labels=a,b,c and labels=c&q=beta (3 each)
    // are driven by their intersection, q=gamma&labels=b by gamma's own set, the others walk
    const labelsOf = (n: number) => [n <= 9 && 'a', n >= 3 && 'b', n % 3 === 0 && 'c'].filter(Boolean) as string[];
    const titleOf = (n: number) =>
      [`Item ${n}`, n <= 8 && 'alpha', n >= 4 && 'beta', n % 4 === 2 && 'gamma'].filter(Boolean).join(' ');
    const REPLIES: Record<number, number> = { 2: 2, 5: 2, 6: 1, 9: 2, 11: 1 };
    interface Row {
      number: number;
      created_at: string;
      updated_at: string;
      reply_count: number;
      labels: Array<{ name: string }>;
      title: string;
    }
    let rows: Row[] = [];

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      const ok = (res: { status: number; text: string }) => assert.equal(res.status, 201, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Pages', slug: 'pages' } }));
      ok(await t.req('POST', '/api/v1/teams/pages/repos', { token: alice.token, body: { name: 'Deep', slug: 'deep' } }));
      for (const name of ['a', 'b', 'c'])
        ok(await t.req('POST', `${api}/labels`, { token: alice.token, body: { name, color: '0969da' } }));
      for (let n = 1; n <= 12; n++) {
        ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: titleOf(n), labels: labelsOf(n) } }));
        for (let r = 0; r < (REPLIES[n] ?? 0); r++)
          ok(await t.req('POST', `${api}/threads/${n}/replies`, { token: alice.token, body: { body: `reply ${r}` } }));
      }
      // ties in the time keys (as threads brought in from elsewhere with the same timestamps)
      const db = t.deps.db;
      const tie = (column: 'created_at' | 'updated_at', numbers: number[], at: string) =>
        db
          .updateTable('threads')
          .set({ [column]: at })
          .where('number', 'in', numbers)
          .execute();
      await tie('created_at', [4, 5, 6, 7], '2026-01-01T00:00:00.000Z');
      await tie('updated_at', [3, 8, 9, 10], '2026-01-02T00:00:00.000Z');
      await tie('updated_at', [1, 12], '2026-01-03T00:00:00.000Z');
      const res = await t.req('GET', `${api}/threads?state=all&per_page=100`, { token: alice.token });
      assert.equal(res.status, 200, res.text);
      rows = res.body.results;
      assert.equal(rows.length, 12);
    });
    after(async () => {
      setDrivingSetMax();
      await t?.close();
    });

    const QUERIES: Array<[string, (r: Row) => boolean]> = [
      ['labels=a,b', (r) => ['a', 'b'].every((l) => r.labels.some((x) => x.name === l))],
      ['labels=a,b,c', (r) => ['a', 'b', 'c'].every((l) => r.labels.some((x) => x.name === l))],
      ['q=alpha beta', (r) => r.title.includes('alpha') && r.title.includes('beta')],
      ['labels=c&q=beta', (r) => r.labels.some((x) => x.name === 'c') && r.title.includes('beta')],
      ['labels=b', (r) => r.labels.some((x) => x.name === 'b')],
      ['q=gamma&labels=b', (r) => r.title.includes('gamma') && r.labels.some((x) => x.name === 'b')],
    ];
    const keyOf = (r: Row, sort: string): string | number =>
      sort === 'replies' ? r.reply_count : sort === 'updated' ? r.updated_at : r.created_at;

    const follow = async (query: string) => {
      const seen: number[] = [];
      let url: string | null = `${api}/threads?${query}&per_page=2`;
      for (let i = 0; url && i < 20; i++) {
        const res = await t.req('GET', url, { token: alice.token });
        assert.equal(res.status, 200, res.text);
        seen.push(...res.body.results.map((r: { number: number }) => r.number));
        url = res.body.next ?? null;
      }
      return seen;
    };

    it('following `next` gives the whole list in (sort key, number) order on every path, sort and direction', async () => {
      assert.equal(rows.filter((r) => r.reply_count === 2).length, 3, 'replies counted');
      const PATHS: Array<[number | undefined, number | undefined, number | undefined]> = [
        [0, undefined, undefined],
        [3, undefined, undefined],
        [3, 0, undefined],
        [3, Infinity, undefined],
        [undefined, undefined, undefined],
        // a walk bounded at one page of index entries: its page found before the fence, or the
        // intersection driving the rest (threshold 3: up to 25 items), or (threshold 0) walked on
        [0, undefined, 1],
        [3, undefined, 1],
        [3, 0, 1],
        [3, Infinity, 1],
      ];
      for (const [max, probe, pages] of PATHS) {
        // 0: every list walks its sort index; 3: the sets over it are intersected (merged, probed
        // from the smallest, or as sized); default: they drive the list
        setDrivingSetMax(max, probe, pages);
        for (const [query, matches] of QUERIES) {
          for (const sort of ['created', 'updated', 'replies']) {
            for (const direction of ['desc', 'asc']) {
              const q = `state=all&${query}&sort=${sort}&direction=${direction}`;
              const sign = direction === 'desc' ? -1 : 1;
              const expected = rows
                .filter(matches)
                .sort((x, y) => {
                  const [a, b] = [keyOf(x, sort), keyOf(y, sort)];
                  return sign * (a < b ? -1 : a > b ? 1 : x.number - y.number);
                })
                .map((r) => r.number);
              const whole = await t.req('GET', `${api}/threads?${q}&per_page=100`, { token: alice.token });
              assert.deepEqual(
                whole.body.results.map((r: { number: number }) => r.number),
                expected,
                `${q} (threshold ${max ?? 'default'}, probe cost ${probe ?? 'default'}, walk pages ${pages ?? 'default'})`,
              );
              assert.deepEqual(
                await follow(q),
                expected,
                `${q} by pages (threshold ${max ?? 'default'}, probe cost ${probe ?? 'default'}, walk pages ${pages ?? 'default'})`,
              );
            }
          }
        }
      }
      setDrivingSetMax();
    });
  });
}
