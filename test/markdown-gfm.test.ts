import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMarkdownRenderer, extractMentions, toggleTask } from '../src/markdown/render.ts';

/** README "Markdown": what people write on GitHub, rendered and sanitised (docs/web.md "Markdown"). */
describe('Markdown as people write it on GitHub', () => {
  const md = createMarkdownRenderer();

  it('task lists: numbered, disabled checkboxes (a page enables them), ticked as written', () => {
    const html = md.render('- [ ] first\n- [x] second\n- plain\n\n1. [X] numbered');
    assert.match(
      html,
      /<li class="task-list-item"><input type="checkbox" class="task-list-item-checkbox" data-task="0" disabled \/> first<\/li>/,
    );
    assert.match(html, /data-task="1" disabled checked \/> second/);
    assert.match(html, /<li>plain<\/li>/);
    assert.match(html, /data-task="2" disabled checked \/> numbered/);
    // in code a marker is text
    assert.doesNotMatch(md.render('`- [ ] no`\n\n```\n- [ ] no\n```'), /checkbox/);
  });

  it('toggleTask changes only the marker of the task at that index (document order, nested and quoted too)', () => {
    const text = '- [ ] a\n- [x] b\n  - [ ] nested\n\n> 1. [ ] quoted\n\n```\n- [ ] code\n```\n';
    assert.equal(toggleTask(text, 0, true), text.replace('- [ ] a', '- [x] a'));
    assert.equal(toggleTask(text, 1, false), text.replace('- [x] b', '- [ ] b'));
    assert.equal(toggleTask(text, 2, true), text.replace('- [ ] nested', '- [x] nested'));
    assert.equal(toggleTask(text, 3, true), text.replace('1. [ ] quoted', '1. [x] quoted'));
    assert.equal(toggleTask(text, 4, true), null, 'the code block holds no task');
    assert.equal(toggleTask(text, 0, false), text, 'already as asked: unchanged');
  });

  it('footnotes with ids unique to the text; tables; autolinks; emoji shortcodes', () => {
    const html = md.render(
      'A claim[^1].\n\n[^1]: The source.\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\nSee https://example.com :tada:',
    );
    const id = /id="fnref-([0-9a-f]{8})-1"/.exec(html)?.[1];
    assert.ok(id, html);
    assert.match(html, new RegExp(`<li id="fn-${id}-1" class="footnote-item">`));
    assert.match(html, new RegExp(`href="#fnref-${id}-1" class="footnote-backref"`));
    assert.notEqual(/fnref-([0-9a-f]{8})/.exec(md.render('Other[^1].\n\n[^1]: x'))?.[1], id);
    assert.match(html, /<th style="text-align:right">b<\/th>/);
    assert.match(html, /<a href="https:\/\/example.com" rel="nofollow noopener">https:\/\/example.com<\/a>/);
    assert.match(html, /🎉/);
  });

  it('headings have anchors, unique within the text', () => {
    const html = md.render('# Getting started\n\n## Getting started\n\n### Ünïcode & more!');
    assert.match(html, /<h1 id="user-content-getting-started"><a class="anchor" href="#user-content-getting-started"/);
    assert.match(html, /<h2 id="user-content-getting-started-1">/);
    assert.match(html, /<h3 id="user-content-ünïcode-more">/);
  });

  it('inline HTML of the safe subset stays; scripts, handlers, foreign ids, forms and javascript: go', () => {
    const html = md.render(
      '<details><summary>More</summary>\n\n<kbd>Ctrl</kbd> <sub>2</sub> <mark>m</mark>\n\n</details>\n\n' +
        '<script>alert(1)</script><img src="x" onerror="alert(1)"> <a href="javascript:alert(1)" id="main">j</a> ' +
        '<div id="header" onclick="x">d</div> <form action="/x"><input type="text" name="q"></form> <iframe src="https://e.com"></iframe> <style>body{}</style>',
    );
    assert.match(html, /<details><summary>More<\/summary>/);
    assert.match(html, /<kbd>Ctrl<\/kbd> <sub>2<\/sub> <mark>m<\/mark>/);
    for (const bad of [
      /<script/,
      /onerror/,
      /javascript:/,
      /id="main"/,
      /id="header"/,
      /onclick/,
      /<form/,
      /<input type="text"/,
      /<iframe/,
      /<style/,
    ]) {
      assert.doesNotMatch(html, bad);
    }
  });

  it('extractMentions: lower-cased, first-seen order, none inside code or an address, each call its own', () => {
    assert.deepEqual(extractMentions('hi @Alice and @bob, again @alice; `@carol` mail dave@example.com'), ['alice', 'bob']);
    assert.deepEqual(extractMentions('```\n@erin\n```\n@frank'), ['frank']);
    assert.deepEqual(extractMentions('no mention here'), []);
    assert.deepEqual(extractMentions('@gina'), ['gina']);
  });

  it('mermaid is left as code', () => {
    assert.match(md.render('```mermaid\ngraph TD; A-->B\n```'), /<pre><code class="language-mermaid">graph TD; A--&gt;B/);
  });
});
