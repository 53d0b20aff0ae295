import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';

/**
 * docs/ci.md "Secrets and variables" of a team: the API (the team's maintain level for secrets and
 * writes, any member reads variables), values sealed and never answered, and a real `weft runner`
 * running a job of a team repo: team values reach it, a repo's own value of the same name wins,
 * and the team secret is masked in the log.
 */
const WORKFLOW = `name: Team
on: push
jobs:
  show:
    runs-on: [linux]
    steps:
      - env:
          T: \${{ secrets.TEAM_SECRET }}
          S: \${{ secrets.SHARED }}
        run: |
          echo "team secret is $T"
          printf '%s' "$T" | base64
          echo "reversed shared $(printf '%s' "$S" | rev)"
          echo "reversed team $(printf '%s' "$T" | rev)"
          echo "vars \${{ vars.TEAM_VAR }} \${{ vars.SHARED_VAR }}"
`;

const BIN = join(import.meta.dirname, '..', 'bin', 'weft.mjs');
const weft = (args: string[], cwd: string): ChildProcess =>
  spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
const exited = (p: ChildProcess) => new Promise<number>((r) => p.on('exit', (code) => r(code ?? -1)));

for (const dialect of DIALECTS) {
  describe(`CI secrets and variables of a team (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person; // owner
    let bob: Person; // maintainer
    let carol: Person; // member
    let dave: Person; // not in the team
    let dir: string;
    let runner: ChildProcess | null = null;
    const team = '/api/v1/teams/acme';

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      assert.equal(
        (await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Acme', slug: 'acme' } })).status,
        201,
      );
      for (const [p, role] of [
        [bob, 'maintainer'],
        [carol, 'member'],
      ] as const) {
        const added = await t.req('POST', `${team}/members`, { token: alice.token, body: { username: p.username, role } });
        assert.equal(added.status, 201, added.text);
      }
      dir = mkdtempSync(join(tmpdir(), 'weft-team-secrets-'));
    });
    after(async () => {
      runner?.kill('SIGTERM');
      if (runner) await exited(runner);
      g.cleanup();
      rmSync(dir, { recursive: true, force: true });
      await t.close();
    });

    it('secrets: the team maintain level writes and lists names; the value is sealed and never answered', async () => {
      const put = await t.req('PUT', `${team}/secrets/TEAM_SECRET`, { token: alice.token, body: { value: 'team-hunter2' } });
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(Object.keys(put.body).sort(), ['created_at', 'name', 'updated_at']);
      const byMaintainer = await t.req('PUT', `${team}/secrets/SHARED`, { token: bob.token, body: { value: 'team-loses' } });
      assert.equal(byMaintainer.status, 200, byMaintainer.text);
      const list = await t.req('GET', `${team}/secrets`, { token: bob.token });
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.results.map((s: any) => s.name),
        ['SHARED', 'TEAM_SECRET'],
      );
      assert.ok(list.body.results.every((s: any) => !('value' in s)));
      const one = await t.req('GET', `${team}/secrets/TEAM_SECRET`, { token: alice.token });
      assert.equal(one.status, 200);
      assert.equal(one.body.name, 'TEAM_SECRET');
      assert.equal(one.body.value, undefined);
      const row = await t.deps.db
        .selectFrom('ci_secrets')
        .selectAll()
        .where('scope', '=', 'team')
        .where('name', '=', 'TEAM_SECRET')
        .executeTakeFirstOrThrow();
      assert.doesNotMatch(row.value, /hunter2/, 'sealed with the server secret');

      // a member below maintainer: 403; an outsider: 404 (the team is invisible)
      for (const [method, body] of [
        ['GET', undefined],
        ['PUT', { value: 'x' }],
        ['DELETE', undefined],
      ] as const) {
        const path = method === 'GET' ? `${team}/secrets` : `${team}/secrets/TEAM_SECRET`;
        const member = await t.req(method, path, { token: carol.token, body });
        assert.equal(member.status, 403, `${method} by a member: ${member.text}`);
        const outsider = await t.req(method, path, { token: dave.token, body });
        assert.equal(outsider.status, 404, `${method} by an outsider`);
      }
      // bad names and values: 400, nothing written
      for (const name of ['lower', 'WEFT_X', 'GITHUB_TOKEN', '1A']) {
        const bad = await t.req('PUT', `${team}/secrets/${name}`, { token: alice.token, body: { value: 'x' } });
        assert.equal(bad.status, 400, name);
        assert.ok(isErrorBody(bad.body));
      }
      const big = await t.req('PUT', `${team}/secrets/BIG`, { token: alice.token, body: { value: 'x'.repeat(48 * 1024 + 1) } });
      assert.equal(big.status, 400);
      assert.equal((await t.req('GET', `${team}/secrets/BIG`, { token: alice.token })).status, 404);
      assert.equal((await t.req('GET', '/api/v1/teams/nope/secrets', { token: alice.token })).status, 404);

      // delete
      assert.equal((await t.req('PUT', `${team}/secrets/GONE`, { token: alice.token, body: { value: 'g' } })).status, 200);
      assert.equal((await t.req('DELETE', `${team}/secrets/GONE`, { token: bob.token })).status, 204);
      assert.equal((await t.req('DELETE', `${team}/secrets/GONE`, { token: bob.token })).status, 404);
    });

    it('variables: any member reads them; the maintain level writes them', async () => {
      const put = await t.req('PUT', `${team}/variables/TEAM_VAR`, { token: bob.token, body: { value: 'team-var' } });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.value, 'team-var');
      assert.equal(
        (await t.req('PUT', `${team}/variables/SHARED_VAR`, { token: alice.token, body: { value: 'team-v' } })).status,
        200,
      );
      const read = await t.req('GET', `${team}/variables/TEAM_VAR`, { token: carol.token });
      assert.equal(read.status, 200);
      assert.equal(read.body.value, 'team-var');
      const list = await t.req('GET', `${team}/variables`, { token: carol.token });
      assert.deepEqual(
        list.body.results.map((v: any) => [v.name, v.value]),
        [
          ['SHARED_VAR', 'team-v'],
          ['TEAM_VAR', 'team-var'],
        ],
      );
      assert.equal((await t.req('PUT', `${team}/variables/X`, { token: carol.token, body: { value: 'x' } })).status, 403);
      assert.equal((await t.req('GET', `${team}/variables`, { token: dave.token })).status, 404);
    });

    it('an inactive team refuses writes (403 team_inactive)', async () => {
      assert.equal(
        (await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Sleepy', slug: 'sleepy' } })).status,
        201,
      );
      const off = await t.req('PUT', '/api/v1/teams/sleepy', { body: { name: 'Sleepy', slug: 'sleepy', is_active: false } });
      assert.equal(off.status, 200, off.text);
      for (const token of [alice.token, t.adminToken]) {
        const res = await t.req('PUT', '/api/v1/teams/sleepy/secrets/A', { token, body: { value: 'x' } });
        assert.equal(res.status, 403, res.text);
        assert.equal(res.body.error, 'team_inactive');
      }
      assert.equal((await t.req('GET', '/api/v1/teams/sleepy/secrets', { token: alice.token })).status, 200);
    });

    it('a job of a team repo gets the team values, the repo’s own winning, with the team secret masked', async () => {
      const created = await t.req('POST', `${team}/repos`, { token: alice.token, body: { name: 'app', slug: 'app' } });
      assert.equal(created.status, 201, created.text);
      const repo = `${team}/repos/app`;
      assert.equal(
        (await t.req('PUT', `${repo}/secrets/SHARED`, { token: alice.token, body: { value: 'repo-wins' } })).status,
        200,
      );
      assert.equal(
        (await t.req('PUT', `${repo}/variables/SHARED_VAR`, { token: alice.token, body: { value: 'repo-v' } })).status,
        200,
      );
      const reg = await t.req('POST', `${repo}/runners/registration-token`, { token: alice.token });
      assert.equal(reg.status, 201, reg.text);
      const config = join(dir, 'r.json');
      const registered = await exited(
        weft(
          [
            'runner',
            'register',
            '--url',
            g.base,
            '--token',
            reg.body.token,
            '--name',
            'r',
            '--labels',
            'linux',
            '--config',
            config,
          ],
          dir,
        ),
      );
      assert.equal(registered, 0);
      const work = await makeWorkTree(g, 'w', [{ 'README.md': 'x\n', '.weft/workflows/team.yml': WORKFLOW }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/teams/acme/app.git', alice.token), 'main']);
      runner = weft(['runner', '--config', config, '--workdir', join(dir, 'work')], dir);
      let stderr = '';
      runner.stderr!.on('data', (c) => (stderr += String(c)));
      const deadline = Date.now() + 90_000;
      let run;
      for (;;) {
        run = await t.deps.db.selectFrom('ci_runs').selectAll().where('repo_uuid', '=', created.body.uuid).executeTakeFirst();
        if (run?.status === 'completed') break;
        if (Date.now() > deadline) assert.fail(`the run did not complete: ${JSON.stringify(run)}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const job = await t.deps.db.selectFrom('ci_jobs').selectAll().where('run_uuid', '=', run.uuid).executeTakeFirstOrThrow();
      const log = (
        await t.deps.db
          .selectFrom('ci_log_chunks')
          .select('data')
          .where('job_uuid', '=', job.uuid)
          .orderBy('start_offset')
          .execute()
      )
        .map((c) => c.data)
        .join('');
      assert.equal(run.conclusion, 'success', log);
      assert.match(log, /team secret is \*\*\*$/m, 'the team secret reaches the job, masked');
      assert.doesNotMatch(log, /team-hunter2|dGVhbS1odW50ZXIy/, 'in its plain and base64 forms');
      assert.match(log, /reversed team 2retnuh-maet$/m, 'the team secret’s value');
      assert.match(log, /reversed shared sniw-oper$/m, 'the repo’s secret of the same name wins');
      assert.match(log, /vars team-var repo-v$/m, 'team variables, the repo’s own winning');
    });
  });
}
