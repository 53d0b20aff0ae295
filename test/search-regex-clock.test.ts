import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RegexClock } from '../src/search/pattern.ts';

// The regex time limit counts matching only (docs/search.md "query_too_broad"): the reads between
// two files' matches, slow under load, are not the regex's time.
describe('search: the regex clock', () => {
  it('does not count the time between matches', async () => {
    const clock = new RegexClock(1000);
    assert.equal(
      clock.run(() => void /needle/.exec('a haystack with a needle')),
      true,
    );
    await new Promise((r) => setTimeout(r, 1500)); // a slow database read, longer than the whole budget
    assert.equal(
      clock.run(() => void /needle/.exec('another haystack')),
      true,
    );
  });

  it('stops a runaway match and stays spent', () => {
    const clock = new RegexClock(50);
    // a match that never ends (a loop, not a backtracking regex: V8 may finish one of those early)
    assert.equal(
      clock.run(() => {
        for (;;);
      }),
      false,
    );
    assert.equal(
      clock.run(() => void /x/.exec('x')),
      false,
    );
  });

  it('sums the time of many matches', () => {
    const clock = new RegexClock(30);
    let ran = true;
    for (let i = 0; i < 10_000 && ran; i++) {
      const t0 = performance.now();
      ran = clock.run(() => {
        while (performance.now() - t0 < 5);
      });
    }
    assert.equal(ran, false);
  });
});
