/**
 * How a filtered list is read (docs/tracker.md "How a list is read", tracker/items.ts drivingSet),
 * with the driving threshold lowered to 3 so that a few threads reach each path: one small set
 * drives the list; two sets each over the threshold are intersected and drive it when the
 * intersection is small; an intersection over the threshold falls back to the sort index with
 * existence checks; an empty intersection is an empty list. Every path gives the same rows, in
 * order, as the list read without a driving set (threshold 0), on both databases.
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

    it('the intersection of two sets over the threshold drives the list: the same rows as the sort index gives', async () => {
      for (const [query] of CASES) {
        setDrivingSetMax(0); // no set drives: every list walks its sort index with existence checks
        const walked = await numbers(query);
        setDrivingSetMax(3);
        assert.deepEqual(await numbers(query), walked, query);
        setDrivingSetMax();
      }
      setDrivingSetMax(3);
      for (const [query, expected] of CASES) assert.deepEqual(await numbers(query), expected, query);
      setDrivingSetMax();
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
  });
}
