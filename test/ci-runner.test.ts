import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Person, processAlive, waitUntil } from './common.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

const WORKFLOW = `name: Build
on: push
jobs:
  build:
    runs-on: [linux]
    strategy:
      matrix:
        n: [1, 2]
    outputs:
      greeting: \${{ steps.make.outputs.greeting }}
    steps:
      - uses: actions/checkout@v4
      - id: make
        name: Make
        env:
          N: \${{ matrix.n }}
          S: \${{ secrets.MY_SECRET }}
        run: |
          cat README.md
          echo "greeting=hello-$N" >> "$GITHUB_OUTPUT"
          echo "FROM_ENV=carried" >> "$GITHUB_ENV"
          echo "token is $WEFT_TOKEN"
          echo "secret is $S"
          printf '%s' "$S" | base64
      - run: echo "env $FROM_ENV"
      - run: exit 3
        continue-on-error: true
  after:
    needs: build
    runs-on: linux
    steps:
      - run: echo "got \${{ needs.build.outputs.greeting }}"
      - run: sleep 30
        timeout-minutes: 0.05
      - run: echo never
      - if: failure()
        run: echo cleanup
  other:
    runs-on: linux
    steps:
      - uses: someone/else@v1
`;

const BIN = join(import.meta.dirname, '..', 'bin', 'weft.mjs');

function weft(args: string[], cwd: string): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
}
const exited = (p: ChildProcess) => new Promise<number>((r) => p.on('exit', (code) => r(code ?? -1)));

/** Real `weft runner` processes against a real server. */
for (const dialect of DIALECTS) {
  describe(`CI with a real runner (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let dir: string;
    let runner: ChildProcess | null = null;
    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      dir = mkdtempSync(join(tmpdir(), 'weft-runner-test-'));
    });
    after(async () => {
      runner?.kill('SIGTERM');
      if (runner) await exited(runner);
      g.cleanup();
      rmSync(dir, { recursive: true, force: true });
      await t.close();
    });

    it('register once, run checkout, matrix, needs, outputs, env files, masking, continue-on-error, timeout, unknown uses', async () => {
      const created = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app' },
      });
      assert.equal(created.status, 201);
      const reg = await t.req('POST', '/api/v1/users/alice/repos/app/runners/registration-token', { token: alice.token });
      assert.equal(reg.status, 201, reg.text);
      const register = (name: string) =>
        exited(
          weft(
            [
              'runner',
              'register',
              '--url',
              g.base,
              '--token',
              reg.body.token,
              '--name',
              name,
              '--labels',
              'linux,x64',
              '--config',
              join(dir, `${name}.json`),
            ],
            dir,
          ),
        );
      assert.equal(await register('r1'), 0);
      assert.notEqual(await register('r2'), 0, 'a registration token works once');

      const secret = await t.req('PUT', '/api/v1/users/alice/repos/app/secrets/MY_SECRET', {
        token: alice.token,
        body: { value: 'hunter2-secret' },
      });
      assert.equal(secret.status, 200, secret.text);
      const work = await makeWorkTree(g, 'w', [{ 'README.md': 'readme-content\n', '.weft/workflows/build.yml': WORKFLOW }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
      runner = weft(['runner', '--config', join(dir, 'r1.json'), '--capacity', '2', '--workdir', join(dir, 'work')], dir);
      let stderr = '';
      runner.stderr!.on('data', (c) => (stderr += String(c)));

      const deadline = Date.now() + 90_000;
      let run;
      for (;;) {
        run = await t.deps.db.selectFrom('ci_runs').selectAll().executeTakeFirst();
        if (run?.status === 'completed') break;
        if (Date.now() > deadline) assert.fail(`the run did not complete: ${JSON.stringify(run)}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(run.conclusion, 'failure');
      const jobs = await t.deps.db.selectFrom('ci_jobs').selectAll().orderBy('id').execute();
      const byName = Object.fromEntries(jobs.map((j) => [j.name, j]));
      const logOf = async (uuid: string) =>
        (
          await t.deps.db
            .selectFrom('ci_log_chunks')
            .select('data')
            .where('job_uuid', '=', uuid)
            .orderBy('start_offset')
            .execute()
        )
          .map((c) => c.data)
          .join('');
      assert.equal(byName['build (1)']!.conclusion, 'success', await logOf(byName['build (1)']!.uuid));
      assert.equal(byName['build (2)']!.conclusion, 'success');
      assert.equal(byName['after']!.conclusion, 'timed_out');
      assert.equal(byName['other']!.conclusion, 'failure');
      assert.equal(byName['build (1)']!.runner_name, 'r1');
      const build = await logOf(byName['build (1)']!.uuid);
      assert.match(build, /^\d{4}-\d\d-\d\dT[\d:.]+Z readme-content$/m, 'checkout with the job token; lines with timestamps');
      assert.match(build, /token is \*\*\*$/m, 'the job token is masked');
      assert.match(build, /secret is \*\*\*$/m, 'a secret is masked');
      assert.doesNotMatch(build, /hunter2|aHVudGVyMi1zZWNyZXQ=/, 'in its plain and base64 forms');
      assert.match(build, /env carried$/m, '$GITHUB_ENV carries to later steps');
      assert.match(build, /the step exited with code 3/);
      const lines = build.trimEnd().split('\n');
      assert.equal(new Set(lines).size, lines.length, 'no line twice');
      const afterLog = await logOf(byName['after']!.uuid);
      assert.match(afterLog, /got hello-[12]$/m, 'needs outputs');
      assert.doesNotMatch(afterLog, /never/);
      assert.match(afterLog, /cleanup$/m, 'if: failure() runs after the timeout');
      const other = await logOf(byName['other']!.uuid);
      assert.match(other, /'uses: someone\/else@v1' is not supported/);
      const steps = JSON.parse(byName['build (1)']!.steps);
      assert.deepEqual(
        steps.map((s: any) => [s.number, s.status, s.conclusion]),
        [
          [1, 'completed', 'success'],
          [2, 'completed', 'success'],
          [3, 'completed', 'success'],
          [4, 'completed', 'success'],
        ],
      );
      // the job token ended with the job
      const tokens = await t.deps.db.selectFrom('api_tokens').select(['revoked_at']).where('name', 'like', 'ci job %').execute();
      assert.ok(tokens.length >= 4 && tokens.every((x) => x.revoked_at !== null));
      const status = await t.req('GET', `/api/v1/users/alice/repos/app/commits/${run.head_sha}/status`, { token: alice.token });
      assert.deepEqual(
        status.body.statuses.map((s: any) => [s.context, s.state]),
        [
          ['Build / after', 'failure'],
          ['Build / build (1)', 'success'],
          ['Build / build (2)', 'success'],
          ['Build / other', 'failure'],
        ],
      );
    });

    it('cancel: the running step and what it started in the background end within 10 s', async () => {
      const pids = join(dir, 'pids');
      const slow = `name: Slow\non: push\njobs:\n  wait:\n    runs-on: linux\n    steps:\n      - run: |\n          sleep 300 &\n          echo "$! $$" > ${pids}\n          wait\n`;
      const work = await makeWorkTree(g, 'slow', [{ 'README.md': 'x\n', '.weft/workflows/slow.yml': slow }]);
      await g.run(['-C', work, 'push', '-q', '-f', g.url('/git/users/alice/app.git', alice.token), 'main:slow']);
      const run = await t.deps.db.selectFrom('ci_runs').selectAll().where('workflow_name', '=', 'Slow').executeTakeFirstOrThrow();
      const api = `/api/v1/users/alice/repos/app/runs/${run.number}`;
      await waitUntil(() => existsSync(pids) && readFileSync(pids, 'utf8').trim().split(' ').length === 2, 60_000, 'the step');
      const [child, shell] = readFileSync(pids, 'utf8').trim().split(' ').map(Number) as [number, number];
      const alive = processAlive;
      assert.ok(alive(child) && alive(shell));
      const cancelled = await t.req('POST', `${api}/cancel`, { token: alice.token });
      assert.equal(cancelled.status, 200, cancelled.text);
      const at = Date.now();
      await waitUntil(
        async () => (await t.req('GET', api, { token: alice.token })).body.status === 'completed',
        10_000,
        'the run',
      );
      await waitUntil(() => !alive(child) && !alive(shell), 10_000 - (Date.now() - at), 'the processes to end');
      const done = await t.req('GET', api, { token: alice.token });
      assert.equal(done.body.conclusion, 'cancelled');
      assert.equal(done.body.jobs[0].conclusion, 'cancelled');
    });

    it('stop: an idle runner ends its long poll on SIGTERM, and a job queued after it stays queued', async () => {
      // the runner of the tests above is idle, inside a 20 s long poll
      assert.ok(runner);
      const idle = runner;
      await new Promise((r) => setTimeout(r, 500));
      const at = Date.now();
      idle.kill('SIGTERM');
      assert.equal(await exited(idle), 0);
      runner = null;
      // well inside the poll's 20 s: the poll was cut, not waited out
      assert.ok(Date.now() - at < 10_000, `the runner took ${Date.now() - at} ms to stop`);
      const work = await makeWorkTree(g, 'after-stop', [
        {
          'README.md': 'y\n',
          '.weft/workflows/quick.yml': 'name: Quick\non: push\njobs:\n  q:\n    runs-on: linux\n    steps:\n      - run: true\n',
        },
      ]);
      await g.run(['-C', work, 'push', '-q', '-f', g.url('/git/users/alice/app.git', alice.token), 'main:after-stop']);
      const run = await t.deps.db
        .selectFrom('ci_runs')
        .selectAll()
        .where('workflow_name', '=', 'Quick')
        .executeTakeFirstOrThrow();
      await new Promise((r) => setTimeout(r, 1500));
      const job = await t.deps.db.selectFrom('ci_jobs').selectAll().where('run_uuid', '=', run.uuid).executeTakeFirstOrThrow();
      assert.equal(job.status, 'queued', 'the stopped runner claimed nothing');
      assert.equal(job.runner_uuid, null);
    });
  });
}
