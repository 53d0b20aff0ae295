import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { rowBuilder, withRowBuilder } from '../src/db/row-builder.ts';

/** Rows built from arrays (src/db/row-builder.ts) equal the rows better-sqlite3 builds itself. */
describe('SQLite rows built from arrays', () => {
  const db = new SQLite(':memory:');
  db.exec(`create table t (id integer primary key, name text, note text, size real, data blob);
    insert into t (name, note, size, data) values ('a', null, 1.5, x'00ff'), ('b', 'it''s "quoted"', -2, null);`);
  const queries = [
    'select * from t order by id',
    // a repeated name: the later column wins, as in better-sqlite3's own objects
    'select id, name, note as name, size from t order by id',
    // names that need quoting in a literal
    `select id as "a-b", name as "x""y", note as "1", size as "constructor" from t order by id`,
    'select count(*) from t',
  ];

  for (const text of queries) {
    it(`all, get and iterate agree: ${text}`, () => {
      const plain = db.prepare(text);
      const built = withRowBuilder(db.prepare(text));
      assert.deepEqual(built.all(), plain.all());
      assert.deepEqual(built.get(), plain.get());
      assert.deepEqual([...built.iterate()], [...plain.iterate()]);
      for (const row of built.all() as object[]) assert.equal(Object.getPrototypeOf(row), Object.prototype);
    });
  }

  it('binds parameters as the statement does (an array or a list)', () => {
    const built = withRowBuilder(db.prepare('select name from t where id = ? or name = ?'));
    assert.deepEqual(built.all([1, 'b']), [{ name: 'a' }, { name: 'b' }]);
    assert.deepEqual(built.all(2, 'x'), [{ name: 'b' }]);
  });

  it('leaves writers and a __proto__ column to better-sqlite3', () => {
    const writer = db.prepare(`insert into t (name) values ('c')`);
    assert.equal(withRowBuilder(writer), writer);
    assert.equal(rowBuilder(['id', '__proto__']), null);
    const odd = db.prepare('select id as "__proto__" from t where id = 1');
    const built = withRowBuilder(odd);
    assert.equal(built, odd);
    assert.deepEqual(built.all(), odd.all());
  });

  it('reports busy while a row iteration is open', () => {
    const built = withRowBuilder(db.prepare('select id from t order by id'));
    const rows = built.iterate();
    assert.deepEqual(rows.next().value, { id: 1 });
    assert.equal(built.busy, true);
    rows.return?.(undefined);
    assert.equal(built.busy, false);
  });
});
