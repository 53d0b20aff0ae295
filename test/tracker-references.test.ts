import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventResults } from './common.ts';
import { commitFiles, type GitClient, gitClient } from './git-fixtures.ts';
import { buildWorld, openPull, type World } from './pulls-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/** References and closing keywords (README "Issue tracker"), through HTTP and git. */
for (const dialect of DIALECTS) {
  describe(`tracker: references and closing keywords (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    let g: GitClient;
    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      w = await buildWorld(t);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });
    const pub = () => w.teamPublic.base;
    const thread = async (base: string, token: string, title: string, body = '') => {
      const res = await t.req('POST', `${base}/threads`, { token, body: { title, body } });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };
    const timeline = async (base: string, n: number, token: string, kind = 'threads') => {
      const res = await t.req('GET', `${base}/${kind}/${n}/timeline?per_page=100`, { token });
      assert.equal(res.status, 200, res.text);
      return res.body.results as Array<{ kind: string; source?: Record<string, unknown> }>;
    };

    it('a thread, a reply and a pull referencing a thread make one referenced entry each, once per source', async () => {
      const target = await thread(pub(), w.member.token, 'Target');
      const src = await thread(pub(), w.member.token, 'Source', `See #${target.number} and \`#${target.number}\``);
      // edited again with the same reference: no second entry
      await t.req('PATCH', `${pub()}/threads/${src.number}`, {
        token: w.member.token,
        body: { body: `Still #${target.number}` },
      });
      await t.req('POST', `${pub()}/threads/${src.number}/replies`, {
        token: w.member.token,
        body: { body: `reply on #${target.number}` },
      });
      const pull = await t.req('POST', `${pub()}/pulls`, {
        token: w.member.token,
        body: { title: `Work on #${target.number}`, body: '', source_branch: 'refs-a', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);
      const entries = (await timeline(pub(), target.number, w.outsider.token)).filter((e) => e.kind === 'referenced');
      assert.deepEqual(
        entries.map((e) => [e.source!.kind, e.source!.number, e.source!.title]),
        [
          ['thread', src.number, 'Source'],
          ['reply', src.number, 'Source'],
          ['pull', pull.body.number, `Work on #${target.number}`],
        ],
      );
      assert.equal(entries[0]!.source!.repo, `${w.team.slug}/r-public`);
      // !N names a pull
      const other = await thread(pub(), w.member.token, 'Points at a pull', `see !${pull.body.number}`);
      const pullEntries = (await timeline(pub(), pull.body.number, w.outsider.token, 'pulls')).filter(
        (e) => e.kind === 'referenced',
      );
      assert.deepEqual(
        pullEntries.map((e) => e.source!.number),
        [other.number],
      );
      // a self reference is none
      const self = await thread(pub(), w.member.token, 'Self', 'this is #0');
      await t.req('PATCH', `${pub()}/threads/${self.number}`, { token: w.member.token, body: { body: `me: #${self.number}` } });
      assert.deepEqual(await timeline(pub(), self.number, w.member.token), []);
    });

    it('privacy: a reference from a private repo is hidden from readers of the target who cannot read the source', async () => {
      const target = await thread(pub(), w.member.token, 'Public target');
      const secret = await thread(
        w.teamPrivate.base,
        w.member.token,
        'Secret plan',
        `about ${w.team.slug}/r-public#${target.number}`,
      );
      const byOutsider = await timeline(pub(), target.number, w.outsider.token);
      assert.deepEqual(byOutsider, []);
      const byMember = await timeline(pub(), target.number, w.member.token);
      assert.deepEqual(
        byMember.map((e) => [e.kind, e.source?.title, e.source?.repo]),
        [['referenced', 'Secret plan', `${w.team.slug}/r-private`]],
      );
      const events = await eventResults(t, `thread:${target.uuid}`, w.outsider.token);
      assert.ok(!JSON.stringify(events).includes('Secret'), JSON.stringify(events));
      assert.ok(!events.some((e) => e.kind === 'thread-referenced'));
      const memberEvents = await eventResults(t, `thread:${target.uuid}`, w.member.token);
      assert.ok(memberEvents.some((e) => e.kind === 'thread-referenced'));
      void secret;
    });

    it('rendered Markdown links references the reader can read, titled; an unreadable or missing one stays text', async () => {
      const secret = await thread(w.teamPrivate.base, w.member.token, 'Hidden roadmap');
      const shown = await thread(pub(), w.member.token, 'Shown target');
      const pull = await openPull(t, pub(), { token: w.member.token, title: 'Visible pull' });
      const slug = w.team.slug;
      const text = `See #${shown.number}, !${pull.number}, ${slug}/r-private#${secret.number}, #99999 and \`#${shown.number}\`.`;
      const src = await thread(pub(), w.member.token, 'Links', text);
      const asMember = (await t.req('GET', `${pub()}/threads/${src.number}`, { token: w.member.token })).body.body_html as string;
      const page = `/teams/${slug}`;
      assert.match(
        asMember,
        new RegExp(`<a href="${page}/r-public/threads/${shown.number}" class="ref" title="Shown target">#${shown.number}</a>`),
      );
      assert.match(
        asMember,
        new RegExp(`<a href="${page}/r-public/pulls/${pull.number}" class="ref" title="Visible pull">!${pull.number}</a>`),
      );
      assert.match(
        asMember,
        new RegExp(`<a href="${page}/r-private/threads/${secret.number}" class="ref" title="Hidden roadmap">`),
      );
      assert.match(asMember, /#99999 and <code>/);
      const asOutsider = (await t.req('GET', `${pub()}/threads/${src.number}`, { token: w.outsider.token })).body
        .body_html as string;
      assert.ok(!asOutsider.includes('Hidden roadmap'), asOutsider);
      assert.ok(!asOutsider.includes('r-private/threads'), asOutsider);
      assert.match(asOutsider, new RegExp(`${slug}/r-private#${secret.number}`));
      assert.match(asOutsider, /title="Shown target"/);
      const listed = await t.req('GET', `${pub()}/threads?state=all&q=Links`, { token: w.outsider.token });
      assert.ok(!JSON.stringify(listed.body).includes('Hidden roadmap'));
      assert.match(listed.body.results[0].body_html, /title="Shown target"/);
    });

    it('a pull merged into the default branch closes the threads its keywords name; fixes #1, fixes #2 closes both', async () => {
      const a = await thread(pub(), w.outsider.token, 'Bug A');
      const b = await thread(pub(), w.outsider.token, 'Bug B');
      const c = await thread(pub(), w.outsider.token, 'Bug C, only mentioned');
      const pull = await openPull(t, pub(), { token: w.member.token, title: 'Repair' });
      await t.req('PUT', `${pub()}/pulls/${pull.number}`, {
        token: w.member.token,
        body: { body: `fixes #${a.number}, Fixes #${b.number}; see #${c.number}` },
      });
      const merged = await t.req('POST', `${pub()}/pulls/${pull.number}/merge`, { token: w.maintainer.token, body: {} });
      assert.equal(merged.status, 200, merged.text);
      for (const th of [a, b]) {
        const got = await t.req('GET', `${pub()}/threads/${th.number}`, { token: w.outsider.token });
        assert.equal(got.body.state, 'closed');
        assert.equal(got.body.state_reason, 'completed');
        assert.deepEqual(got.body.closed_by, { username: w.maintainer.username, pull_number: pull.number, commit_sha: null });
        const kinds = (await timeline(pub(), th.number, w.outsider.token)).map((e) => e.kind);
        assert.deepEqual(kinds, ['referenced', 'closed']);
      }
      assert.equal((await t.req('GET', `${pub()}/threads/${c.number}`, { token: w.outsider.token })).body.state, 'open');
    });

    it('a pull merged into another branch closes nothing', async () => {
      const a = await thread(pub(), w.outsider.token, 'Not yet');
      const { seedCommit } = await import('./git-fixtures.ts');
      await seedCommit(t, w.teamPublic.uuid, 'release', { onto: 'main' });
      const pull = await openPull(t, pub(), { token: w.member.token, title: `fixes #${a.number}`, target: 'release' });
      const merged = await t.req('POST', `${pub()}/pulls/${pull.number}/merge`, { token: w.maintainer.token, body: {} });
      assert.equal(merged.status, 200, merged.text);
      assert.equal((await t.req('GET', `${pub()}/threads/${a.number}`, { token: w.outsider.token })).body.state, 'open');
    });

    it('a commit pushed to the default branch closes what it names and references it once, also when pushed again', async () => {
      const a = await thread(pub(), w.outsider.token, 'Pushed fix');
      const repo = await t.req('GET', pub(), { token: w.member.token });
      const url = g.url(new URL(repo.body.clone_url).pathname, w.member.token);
      const work = g.tmp(`push-${dialect}`);
      await g.run(['clone', '-q', url, work]);
      await commitFiles(g, work, [{ 'fix.txt': 'fixed\n' }], `Resolves #${a.number}`);
      const sha = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      await g.run(['-C', work, 'push', '-q', 'origin', 'HEAD:refs/heads/topic']);
      assert.equal((await t.req('GET', `${pub()}/threads/${a.number}`, { token: w.outsider.token })).body.state, 'open');
      await g.run(['-C', work, 'push', '-q', 'origin', 'HEAD:refs/heads/main']);
      const got = await t.req('GET', `${pub()}/threads/${a.number}`, { token: w.outsider.token });
      assert.equal(got.body.state, 'closed');
      assert.deepEqual(got.body.closed_by, { username: w.member.username, pull_number: null, commit_sha: sha });
      const entries = await timeline(pub(), a.number, w.outsider.token);
      assert.deepEqual(
        entries.map((e) => e.kind),
        ['referenced', 'closed'],
      );
      assert.equal(entries[0]!.source!.sha, sha);
      assert.equal(entries[0]!.source!.kind, 'commit');
    });
  });
}
