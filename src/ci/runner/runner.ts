/**
 * `weft runner register` and `weft runner` (docs/ci.md "Runners"): the runner process. It
 * long-polls the server with its own secret, runs each job in a fresh work directory (deleted
 * afterwards), each step as `bash -e`/`sh -e` in its own process group (cancel and timeout kill
 * the whole tree), and uploads log lines, each prefixed with its timestamp, in chunks by byte
 * offset (a chunk is resent until the server holds it; the server ignores what it already has),
 * so a server restart loses and duplicates nothing.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  evaluateCondition,
  type ExprContext,
  interpolateText,
  type JobState,
  toText,
  truthy,
  interpolate,
  type Value,
} from '../workflow/expr.ts';
import type { Step } from '../workflow/model.ts';
import type { JobSpec } from '../protocol.ts';

interface RunnerConfig {
  url: string;
  uuid: string;
  name: string;
  labels: string[];
  secret: string;
  capacity?: number;
}

const VERSION = '1';
const log = (line: string) => process.stderr.write(`weft runner: ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}: ${body.slice(0, 200)}`);
  }
}

async function call(
  cfg: { url: string; secret?: string },
  path: string,
  body: unknown,
  timeoutMs = 30_000,
  cut?: AbortSignal,
): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const res = await fetch(`${cfg.url.replace(/\/$/, '')}/api/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cfg.secret ? { 'x-weft-runner-secret': cfg.secret } : {}) },
    body: JSON.stringify(body),
    signal: cut ? AbortSignal.any([timeout, cut]) : timeout,
  });
  const text = await res.text();
  if (!res.ok) throw new HttpError(res.status, text);
  return text ? JSON.parse(text) : null;
}

export async function runnerMain(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', default: '.weft-runner.json' },
      url: { type: 'string' },
      token: { type: 'string' },
      name: { type: 'string' },
      labels: { type: 'string', default: 'linux' },
      capacity: { type: 'string' },
      workdir: { type: 'string' },
      once: { type: 'boolean', default: false },
    },
  });
  const configPath = resolve(values.config ?? '.weft-runner.json');
  if (positionals[0] === 'register') {
    if (!values.url || !values.token || !values.name) {
      log('register needs --url, --token and --name');
      return 2;
    }
    const labels = (values.labels ?? '')
      .split(',')
      .map((l) => l.trim())
      .filter(Boolean);
    const capacity = values.capacity ? Number(values.capacity) : 1;
    const r = (await call({ url: values.url }, '/runner/register', {
      token: values.token,
      name: values.name,
      labels,
      version: VERSION,
      capacity,
    })) as {
      uuid: string;
      secret: string;
      scope: string;
    };
    const cfg: RunnerConfig = { url: values.url, uuid: r.uuid, name: values.name, labels, secret: r.secret, capacity };
    writeFileSync(configPath, `${JSON.stringify(cfg, null, 2)}\n`, { mode: 0o600 });
    chmodSync(configPath, 0o600);
    log(`registered ${values.name} (${r.scope} scope); its secret is in ${configPath}`);
    return 0;
  }
  if (positionals.length > 0) {
    log(`unknown runner command: ${positionals[0]}`);
    return 2;
  }
  if (!existsSync(configPath)) {
    log(`no config at ${configPath}: run 'weft runner register' first`);
    return 2;
  }
  const cfg = JSON.parse(readFileSync(configPath, 'utf8')) as RunnerConfig;
  const capacity = values.capacity ? Number(values.capacity) : (cfg.capacity ?? 1);
  const workRoot = values.workdir ? resolve(values.workdir) : tmpdir();
  mkdirSync(workRoot, { recursive: true });
  const running = new Map<string, AbortController>();
  let stopping = false;
  // the long poll in flight: a stop ends it at once (the server claims nothing for a poll whose
  // runner has gone) instead of waiting out its 20 s
  let polling: AbortController | null = null;
  // the pause between polls, cut short when a job ends
  let wake = () => {};
  const stop = () => {
    stopping = true;
    polling?.abort('stopping');
    wake();
    for (const c of running.values()) c.abort('cancelled');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => resolve(), ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  log(`${cfg.name} polling ${cfg.url} with labels ${cfg.labels.join(',')}, capacity ${capacity}`);
  while (!stopping) {
    const free = capacity - running.size;
    try {
      polling = new AbortController();
      const answer = (await call(cfg, '/runner/poll', { free, running: [...running.keys()] }, 40_000, polling.signal)) as {
        jobs: JobSpec[];
        cancel: string[];
      };
      polling = null;
      for (const u of answer.cancel) running.get(u)?.abort('cancelled');
      for (const spec of answer.jobs) {
        const ctl = new AbortController();
        if (stopping) ctl.abort('cancelled'); // handed out as the stop came: reported cancelled
        running.set(spec.uuid, ctl);
        void runJob(cfg, spec, workRoot, ctl.signal)
          .catch((err) => log(`job ${spec.uuid} failed: ${(err as Error).message}`))
          .finally(() => {
            running.delete(spec.uuid);
            wake(); // a slot is free: poll for the next job now, not at the end of the pause
          });
      }
      if (!stopping && (free <= 0 || answer.jobs.length === 0)) await pause(free <= 0 ? 2000 : 200);
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) {
        log('the server refused this runner (removed?): stopping');
        stop();
        break;
      }
      polling = null;
      if (!stopping) await sleep(1000); // the server is away: reconnect
    }
    if (values.once && running.size === 0) break;
  }
  while (running.size > 0) await sleep(100);
  return 0;
}

/** The log of one job: timestamped, masked lines, uploaded in order by byte offset. */
class JobLog {
  private offset = 0;
  private pending = '';
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout;
  constructor(
    private readonly cfg: RunnerConfig,
    private readonly jobUuid: string,
    private readonly masks: string[],
  ) {
    this.timer = setInterval(() => void this.flush(), 300);
  }
  line(text: string): void {
    let t = text;
    for (const m of this.masks) if (m) t = t.split(m).join('***');
    const idle = this.pending === '' && this.flushing === null;
    this.pending += `${new Date().toISOString()} ${t}\n`;
    // the first line after a quiet spell goes out at once; lines that come while an upload is
    // in flight gather and follow it (the interval is the backstop after a failed upload)
    if (idle) setImmediate(() => void this.flush());
  }
  async flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      while (this.pending) {
        const data = this.pending.slice(0, 64 * 1024);
        try {
          const r = (await call(this.cfg, `/runner/jobs/${this.jobUuid}/log`, { offset: this.offset, data })) as {
            offset: number;
          };
          this.offset += Buffer.byteLength(data);
          if (r.offset > this.offset) this.offset = r.offset;
          this.pending = this.pending.slice(data.length);
        } catch (err) {
          if (err instanceof HttpError && err.status === 409) {
            const m = /offset (\d+)/.exec(err.body);
            if (m) this.offset = Number(m[1]);
            continue;
          }
          if (err instanceof HttpError && err.status < 500 && err.status !== 429) return;
          await sleep(500); // the server is away: resend the same chunk
        }
      }
    })().finally(() => (this.flushing = null));
    return this.flushing;
  }
  async close(): Promise<void> {
    clearInterval(this.timer);
    for (let i = 0; i < 600 && this.pending; i++) await this.flush().then(() => (this.pending ? sleep(500) : undefined));
  }
}

/** Retries a runner call until the server answers (a restart in between loses nothing). */
async function reliably(fn: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      await fn();
      return;
    } catch (err) {
      if (err instanceof HttpError && err.status < 500 && err.status !== 429) return;
      await sleep(500);
    }
  }
}

/** `key=value` lines and `key<<DELIM` blocks (the $GITHUB_OUTPUT / $GITHUB_ENV format). */
export function parseKeyValueFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const [, key, delim] = heredoc;
      const body: string[] = [];
      for (i++; i < lines.length && lines[i] !== delim; i++) body.push(lines[i]!);
      out[key!] = body.join('\n');
      continue;
    }
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

const readText = (p: string) => (existsSync(p) ? readFileSync(p, 'utf8') : '');

async function runJob(cfg: RunnerConfig, spec: JobSpec, workRoot: string, signal: AbortSignal): Promise<void> {
  const secretValues = [...Object.values(spec.secrets), spec.token].filter((s) => s.length >= 3);
  const masks = secretValues
    .flatMap((s) => [s, Buffer.from(s).toString('base64'), encodeURIComponent(s)])
    .sort((a, b) => b.length - a.length);
  const jlog = new JobLog(cfg, spec.uuid, masks);
  const dir = mkdtempSync(join(workRoot, 'weft-job-'));
  const workspace = join(dir, 'workspace');
  const temp = join(dir, 'temp');
  mkdirSync(workspace);
  mkdirSync(temp);
  let conclusion: 'success' | 'failure' | 'cancelled' | 'timed_out' = 'success';
  const timeout = AbortSignal.timeout(spec.timeout_minutes * 60_000);
  const jobSignal = AbortSignal.any([signal, timeout]);
  const stepsCtx: Record<string, Value> = {};
  const env: Record<string, string> = {};
  const paths: string[] = [];
  const contexts = (): ExprContext['contexts'] => ({
    ...spec.contexts,
    env: { ...spec.workflow_env, ...spec.job.env, ...env },
    matrix: spec.matrix,
    steps: stepsCtx,
    secrets: spec.secrets,
    runner: { os: process.platform === 'darwin' ? 'macOS' : 'Linux', temp, name: cfg.name },
  });
  jlog.line(`[weft] job ${spec.name} of run ${spec.run.number} (${spec.run.workflow}) on runner ${cfg.name}`);
  try {
    for (const step of spec.job.steps) {
      const state: JobState = jobSignal.aborted ? 'cancelled' : conclusion === 'success' ? 'success' : 'failure';
      const name = step.name
        ? interpolateSafe(step.name, contexts())
        : step.run !== undefined
          ? `Run ${step.run.split('\n')[0]}`
          : `Run ${step.uses}`;
      let run = false;
      try {
        run = evaluateCondition(step.if, { contexts: contexts(), state });
      } catch (e) {
        jlog.line(`[weft] step ${step.number} 'if': ${(e as Error).message}`);
        conclusion = 'failure';
      }
      if (!run) {
        if (step.id) stepsCtx[step.id] = { outputs: {}, outcome: 'skipped', conclusion: 'skipped' };
        await reliably(() =>
          call(cfg, `/runner/jobs/${spec.uuid}/steps`, {
            steps: [{ number: step.number, status: 'completed', conclusion: 'skipped' }],
          }),
        );
        continue;
      }
      const started = new Date().toISOString();
      // reported while the step runs (not before it starts), and before its completion is
      const reportedStart = reliably(() =>
        call(cfg, `/runner/jobs/${spec.uuid}/steps`, {
          steps: [{ number: step.number, status: 'in_progress', started_at: started }],
        }),
      );
      jlog.line(`##[group]${name}`);
      const outputFile = join(temp, `output-${step.number}`);
      const envFile = join(temp, `env-${step.number}`);
      const pathFile = join(temp, `path-${step.number}`);
      const summaryFile = join(temp, `summary-${step.number}`);
      for (const f of [outputFile, envFile, pathFile, summaryFile]) writeFileSync(f, '');
      let outcome: 'success' | 'failure' | 'cancelled' | 'timed_out';
      try {
        const stepEnv = buildEnv(spec, step, contexts(), env, paths, {
          workspace,
          temp,
          outputFile,
          envFile,
          pathFile,
          summaryFile,
        });
        if (step.uses !== undefined)
          outcome = await builtinAction(cfg, spec, step, contexts(), workspace, stepEnv, jlog, jobSignal);
        else outcome = await runScript(step, contexts(), workspace, stepEnv, jlog, jobSignal, temp);
      } catch (e) {
        jlog.line(`[weft] ${(e as Error).message}`);
        outcome = 'failure';
      }
      if (outcome !== 'success' && timeout.aborted) outcome = 'timed_out';
      Object.assign(env, parseKeyValueFile(readText(envFile)));
      for (const p of readText(pathFile).split('\n').filter(Boolean).reverse()) paths.unshift(p);
      const summary = readText(summaryFile);
      if (summary) for (const l of summary.trimEnd().split('\n')) jlog.line(`[summary] ${l}`);
      const continueOnError =
        typeof step.continueOnError === 'boolean' ? step.continueOnError : truthyExpr(step.continueOnError, contexts());
      const stepConclusion = outcome !== 'success' && continueOnError ? 'success' : outcome;
      if (step.id) stepsCtx[step.id] = { outputs: parseKeyValueFile(readText(outputFile)), outcome, conclusion: stepConclusion };
      jlog.line(`##[endgroup] ${outcome}`);
      await reportedStart;
      await reliably(() =>
        call(cfg, `/runner/jobs/${spec.uuid}/steps`, {
          steps: [
            {
              number: step.number,
              status: 'completed',
              conclusion: stepConclusion,
              started_at: started,
              completed_at: new Date().toISOString(),
            },
          ],
        }),
      );
      if (stepConclusion !== 'success' && conclusion === 'success')
        conclusion = stepConclusion === 'cancelled' ? 'cancelled' : stepConclusion;
    }
    if (timeout.aborted) conclusion = 'timed_out';
    else if (signal.aborted) conclusion = 'cancelled';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const outputs: Record<string, string> = {};
  for (const [k, expr] of Object.entries(spec.job.outputs)) {
    try {
      outputs[k] = toText(interpolate(expr, { contexts: contexts() }));
    } catch (e) {
      jlog.line(`[weft] output ${k}: ${(e as Error).message}`);
    }
  }
  jlog.line(`[weft] job ${conclusion}`);
  await jlog.close();
  await reliably(() => call(cfg, `/runner/jobs/${spec.uuid}/finish`, { conclusion, outputs }));
}

const interpolateSafe = (text: string, contexts: ExprContext['contexts']) => {
  try {
    return interpolateText(text, { contexts });
  } catch {
    return text;
  }
};
const truthyExpr = (text: string, contexts: ExprContext['contexts']) => truthy(interpolate(text, { contexts }));

function buildEnv(
  spec: JobSpec,
  step: Step,
  contexts: ExprContext['contexts'],
  env: Record<string, string>,
  paths: string[],
  files: { workspace: string; temp: string; outputFile: string; envFile: string; pathFile: string; summaryFile: string },
): Record<string, string> {
  const c = { contexts };
  const out: Record<string, string> = {
    PATH: [...paths, process.env.PATH ?? '/usr/bin:/bin'].join(':'),
    HOME: process.env.HOME ?? files.temp,
    LANG: process.env.LANG ?? 'C.UTF-8',
    CI: 'true',
  };
  const both = (name: string, value: string) => {
    out[`WEFT_${name}`] = value;
    out[`GITHUB_${name}`] = value;
  };
  out.WEFT_TOKEN = spec.token;
  out.GITHUB_TOKEN = spec.token;
  both('OUTPUT', files.outputFile);
  both('ENV', files.envFile);
  both('PATH', files.pathFile);
  both('STEP_SUMMARY', files.summaryFile);
  both('WORKSPACE', files.workspace);
  both('SHA', spec.sha);
  both('REF', spec.ref);
  both('REPOSITORY', spec.repository);
  both('SERVER_URL', spec.server_url);
  both('RUN_NUMBER', String(spec.run.number));
  both('RUN_ID', spec.run.uuid);
  both('ACTIONS', 'true');
  out.RUNNER_TEMP = files.temp;
  for (const layer of [spec.workflow_env, spec.job.env, env, step.env]) {
    for (const [k, v] of Object.entries(layer)) out[k] = layer === env ? v : interpolateText(v, c);
  }
  return out;
}

/** Runs a process in its own group; cancel/timeout kills the group (TERM, then KILL after 2 s). */
function runProcess(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  jlog: JobLog,
  signal: AbortSignal,
): Promise<number> {
  return new Promise((resolveExit) => {
    const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const pipe = (stream: NodeJS.ReadableStream) => {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        rest += chunk;
        const lines = rest.split('\n');
        rest = lines.pop() ?? '';
        for (const l of lines) jlog.line(l);
      });
      stream.on('end', () => {
        if (rest) jlog.line(rest);
      });
    };
    pipe(child.stdout!);
    pipe(child.stderr!);
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* gone */
      }
      setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      }, 2000).unref();
    };
    if (signal.aborted) kill();
    signal.addEventListener('abort', kill, { once: true });
    child.on('error', (e) => {
      jlog.line(`[weft] ${e.message}`);
      resolveExit(127);
    });
    child.on('close', (code) => {
      signal.removeEventListener('abort', kill);
      // the step's group may hold processes that outlived it: end them too
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      resolveExit(code ?? 1);
    });
  });
}

async function runScript(
  step: Step,
  contexts: ExprContext['contexts'],
  workspace: string,
  env: Record<string, string>,
  jlog: JobLog,
  jobSignal: AbortSignal,
  temp: string,
): Promise<'success' | 'failure' | 'cancelled' | 'timed_out'> {
  const script = interpolateText(step.run ?? '', { contexts });
  const file = join(temp, `step-${step.number}.sh`);
  writeFileSync(file, script);
  const cwd = step.workingDirectory ? resolve(workspace, interpolateText(step.workingDirectory, { contexts })) : workspace;
  const stepTimeout = step.timeoutMinutes ? AbortSignal.timeout(step.timeoutMinutes * 60_000) : null;
  const signal = stepTimeout ? AbortSignal.any([jobSignal, stepTimeout]) : jobSignal;
  const args = step.shell === 'sh' ? ['-e', file] : ['--noprofile', '--norc', '-eo', 'pipefail', file];
  const code = await runProcess(step.shell === 'sh' ? 'sh' : 'bash', args, cwd, env, jlog, signal);
  if (stepTimeout?.aborted) {
    jlog.line(`[weft] the step ran past its ${step.timeoutMinutes} minutes`);
    return 'timed_out';
  }
  if (jobSignal.aborted) return 'cancelled';
  if (code !== 0) jlog.line(`[weft] the step exited with code ${code}`);
  return code === 0 ? 'success' : 'failure';
}

/** `actions/checkout` (built in): the run's commit over HTTP with the job token. */
async function builtinAction(
  cfg: RunnerConfig,
  spec: JobSpec,
  step: Step,
  contexts: ExprContext['contexts'],
  workspace: string,
  env: Record<string, string>,
  jlog: JobLog,
  signal: AbortSignal,
): Promise<'success' | 'failure' | 'cancelled' | 'timed_out'> {
  const uses = step.uses ?? '';
  if (!/^actions\/checkout(@.*)?$/.test(uses)) {
    jlog.line(
      `[weft] step ${step.number} (${step.name ?? uses}): 'uses: ${uses}' is not supported (only actions/checkout is built in)`,
    );
    return 'failure';
  }
  const w = (k: string) => (step.with[k] !== undefined ? interpolateText(step.with[k]!, { contexts }) : undefined);
  const depth = Number(w('fetch-depth') ?? '1');
  const dest = resolve(workspace, w('path') ?? '.');
  mkdirSync(dest, { recursive: true });
  const auth = `Authorization: Basic ${Buffer.from(`x:${spec.token}`).toString('base64')}`;
  const gitEnv = { ...env, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' };
  const git = (args: string[]) => runProcess('git', args, dest, gitEnv, jlog, signal);
  const cloneUrl = `${cfg.url.replace(/\/$/, '')}${spec.clone_path}`;
  jlog.line(`[weft] checking out ${spec.sha} from ${cloneUrl}`);
  if ((await git(['init', '-q'])) !== 0) return 'failure';
  const fetchArgs = ['-c', `http.extraHeader=${auth}`, 'fetch', '-q', '--no-tags'];
  if (depth > 0) fetchArgs.push(`--depth=${depth}`);
  fetchArgs.push(cloneUrl, spec.sha);
  if ((await git(fetchArgs)) !== 0) return signal.aborted ? 'cancelled' : 'failure';
  if ((await git(['checkout', '-q', '--detach', spec.sha])) !== 0) return 'failure';
  return 'success';
}
