/**
 * The pull list's filters (README "Issue tracker", docs/tracker.md "How a list is read"): every
 * filter of GET {repo}/pulls and their pairs against a brute-force reading of the tables, in each
 * sort and direction and on each path of the list (the sort index walked with per-row checks, an
 * intersection of sets driving it, a small set driving it); keyset pages that follow `next` to
 * exactly the whole list with ties in every sort key; `pulls.review_count` and `pull_terms` kept
 * right by every write (pull create and edit, review create, pending, submit, remove) and rebuilt
 * by migration 740's backfill; a bad cursor 400. On both databases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { backfill } from '../src/db/migrations/740_pull_lists.ts';
import { threadTerms, wordsOf } from '../src/db/terms.ts';
import type { DB } from '../src/db/types.ts';
import { setDrivingSetMax } from '../src/tracker/items.ts';
import { assertRefused } from './common.ts';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

interface Model {
  uuid: string;
  number: number;
  title: string;
  body: string;
  status: string;
  draft: boolean;
  author: string;
  milestone: number | null;
  created_at: string;
  updated_at: string;
  labels: string[];
  assignees: string[];
  requested: string[];
  /** reviews not removed, pending ones included */
  reviews: number;
  /** bodies of the submitted reviews not removed */
  reviewBodies: string[];
}

/** The repo's pulls as the tables hold them, read without the list's code. */
async function readModel(db: Kysely<DB>, repoUuid: string): Promise<Model[]> {
  const pulls = await db
    .selectFrom('pulls as p')
    .innerJoin('users as u', 'u.uuid', 'p.author_uuid')
    .leftJoin('milestones as m', 'm.uuid', 'p.milestone_uuid')
    .select([
      'p.uuid',
      'p.number',
      'p.title',
      'p.body',
      'p.status',
      'p.draft',
      'u.username',
      'm.number as milestone',
      'p.created_at',
      'p.updated_at',
    ])
    .where('p.repo_uuid', '=', repoUuid)
    .execute();
  const uuids = pulls.map((p) => p.uuid);
  const labels = await db
    .selectFrom('item_labels as il')
    .innerJoin('labels as l', 'l.uuid', 'il.label_uuid')
    .select(['il.item_uuid', 'l.name'])
    .where('il.item_uuid', 'in', uuids)
    .execute();
  const assignees = await db
    .selectFrom('item_assignees as ia')
    .innerJoin('users as u', 'u.uuid', 'ia.user_uuid')
    .select(['ia.item_uuid', 'u.username'])
    .where('ia.item_uuid', 'in', uuids)
    .execute();
  const requests = await db
    .selectFrom('review_requests as rr')
    .innerJoin('users as u', 'u.uuid', 'rr.user_uuid')
    .select(['rr.pull_uuid', 'u.username'])
    .where('rr.pull_uuid', 'in', uuids)
    .execute();
  const reviews = await db
    .selectFrom('reviews')
    .select(['pull_uuid', 'status', 'body', 'removed_at'])
    .where('pull_uuid', 'in', uuids)
    .execute();
  return pulls.map((p) => {
    const live = reviews.filter((r) => r.pull_uuid === p.uuid && r.removed_at === null);
    return {
      uuid: p.uuid,
      number: p.number,
      title: p.title,
      body: p.body,
      status: p.status,
      draft: p.draft === 1,
      author: p.username,
      milestone: p.milestone ?? null,
      created_at: p.created_at,
      updated_at: p.updated_at,
      labels: labels.filter((l) => l.item_uuid === p.uuid).map((l) => l.name),
      assignees: assignees.filter((a) => a.item_uuid === p.uuid).map((a) => a.username),
      requested: requests.filter((r) => r.pull_uuid === p.uuid).map((r) => r.username),
      reviews: live.length,
      reviewBodies: live.filter((r) => r.status !== 'pending').map((r) => r.body),
    };
  });
}

/** Whether a pull passes the query's filters, decided from its model. */
function passes(m: Model, query: string): boolean {
  const q = new URLSearchParams(query);
  const texts = [`${m.title}\n${m.body}`, ...m.reviewBodies];
  const status = q.get('status');
  const state = q.get('state') ?? 'open';
  if (status !== null) {
    if (m.status !== status) return false;
  } else if (state === 'open' ? m.status !== 'open' : state === 'closed' ? m.status === 'open' : false) return false;
  const labels = q.get('labels');
  if (labels !== null && !labels.split(',').every((l) => m.labels.includes(l))) return false;
  const assignee = q.get('assignee');
  if (assignee === '*' && m.assignees.length === 0) return false;
  if (assignee === 'none' && m.assignees.length > 0) return false;
  if (assignee !== null && assignee !== '*' && assignee !== 'none' && !m.assignees.includes(assignee)) return false;
  const milestone = q.get('milestone');
  if (milestone === '*' && m.milestone === null) return false;
  if (milestone === 'none' && m.milestone !== null) return false;
  if (milestone !== null && milestone !== '*' && milestone !== 'none' && m.milestone !== Number(milestone)) return false;
  if (q.get('author') !== null && m.author !== q.get('author')) return false;
  const mentioned = q.get('mentioned');
  if (mentioned !== null && !texts.some((t) => new RegExp(`(^|\\s)@${mentioned}(?![\\w-])`, 'i').test(t))) return false;
  const words = wordsOf(q.get('q') ?? '');
  if (
    !words.every((w) =>
      texts.some((t) =>
        t
          .toLowerCase()
          .split(/[^\p{L}\p{N}_]+/u)
          .includes(w),
      ),
    )
  )
    return false;
  const draft = q.get('draft');
  if (draft !== null && m.draft !== (draft === 'true')) return false;
  const requested = q.get('review_requested');
  if (requested !== null && !m.requested.includes(requested)) return false;
  return true;
}

const keyOf = (m: Model, sort: string): string | number =>
  sort === 'replies' ? m.reviews : sort === 'updated' ? m.updated_at : m.created_at;

/** The numbers the list should give: the matching pulls in (sort key, number) order. */
function expected(models: Model[], query: string): number[] {
  const q = new URLSearchParams(query);
  const sort = q.get('sort') ?? 'created';
  const sign = q.get('direction') === 'asc' ? 1 : -1;
  return models
    .filter((m) => passes(m, query))
    .sort((x, y) => {
      const [a, b] = [keyOf(x, sort), keyOf(y, sort)];
      return sign * (a < b ? -1 : a > b ? 1 : x.number - y.number);
    })
    .map((m) => m.number);
}

/** pulls.review_count and pull_terms as the writes must leave them, checked against their sources. */
async function assertIndexesKept(db: Kysely<DB>, repoUuid: string, what: string): Promise<void> {
  const pulls = await db
    .selectFrom('pulls')
    .select(['uuid', 'title', 'body', 'review_count'])
    .where('repo_uuid', '=', repoUuid)
    .execute();
  const reviews = await db
    .selectFrom('reviews')
    .select(['uuid', 'pull_uuid', 'status', 'body', 'removed_at'])
    .where(
      'pull_uuid',
      'in',
      pulls.map((p) => p.uuid),
    )
    .execute();
  for (const p of pulls) {
    const live = reviews.filter((r) => r.pull_uuid === p.uuid && r.removed_at === null).length;
    assert.equal(p.review_count, live, `${what}: review_count of ${p.title}`);
  }
  const want = [
    ...pulls.flatMap((p) => threadTerms(`${p.title}\n${p.body}`).map((term) => `${p.uuid} ${p.uuid} ${term}`)),
    ...reviews
      .filter((r) => r.removed_at === null && r.status !== 'pending')
      .flatMap((r) => threadTerms(r.body).map((term) => `${r.pull_uuid} ${r.uuid} ${term}`)),
  ].sort();
  const have = (await db.selectFrom('pull_terms').selectAll().where('repo_uuid', '=', repoUuid).execute())
    .map((r) => `${r.pull_uuid} ${r.source_uuid} ${r.term}`)
    .sort();
  assert.deepEqual(have, want, `${what}: pull_terms`);
}

// one atom per filter value; QUERIES are each atom alone and every pair of atoms of two parameters
const ATOMS = [
  'state=open',
  'state=closed',
  'status=merged',
  'status=closed',
  'labels=a',
  'labels=b,c',
  'labels=a,c',
  'assignee=alice',
  'assignee=none',
  'assignee=*',
  'milestone=1',
  'milestone=none',
  'milestone=*',
  'author=bob',
  'mentioned=carol',
  'mentioned=bob',
  'q=alpha',
  'q=alpha beta',
  'q=delta',
  'q=Gamma!',
  'q=nosuchword',
  'draft=true',
  'draft=false',
  'review_requested=carol',
  'review_requested=bob',
];
const keyOfAtom = (atom: string) => atom.split('=')[0]!;
const PAIRS = ATOMS.flatMap((a, i) =>
  ATOMS.slice(i + 1)
    .filter((b) => keyOfAtom(a) !== keyOfAtom(b))
    .map((b) => `${a}&${b}`),
);
const withState = (query: string) => (/(^|&)(state|status)=/.test(query) ? query : `state=all&${query}`);
const SINGLES = ATOMS.length + 1;
const QUERIES = [
  ...ATOMS,
  'state=all',
  ...PAIRS,
  'labels=a&assignee=*&milestone=*&q=alpha',
  'mentioned=carol&draft=false&labels=c',
].map(withState);
const ORDERS = ['created', 'updated', 'replies'].flatMap((sort) => ['desc', 'asc'].map((direction) => ({ sort, direction })));

for (const dialect of DIALECTS) {
  describe(`pull lists (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string };
    let bob: { token: string; uuid: string };
    let carol: { token: string; uuid: string };
    let repoUuid = '';
    let models: Model[] = [];
    const api = '/api/v1/teams/pl/repos/work';
    const ok = <R extends { status: number; text: string }>(res: R, status = 201): R => {
      assert.equal(res.status, status, res.text);
      return res;
    };

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'PL', slug: 'pl' } }));
      ok(await t.req('POST', '/api/v1/teams/pl/members', { token: alice.token, body: { username: 'bob', role: 'member' } }));
      ok(await t.req('POST', '/api/v1/teams/pl/members', { token: alice.token, body: { username: 'carol', role: 'reader' } }));
      repoUuid = ok(await t.req('POST', '/api/v1/teams/pl/repos', { token: alice.token, body: { name: 'Work', slug: 'work' } }))
        .body.uuid;
      for (const name of ['a', 'b', 'c'])
        ok(await t.req('POST', `${api}/labels`, { token: alice.token, body: { name, color: '0969da' } }));
      for (const title of ['v1', 'v2']) ok(await t.req('POST', `${api}/milestones`, { token: alice.token, body: { title } }));
      // pull n (1-16): author alice (even) or bob (odd); words alpha (even), beta (n % 3 = 0), gamma (n % 5 = 0);
      // @carol in the body of n % 4 = 0; labels a (odd), b (n % 3 != 0), c (n % 4 = 0); assignees alice (n % 3 = 0),
      // bob (n % 5 = 0); milestone 1 (n % 4 = 1), 2 (n % 4 = 2); drafts n % 3 = 1
      for (let n = 1; n <= 16; n++) {
        const author = n % 2 === 0 ? alice : bob;
        const words = [n % 2 === 0 && 'alpha', n % 3 === 0 && 'beta', n % 5 === 0 && 'gamma'].filter(Boolean).join(' ');
        ok(
          await t.req('POST', `${api}/pulls`, {
            token: author.token,
            body: {
              title: `Pull ${n} ${words}`,
              body: n % 4 === 0 ? 'ping @carol here' : 'some text',
              source_branch: `b${n}`,
              target_branch: 'main',
              draft: n % 3 === 1,
            },
          }),
        );
        const labels = [n % 2 === 1 && 'a', n % 3 !== 0 && 'b', n % 4 === 0 && 'c'].filter(Boolean);
        const assignees = [n % 3 === 0 && 'alice', n % 5 === 0 && 'bob'].filter(Boolean);
        const milestone = n % 4 === 1 ? 1 : n % 4 === 2 ? 2 : null;
        ok(await t.req('PUT', `${api}/pulls/${n}`, { token: alice.token, body: { labels, assignees, milestone } }), 200);
      }
      // reviews: carol comments "delta" on n % 5 = 1 and approves with "@bob" on n % 5 = 2; bob comments "epsilon" on 7, 14
      for (let n = 1; n <= 16; n++) {
        if (n % 5 === 1) {
          ok(
            await t.req('POST', `${api}/pulls/${n}/reviews`, {
              token: carol.token,
              body: { status: 'commented', body: 'looks fine, delta' },
            }),
          );
        }
        if (n % 5 === 2)
          ok(
            await t.req('POST', `${api}/pulls/${n}/reviews`, {
              token: carol.token,
              body: { status: 'approved', body: 'ok @bob' },
            }),
          );
        if (n % 7 === 0)
          ok(
            await t.req('POST', `${api}/pulls/${n}/reviews`, {
              token: bob.token,
              body: { status: 'commented', body: 'epsilon' },
            }),
          );
      }
      // carol's review of 6 removed: no longer counted, its words gone
      const of6 = ok(await t.req('GET', `${api}/pulls/6/reviews`, { token: carol.token }), 200).body.results[0];
      ok(await t.req('DELETE', `${api}/pulls/6/reviews/${of6.uuid}`, { token: carol.token }), 204);
      // review requests after the reviews (a review ends its reviewer's request): carol on n % 4 = 3, bob on n % 6 = 0
      for (let n = 1; n <= 16; n++) {
        const usernames = [n % 4 === 3 && 'carol', n % 6 === 0 && 'bob'].filter(Boolean);
        if (usernames.length)
          ok(await t.req('POST', `${api}/pulls/${n}/requested-reviewers`, { token: alice.token, body: { usernames } }), 200);
      }
      // closed by their authors: n % 4 = 3; merged (set in the table: no git here): 8 and 13
      for (const n of [3, 7, 11, 15])
        ok(await t.req('PUT', `${api}/pulls/${n}`, { token: bob.token, body: { status: 'closed' } }), 200);
      const db = t.deps.db;
      await db
        .updateTable('pulls')
        .set({ status: 'merged', merged_at: '2026-02-01T00:00:00.000Z' })
        .where('repo_uuid', '=', repoUuid)
        .where('number', 'in', [8, 13])
        .execute();
      // ties in the time keys (as pulls brought in from elsewhere with the same timestamps)
      const tie = (column: 'created_at' | 'updated_at', numbers: number[], at: string) =>
        db
          .updateTable('pulls')
          .set({ [column]: at })
          .where('repo_uuid', '=', repoUuid)
          .where('number', 'in', numbers)
          .execute();
      await tie('created_at', [4, 5, 6, 7], '2026-01-01T00:00:00.000Z');
      await tie('updated_at', [3, 8, 9, 10], '2026-01-02T00:00:00.000Z');
      await tie('updated_at', [1, 12, 16], '2026-01-03T00:00:00.000Z');
      models = await readModel(db, repoUuid);
      assert.equal(models.length, 16);
    });
    after(async () => {
      setDrivingSetMax();
      await t?.close();
    });

    const numbers = async (query: string) => {
      const res = await t.req('GET', `${api}/pulls?${query}&per_page=100`, { token: carol.token });
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      return res.body.results.map((r: { number: number }) => r.number) as number[];
    };

    it('the data covers each filter: every atom matches some pulls and misses others (two match none)', async () => {
      await assertIndexesKept(t.deps.db, repoUuid, 'after the set-up');
      for (const atom of ATOMS) {
        const hits = models.filter((m) => passes(m, withState(atom))).length;
        if (atom === 'q=nosuchword' || atom === 'labels=a,c') assert.equal(hits, 0, atom);
        else assert.ok(hits > 0 && hits < 16, `${atom}: ${hits} of 16`);
      }
      assert.ok(new Set(models.map((m) => m.reviews)).size >= 3, 'review counts vary');
    });

    it('every filter and every pair of filters gives the brute-force rows in each sort and direction', async () => {
      // each filter alone in all six orders; each pair in the default order and one other, in turn
      for (const [i, query] of QUERIES.entries()) {
        const orders = i < SINGLES ? ORDERS : [ORDERS[0]!, ORDERS[1 + (i % 5)]!];
        for (const { sort, direction } of orders) {
          const q = `${query}&sort=${sort}&direction=${direction}`;
          assert.deepEqual(await numbers(q), expected(models, q), q);
        }
      }
    });

    it('the same rows on every path of the list: sort index walked (threshold 0), intersections (threshold 3)', async () => {
      try {
        for (const max of [0, 3]) {
          setDrivingSetMax(max);
          for (const [i, query] of QUERIES.entries()) {
            const { sort, direction } = ORDERS[i % 6]!;
            const q = `${query}&sort=${sort}&direction=${direction}`;
            assert.deepEqual(await numbers(q), expected(models, q), `${q} (threshold ${max})`);
          }
        }
      } finally {
        setDrivingSetMax();
      }
    });

    it('following `next` two at a time gives exactly the whole list, with ties, in each sort and direction, on each path', async () => {
      const follow = async (query: string) => {
        const seen: number[] = [];
        let url: string | null = `${api}/pulls?${query}&per_page=2`;
        for (let i = 0; url && i < 20; i++) {
          const res = await t.req('GET', url, { token: carol.token });
          assert.equal(res.status, 200, res.text);
          seen.push(...res.body.results.map((r: { number: number }) => r.number));
          if (res.body.next) assert.match(res.body.next, /[?&]after=/);
          url = res.body.next ?? null;
        }
        return seen;
      };
      try {
        for (const max of [0, 3, undefined]) {
          setDrivingSetMax(max);
          for (const query of [
            'state=all',
            'state=closed',
            'state=all&labels=b',
            'state=all&labels=a,b',
            'state=all&q=alpha&draft=false',
          ]) {
            for (const { sort, direction } of ORDERS) {
              const q = `${query}&sort=${sort}&direction=${direction}`;
              assert.deepEqual(await follow(q), expected(models, q), `${q} by pages (threshold ${max ?? 'default'})`);
            }
          }
        }
      } finally {
        setDrivingSetMax();
      }
      // `after` alone is a filtered list (state open by default)
      const first = await t.req('GET', `${api}/pulls?per_page=2&sort=replies`, { token: carol.token });
      const next = new URL(first.body.next, 'http://x').searchParams.get('after')!;
      assert.deepEqual(await numbers(`after=${next}&sort=replies`), expected(models, 'sort=replies').slice(2));
    });

    it('a cursor that is not one of the list is 400 and changes nothing', async () => {
      const bad = [
        'nonsense',
        Buffer.from('[1]').toString('base64url'),
        // a time cursor given to sort=replies (and a count to sort=created)
        `${Buffer.from(JSON.stringify(['2026-01-01T00:00:00.000Z', 3])).toString('base64url')}&sort=replies`,
        Buffer.from(JSON.stringify([2, 3])).toString('base64url'),
        // values the columns cannot hold: a fraction, a number past PostgreSQL's integer, a NUL
        `${Buffer.from(JSON.stringify([1.5, 3])).toString('base64url')}&sort=replies`,
        `${Buffer.from(JSON.stringify([1, 2 ** 40])).toString('base64url')}&sort=replies`,
        Buffer.from(JSON.stringify(['2026\u0000', 3])).toString('base64url'),
      ];
      for (const after of bad) {
        const res = await assertRefused(t, 400, 'invalid_request', 'GET', `${api}/pulls?state=all&after=${after}`, {
          token: carol.token,
        });
        assert.match(res.text, /after: not a cursor of this list/);
      }
    });

    it('review_count and pull_terms follow pull edits and every review write; the backfill rebuilds them', async () => {
      const db = t.deps.db;
      const hits = async (query: string) => numbers(`state=all&${query}`);
      await seedCommit(t, repoUuid, 'main');
      await seedCommit(t, repoUuid, 'kept', { onto: 'main', path: 'kept.txt', content: 'one\ntwo\n' });
      const pull = ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Kept words', body: 'first body', source_branch: 'kept', target_branch: 'main' },
        }),
      ).body;
      const n = pull.number;
      const count = async () =>
        (await db.selectFrom('pulls').select('review_count').where('uuid', '=', pull.uuid).executeTakeFirstOrThrow())
          .review_count;
      assert.deepEqual(await hits('q=kept'), [n]);
      await assertIndexesKept(db, repoUuid, 'created');

      // a pending review counts (as the correlated count did) but its words wait for the submission
      const pending = ok(
        await t.req('POST', `${api}/pulls/${n}/reviews`, {
          token: carol.token,
          body: { body: 'pendingword', comments: [{ path: 'kept.txt', line: 1, body: 'hm' }] },
        }),
      ).body;
      assert.equal(pending.status, 'pending');
      assert.equal(await count(), 1);
      assert.deepEqual(await hits('q=pendingword'), []);
      await assertIndexesKept(db, repoUuid, 'pending');
      ok(
        await t.req('POST', `${api}/pulls/${n}/reviews/${pending.uuid}/submit`, {
          token: carol.token,
          body: { status: 'commented', body: 'submitted zeta @bob' },
        }),
        200,
      );
      assert.equal(await count(), 1);
      assert.deepEqual(await hits('q=zeta'), [n]);
      assert.ok((await hits('mentioned=bob')).includes(n));
      assert.deepEqual(await hits('q=pendingword'), []);
      await assertIndexesKept(db, repoUuid, 'submitted');

      // a second pending review, removed: it never counted in the words, and its count goes
      const other = ok(
        await t.req('POST', `${api}/pulls/${n}/reviews`, {
          token: bob.token,
          body: { comments: [{ path: 'kept.txt', line: 2, body: 'x' }] },
        }),
      ).body;
      assert.equal(await count(), 2);
      ok(await t.req('DELETE', `${api}/pulls/${n}/reviews/${other.uuid}`, { token: bob.token }), 204);
      assert.equal(await count(), 1);
      await assertIndexesKept(db, repoUuid, 'pending removed');

      // a submitted review removed: its words and its count go; removing it again changes nothing
      ok(await t.req('DELETE', `${api}/pulls/${n}/reviews/${pending.uuid}`, { token: carol.token }), 204);
      ok(await t.req('DELETE', `${api}/pulls/${n}/reviews/${pending.uuid}`, { token: carol.token }), 204);
      assert.equal(await count(), 0);
      assert.deepEqual(await hits('q=zeta'), []);
      await assertIndexesKept(db, repoUuid, 'submitted removed');

      // the pull's title and body edited: the old words go, the new ones come
      ok(
        await t.req('PUT', `${api}/pulls/${n}`, { token: alice.token, body: { title: 'Renamed omega', body: 'now @carol' } }),
        200,
      );
      assert.deepEqual(await hits('q=kept'), []);
      assert.deepEqual(await hits('q=omega'), [n]);
      assert.ok((await hits('mentioned=carol')).includes(n));
      await assertIndexesKept(db, repoUuid, 'pull edited');

      // a review submitted at once
      ok(await t.req('POST', `${api}/pulls/${n}/reviews`, { token: bob.token, body: { status: 'approved', body: 'theta' } }));
      assert.equal(await count(), 1);
      assert.deepEqual(await hits('q=theta'), [n]);
      await assertIndexesKept(db, repoUuid, 'review created');

      // migration 740's backfill rebuilds both from the sources
      await db.deleteFrom('pull_terms').execute();
      await db.updateTable('pulls').set({ review_count: 7 }).execute();
      await backfill(db as unknown as Kysely<unknown>);
      await assertIndexesKept(db, repoUuid, 'backfilled');
      assert.deepEqual(await hits('q=theta'), [n]);
    });

    it("deleting a repo deletes its pulls' terms", async () => {
      ok(await t.req('POST', '/api/v1/teams/pl/repos', { token: alice.token, body: { name: 'Gone', slug: 'gone' } }));
      const gone = ok(await t.req('GET', '/api/v1/teams/pl/repos/gone', { token: alice.token }), 200).body.uuid;
      ok(
        await t.req('POST', '/api/v1/teams/pl/repos/gone/pulls', {
          token: alice.token,
          body: { title: 'Doomed words', body: '', source_branch: 'x', target_branch: 'main' },
        }),
      );
      const terms = () => t.deps.db.selectFrom('pull_terms').select('term').where('repo_uuid', '=', gone).execute();
      assert.ok((await terms()).length > 0);
      ok(await t.req('DELETE', '/api/v1/teams/pl/repos/gone'), 204);
      assert.deepEqual(await terms(), []);
    });
  });
}
