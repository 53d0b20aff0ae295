import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

/**
 * docs/ci.md "Runners" by scope: a team's runners (registered by the team's maintain level) take
 * the jobs of the team's repos and never another team's; a site runner (staff) takes every repo's;
 * registration tokens work once; who may register, list and remove them (403 to a member below
 * maintainer and to non-staff on /admin, 404 to outsiders). Real `weft runner` processes.
 */
const CI = 'name: CI\non: push\njobs:\n  build:\n    runs-on: linux\n    steps:\n      - run: echo built\n';

const BIN = join(import.meta.dirname, '..', 'bin', 'weft.mjs');
const weft = (args: string[], cwd: string): ChildProcess =>
  spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
const exited = (p: ChildProcess) => new Promise<number>((r) => p.on('exit', (code) => r(code ?? -1)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const dialect of DIALECTS) {
  describe(`CI team and site runners (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person; // owner of acme
    let bob: Person; // maintainer of acme
    let carol: Person; // member of acme
    let dave: Person; // not in acme; owner of zeta
    let dir: string;
    const running: ChildProcess[] = [];
    const acme = '/api/v1/teams/acme';
    const zeta = '/api/v1/teams/zeta';

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      for (const [who, slug] of [
        [alice, 'acme'],
        [dave, 'zeta'],
      ] as const) {
        const made = await t.req('POST', '/api/v1/teams', { token: who.token, body: { name: slug, slug } });
        assert.equal(made.status, 201, made.text);
        const repo = await t.req('POST', `/api/v1/teams/${slug}/repos`, { token: who.token, body: { name: 'app', slug: 'app' } });
        assert.equal(repo.status, 201, repo.text);
      }
      for (const [p, role] of [
        [bob, 'maintainer'],
        [carol, 'member'],
      ] as const) {
        const added = await t.req('POST', `${acme}/members`, { token: alice.token, body: { username: p.username, role } });
        assert.equal(added.status, 201, added.text);
      }
      dir = mkdtempSync(join(tmpdir(), 'weft-team-runners-'));
    });
    after(async () => {
      for (const p of running) {
        p.kill('SIGTERM');
        await exited(p);
      }
      g.cleanup();
      rmSync(dir, { recursive: true, force: true });
      await t.close();
    });

    const register = async (token: string, name: string) => {
      const config = join(dir, `${name}.json`);
      const code = await exited(
        weft(
          ['runner', 'register', '--url', g.base, '--token', token, '--name', name, '--labels', 'linux', '--config', config],
          dir,
        ),
      );
      return { code, config };
    };
    const start = (config: string, name: string) => {
      const p = weft(['runner', '--config', config, '--workdir', join(dir, `work-${name}`)], dir);
      running.push(p);
      return p;
    };
    const stop = async (p: ChildProcess) => {
      p.kill('SIGTERM');
      await exited(p);
      running.splice(running.indexOf(p), 1);
    };
    const push = async (team: string, n: number) => {
      const work = await makeWorkTree(g, `w-${team}-${n}`, [{ 'README.md': `${n}\n`, '.weft/workflows/ci.yml': CI }]);
      const owner = team === 'acme' ? alice : dave;
      await g.run(['-C', work, 'push', '-q', '-f', g.url(`/git/teams/${team}/app.git`, owner.token), 'main']);
    };
    const jobsOf = async (team: string) =>
      t.deps.db
        .selectFrom('ci_jobs as j')
        .innerJoin('repos as r', 'r.uuid', 'j.repo_uuid')
        .innerJoin('teams as tm', 'tm.uuid', 'r.owner_uuid')
        .select(['j.uuid', 'j.status', 'j.conclusion', 'j.runner_name'])
        .where('tm.slug', '=', team)
        .orderBy('j.id')
        .execute();
    const waitFor = async (what: string, ok: () => Promise<boolean>) => {
      const deadline = Date.now() + 90_000;
      while (!(await ok())) {
        if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
        await sleep(250);
      }
    };

    it('who may: the team maintain level for team runners (403 member, 404 outsider), staff for site runners', async () => {
      for (const [method, path] of [
        ['POST', `${acme}/runners/registration-token`],
        ['GET', `${acme}/runners`],
        ['DELETE', `${acme}/runners/00000000-0000-4000-8000-000000000000`],
      ] as const) {
        assert.equal((await t.req(method, path, { token: carol.token })).status, 403, `${method} ${path} by a member`);
        assert.equal((await t.req(method, path, { token: dave.token })).status, 404, `${method} ${path} by an outsider`);
      }
      for (const [method, path] of [
        ['POST', '/api/v1/runners/registration-token'],
        ['GET', '/api/v1/runners'],
        ['DELETE', '/api/v1/runners/00000000-0000-4000-8000-000000000000'],
      ] as const) {
        assert.equal((await t.req(method, path, { token: alice.token })).status, 403, `${method} ${path} by a team owner`);
      }
      assert.equal((await t.req('GET', `${acme}/runners`, { token: bob.token })).status, 200);
      assert.equal((await t.req('GET', '/api/v1/runners', { token: t.adminToken })).status, 200);
      assert.equal(
        (await t.req('DELETE', `${acme}/runners/00000000-0000-4000-8000-000000000000`, { token: alice.token })).status,
        404,
      );
      const count = await t.deps.db
        .selectFrom('ci_registration_tokens')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirst();
      assert.equal(Number(count?.n), 0, 'nothing made by a refused call');
    });

    it('a team runner runs the team’s repos’ jobs and never another team’s; its token works once', async () => {
      assert.equal(
        (await t.req('POST', `${acme}/runners/registration-token`, { token: bob.token })).status,
        403,
        'a maintainer: the team owner makes team runner tokens',
      );
      const tok = await t.req('POST', `${acme}/runners/registration-token`, { token: alice.token });
      assert.equal(tok.status, 201, tok.text);
      const { code, config } = await register(tok.body.token, 'team-r');
      assert.equal(code, 0);
      const again = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token: tok.body.token, name: 'x', labels: [] },
      });
      assert.equal(again.status, 401, 'single use');
      const listed = await t.req('GET', `${acme}/runners`, { token: alice.token });
      assert.deepEqual(
        listed.body.results.map((r: { name: string; scope: string }) => [r.name, r.scope]),
        [['team-r', 'team']],
      );
      assert.deepEqual((await t.req('GET', `${zeta}/runners`, { token: dave.token })).body.results, []);

      await push('zeta', 1);
      await push('acme', 1);
      const p = start(config, 'team-r');
      await waitFor('the acme job', async () => (await jobsOf('acme')).every((j) => j.status === 'completed'));
      assert.deepEqual(
        (await jobsOf('acme')).map((j) => [j.conclusion, j.runner_name]),
        [['success', 'team-r']],
      );
      await sleep(3000); // the runner polls all along: had it been offered the zeta job, it would have taken it
      assert.deepEqual(
        (await jobsOf('zeta')).map((j) => [j.status, j.runner_name]),
        [['queued', null]],
        'another team’s job is never offered',
      );
      await stop(p);
    });

    it('a site runner (staff) runs every repo’s jobs; removed by staff', async () => {
      const tok = await t.req('POST', '/api/v1/runners/registration-token', { token: t.adminToken });
      assert.equal(tok.status, 201, tok.text);
      const { code, config } = await register(tok.body.token, 'site-r');
      assert.equal(code, 0);
      assert.equal((await register(tok.body.token, 'site-r2')).code === 0, false, 'single use');
      await push('acme', 2);
      const p = start(config, 'site-r');
      await waitFor('every job', async () =>
        [...(await jobsOf('acme')), ...(await jobsOf('zeta'))].every((j) => j.status === 'completed'),
      );
      assert.deepEqual(
        (await jobsOf('zeta')).map((j) => [j.conclusion, j.runner_name]),
        [['success', 'site-r']],
      );
      assert.deepEqual(
        (await jobsOf('acme')).map((j) => [j.conclusion, j.runner_name]),
        [
          ['success', 'team-r'],
          ['success', 'site-r'],
        ],
      );
      await stop(p);
      const listed = await t.req('GET', '/api/v1/runners', { token: t.adminToken });
      assert.deepEqual(
        listed.body.results.map((r: { name: string; scope: string }) => [r.name, r.scope]),
        [['site-r', 'site']],
      );
      const uuid = listed.body.results[0].uuid;
      assert.equal((await t.req('DELETE', `${acme}/runners/${uuid}`, { token: alice.token })).status, 404, 'another scope');
      assert.equal((await t.req('DELETE', `/api/v1/runners/${uuid}`, { token: t.adminToken })).status, 204);
      assert.deepEqual((await t.req('GET', '/api/v1/runners', { token: t.adminToken })).body.results, []);
      const teamR = (await t.req('GET', `${acme}/runners`, { token: alice.token })).body.results[0];
      assert.equal((await t.req('DELETE', `${acme}/runners/${teamR.uuid}`, { token: bob.token })).status, 204);
    });
  });
}
