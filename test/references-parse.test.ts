import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closingReferences, findReferences } from '../src/references/parse.ts';

/** The reference parser's own tests (README "Issue tracker"): no database. */
describe('reference parser', () => {
  const refs = (text: string) =>
    findReferences(text).map((r) => `${r.owner ? `${r.owner}/${r.slug}` : ''}${r.kind === 'thread' ? '#' : '!'}${r.number}`);
  const closes = (text: string) => closingReferences(text).map((r) => `${r.owner ? `${r.owner}/${r.slug}` : ''}#${r.number}`);

  it('finds #N, !N and owner/slug#N, owner/slug!N, once each, in order', () => {
    assert.deepEqual(refs('See #12 and !3, also core/api#7 and Core/API!8; again #12.'), [
      '#12',
      '!3',
      'core/api#7',
      'core/api!8',
    ]);
    assert.deepEqual(refs('(#1) [#2] #3, #4. end #5'), ['#1', '#2', '#3', '#4', '#5']);
  });

  it('code spans and fences are not references', () => {
    assert.deepEqual(refs('inline `#1` and ``a #2 b`` but #3'), ['#3']);
    assert.deepEqual(refs('```\nfixes #4\n```\n~~~js\n#5\n~~~\n#6'), ['#6']);
    assert.deepEqual(refs('para\n\n    code #7\n\ntext #8'), ['#8']);
    assert.deepEqual(refs('```\nunclosed #9'), []);
  });

  it('#N inside a URL, a link target or an autolink is not a reference; the link text is', () => {
    assert.deepEqual(refs('https://example.com/page#12 and http://x.test/a/b#3?x'), []);
    assert.deepEqual(refs('[see #4](https://example.com/#5) <https://example.com/#6>'), ['#4']);
    assert.deepEqual(refs('www.example.com/#7'), []);
  });

  it('word characters, entities and paths around the sign are not references', () => {
    assert.deepEqual(refs('abc#1 a/b/c#2 &#123; issue#4 #0 #x ##5'), []);
    assert.deepEqual(refs('#12abc'), []);
  });

  it('closing keywords, any case, each naming one thread reference: fixes #1, fixes #2 closes both', () => {
    assert.deepEqual(closes('fixes #1, fixes #2'), ['#1', '#2']);
    assert.deepEqual(closes('Closes #3. RESOLVED: #4; fix core/api#5'), ['#3', '#4', 'core/api#5']);
    for (const kw of ['close', 'closes', 'closed', 'fix', 'fixes', 'fixed', 'resolve', 'resolves', 'resolved']) {
      assert.deepEqual(closes(`${kw} #9`), ['#9'], kw);
    }
    assert.deepEqual(closes('fixes #1, #2'), ['#1']);
    assert.deepEqual(closes('prefixes #1, unfixed #2, fixes !3, fixes `#4`'), []);
    assert.deepEqual(closes('mentions #1 then fixes #1'), ['#1']);
    assert.deepEqual(refs('fixes #1'), ['#1']);
  });
});

describe('referenceMatches (linear) finds what referencePattern finds', () => {
  it('on references, near-misses and random text', async () => {
    const { referenceMatches, referencePattern } = await import('../src/markdown/references.ts');
    const alphabet = ['a', 'b', '1', '2', '#', '!', '/', '-', '_', ' ', '.', '&', 'x/y', 'core/proj', '\n'];
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const texts = ['#1', 'see #12 and !3', 'core/proj#4', 'a/b!5 x/y#6#7', '&#39;', 'foo#1', 'x #12345678901', '/a/b#1'];
    for (let i = 0; i < 3000; i++)
      texts.push(Array.from({ length: 1 + rand(30) }, () => alphabet[rand(alphabet.length)]).join(''));
    for (const text of texts) {
      const want = [...text.matchAll(referencePattern())].map((m) => [m.index, ...m.slice(0, 5)]);
      const got = referenceMatches(text).map((m) => [m.index, ...m.slice(0, 5)]);
      assert.deepEqual(got, want, JSON.stringify(text));
    }
  });
});
