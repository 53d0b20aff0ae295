import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, freshStore } from './helpers.ts';
import {
  SERVER_ADMIN_TOKEN,
  type ServerProcess,
  type StoreHandle,
  eventually,
  runWeft,
  spawnWeft,
  startServer,
  stopServer,
  git,
} from './server-process.ts';

/**
 * docs/ci.md with real processes: two `weft runner`s against two server processes (dist/main.js)
 * on one PostgreSQL database and one DATA_DIR (one server on SQLite, which serves one process)
 * take each job once; a runner killed with `kill -9` mid-job loses its job (`runner_lost`, in the
 * log and the status) once its heartbeat lapses; a required check blocks a merge until its run
 * succeeds.
 */

async function api(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${SERVER_ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : {}) as any,
    text,
  };
}

const RUNNER_LOST_MS = 3000;

for (const dialect of DIALECTS) {
  describe(`CI across runners and server processes (${dialect})`, () => {
    let store: StoreHandle;
    let servers: ServerProcess[] = [];
    let dir: string;
    let work: string;
    const runners: ChildProcess[] = [];
    const repo = '/users/admin/repos/app';

    before(async () => {
      store = await freshStore(dialect);
      const env = { WEFT_TEST_RUNNER_LOST_MS: String(RUNNER_LOST_MS) };
      // several instances are a PostgreSQL deployment; SQLite serves one process
      servers = await Promise.all((dialect === 'postgres' ? [0, 1] : [0]).map(() => startServer(store, env)));
      dir = mkdtempSync(join(tmpdir(), 'weft-ci-instances-'));
      assert.equal((await api(servers[0]!.base, 'POST', '/users/admin/repos', { name: 'app', slug: 'app' })).status, 201);
      work = join(dir, 'work');
      git(['init', '-q', '-b', 'main', work], dir);
      writeFileSync(join(work, 'README.md'), 'hello\n');
      git(['add', '.'], work);
      git(['commit', '-q', '-m', 'first'], work);
    });
    after(async () => {
      for (const r of runners) if (r.exitCode === null && r.signalCode === null) r.kill('SIGTERM');
      await Promise.all(runners.map((r) => (r.exitCode === null && r.signalCode === null ? once(r, 'exit') : null)));
      await Promise.all(servers.map((s) => stopServer(s, 'SIGTERM')));
      rmSync(dir, { recursive: true, force: true });
      await store?.drop();
    });

    const push = (files: Record<string, string>, branch = 'main') => {
      for (const [path, content] of Object.entries(files)) {
        execFileSync('mkdir', ['-p', join(work, path, '..')]);
        writeFileSync(join(work, path), content);
      }
      git(['add', '.'], work);
      git(['commit', '-q', '-m', `change ${Object.keys(files).join(' ')}`], work);
      const url = new URL(`/git${repo.replace('/repos/', '/')}.git`, servers[0]!.base);
      url.username = 'x';
      url.password = SERVER_ADMIN_TOKEN;
      git(['push', '-q', url.toString(), `HEAD:${branch}`], work);
      return git(['rev-parse', 'HEAD'], work).trim();
    };

    /** Registers a runner with the server `base` and starts it. */
    async function runner(name: string, labels: string, base: string): Promise<ChildProcess> {
      const reg = await api(base, 'POST', `${repo}/runners/registration-token`);
      assert.equal(reg.status, 201, reg.text);
      const config = join(dir, `${name}.json`);
      const env = { HOME: dir };
      const registered = await runWeft(
        'cli',
        ['runner', 'register', '--url', base, '--token', reg.body.token, '--name', name, '--labels', labels, '--config', config],
        env,
      );
      assert.equal(registered.code, 0, registered.stderr);
      const child = spawnWeft('cli', ['runner', '--config', config, '--workdir', join(dir, `wd-${name}`)], env);
      runners.push(child);
      return child;
    }

    const runOf = async (sha: string, workflow: string) => {
      const list = await api(servers.at(-1)!.base, 'GET', `${repo}/runs?head_sha=${sha}`);
      return (list.body.results as any[]).find((r) => r.workflow.name === workflow);
    };
    const completedRun = (sha: string, workflow: string, ms = 120_000) =>
      eventually(
        `the ${workflow} run`,
        async () => {
          const run = await runOf(sha, workflow);
          if (run?.status !== 'completed') return undefined;
          return (await api(servers[0]!.base, 'GET', `${repo}/runs/${run.number}`)).body;
        },
        ms,
      );
    const logOf = async (run: any, job: any) =>
      (await api(servers.at(-1)!.base, 'GET', `${repo}/runs/${run.number}/jobs/${job.uuid}/log`)).text;

    it('two runners, each polling its own server, take each job exactly once', async () => {
      const ran = join(dir, 'ran');
      await runner('pool-a', 'pool', servers[0]!.base);
      await runner('pool-b', 'pool', servers.at(-1)!.base);
      const sha = push({
        '.weft/workflows/pool.yml': `name: Pool
on:
  push:
    branches: [main]
jobs:
  each:
    runs-on: pool
    strategy:
      fail-fast: false
      matrix:
        n: [1, 2, 3, 4, 5, 6, 7, 8]
    steps:
      - run: |
          echo "job \${{ matrix.n }}" >> ${ran}
          echo "job \${{ matrix.n }} ran"
          sleep 1
`,
      });
      const run = await completedRun(sha, 'Pool');
      assert.equal(run.conclusion, 'success', JSON.stringify(run));
      assert.equal(run.jobs.length, 8);
      const lines = readFileSync(ran, 'utf8').trim().split('\n').sort();
      assert.deepEqual(
        lines,
        [1, 2, 3, 4, 5, 6, 7, 8].map((n) => `job ${n}`),
        'each job ran once',
      );
      for (const job of run.jobs) {
        const log = await logOf(run, job);
        assert.equal(log.match(/ job \d ran$/gm)?.length, 1, log);
      }
      const by = new Set(run.jobs.map((j: any) => j.runner_name));
      assert.deepEqual([...by].sort(), ['pool-a', 'pool-b'], 'both runners took jobs');
    });

    it('kill -9 of a runner mid-job: the job fails as runner_lost once its heartbeat lapses', async () => {
      const pid = join(dir, 'victim.pid');
      const victim = await runner('victim', 'victim', servers[0]!.base);
      const sha = push({
        '.weft/workflows/victim.yml': `name: Victim
on:
  push:
    branches: [main]
jobs:
  hang:
    runs-on: victim
    steps:
      - run: |
          echo "started"
          echo $$ > ${pid}
          sleep 120
`,
      });
      await eventually('the step', async () => (existsSync(pid) ? true : undefined));
      // its first line reached the server before the kill
      await eventually('the first log line', async () => {
        const run = await runOf(sha, 'Victim');
        const full = run && (await api(servers[0]!.base, 'GET', `${repo}/runs/${run.number}`)).body;
        return full?.jobs[0] && /started/.test(await logOf(full, full.jobs[0])) ? true : undefined;
      });
      victim.kill('SIGKILL');
      await once(victim, 'exit');
      const step = Number(readFileSync(pid, 'utf8').trim());
      try {
        const run = await completedRun(sha, 'Victim', 60_000);
        assert.equal(run.conclusion, 'failure');
        const [job] = run.jobs;
        assert.equal(job.conclusion, 'failure');
        assert.equal(job.runner_name, 'victim');
        const victimLog = await logOf(run, job);
        assert.match(
          victimLog,
          /started\n[\s\S]*\[weft\] runner_lost: the runner victim stopped reporting/,
          JSON.stringify(victimLog),
        );
        const status = await api(servers[0]!.base, 'GET', `${repo}/commits/${sha}/status`);
        const hang = status.body.statuses.find((s: any) => s.context === 'Victim / hang');
        assert.equal(hang.state, 'failure');
        assert.equal(hang.description, 'runner_lost');
      } finally {
        // the step's process group outlives its killed runner: end it here
        try {
          process.kill(-step, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    });

    it('a required check blocks a merge until its run succeeds', async () => {
      const gate = join(dir, 'gate');
      assert.equal(
        (
          await api(servers[0]!.base, 'POST', `${repo}/protections`, {
            branch: 'main',
            required_approvals: 0,
            required_status_contexts: ['Checks / test'],
          })
        ).status,
        201,
      );
      const head = push(
        {
          '.weft/workflows/checks.yml': `name: Checks
on:
  push:
    branches: [fix]
jobs:
  test:
    runs-on: pool
    steps:
      - run: while [ ! -f ${gate} ]; do sleep 0.2; done
`,
        },
        'fix',
      );
      const pull = await api(servers[0]!.base, 'POST', `${repo}/pulls`, {
        title: 'Fix',
        body: '',
        source_branch: 'fix',
        target_branch: 'main',
      });
      assert.equal(pull.status, 201, pull.text);
      const merge = () => api(servers.at(-1)!.base, 'POST', `${repo}/pulls/${pull.body.number}/merge`, {});
      await eventually('the job to start', async () =>
        (await runOf(head, 'Checks'))?.status === 'in_progress' ? true : undefined,
      );
      const early = await merge();
      assert.equal(early.status, 409, early.text);
      assert.match(early.text, /checks_unsatisfied/);
      writeFileSync(gate, '');
      const run = await completedRun(head, 'Checks');
      assert.equal(run.conclusion, 'success');
      const merged = await merge();
      assert.equal(merged.status, 200, merged.text);
    });
  });
}
