import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatError, type Workflow } from '../src/ci/workflow/model.ts';
import { parseWorkflow } from '../src/ci/workflow/parse.ts';
import {
  evaluateConcurrency,
  expandMatrix,
  jobInstanceName,
  jobOrder,
  jobOutputs,
  shouldRunJob,
  statusContext,
} from '../src/ci/workflow/plan.ts';
import { dispatchInputs, matchesList, matchesPull, matchesPush, nextSchedule } from '../src/ci/workflow/triggers.ts';

const FILE = '.weft/workflows/ci.yml';

const ok = (text: string): Workflow => {
  const r = parseWorkflow(FILE, text);
  if (!r.ok) assert.fail(r.errors.map(formatError).join('\n'));
  return r.workflow;
};
/** The file's errors as `line: key: message` lines. */
const errors = (text: string): string[] => {
  const r = parseWorkflow(FILE, text);
  assert.equal(r.ok, false, 'expected the file to be refused');
  return r.ok ? [] : r.errors.map((e) => formatError(e).slice(FILE.length + 1));
};
const has = (text: string, expected: string) => {
  const found = errors(text);
  assert.ok(
    found.some((e) => e.includes(expected)),
    `expected "${expected}" among:\n${found.join('\n')}`,
  );
};

const FULL = `name: CI
on:
  push:
    branches: [main, 'release/**', '!release/old']
    paths: ['src/**', '!src/**/*.md']
  pull_request:
    branches: [main]
    types: [opened, synchronize]
  workflow_dispatch:
    inputs:
      level:
        type: choice
        options: [low, high]
        default: low
      dry:
        type: boolean
        default: true
      note:
        required: true
  schedule:
    - cron: '30 2 * * 1'
env:
  TOP: 1
concurrency:
  group: ci-\${{ weft.ref }}
  cancel-in-progress: true
jobs:
  build:
    name: Build
    runs-on: [linux, x64]
    env:
      FLAG: yes
    timeout-minutes: 5
    strategy:
      fail-fast: false
      max-parallel: 2
      matrix:
        node: [18, 20]
        os: [linux]
        include:
          - node: 20
            experimental: true
        exclude:
          - node: 18
            os: mac
    outputs:
      version: \${{ steps.v.outputs.version }}
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 1
      - id: v
        name: Version
        run: echo "version=1.0" >> "$GITHUB_OUTPUT"
        shell: sh
        working-directory: sub
        env:
          A: \${{ matrix.node }}
        if: success()
        continue-on-error: true
        timeout-minutes: 1
  test:
    runs-on: linux
    needs: build
    if: \${{ needs.build.outputs.version != '' }}
    continue-on-error: \${{ matrix.node == 18 }}
    concurrency: tests
    steps:
      - run: echo ok
`;

describe('CI workflow files: the supported syntax', () => {
  it('a file using every supported key', () => {
    const wf = ok(FULL);
    assert.equal(wf.name, 'CI');
    assert.deepEqual(wf.on.push?.branches, ['main', 'release/**', '!release/old']);
    assert.deepEqual(wf.on.pull_request?.types, ['opened', 'synchronize']);
    assert.deepEqual(wf.on.workflow_dispatch?.inputs.level, {
      type: 'choice',
      required: false,
      options: ['low', 'high'],
      default: 'low',
    });
    assert.equal(wf.on.workflow_dispatch?.inputs.dry?.default, true);
    assert.equal(wf.on.workflow_dispatch?.inputs.note?.required, true);
    assert.deepEqual(wf.on.schedule, [{ cron: '30 2 * * 1' }]);
    assert.deepEqual(wf.env, { TOP: '1' });
    assert.deepEqual(wf.concurrency, { group: 'ci-${{ weft.ref }}', cancelInProgress: true });
    const [build, test] = wf.jobs;
    assert.equal(build?.line, 28);
    assert.deepEqual(build?.runsOn, ['linux', 'x64']);
    assert.equal(build?.env.FLAG, 'yes');
    assert.equal(build?.timeoutMinutes, 5);
    assert.equal(build?.strategy?.failFast, false);
    assert.equal(build?.strategy?.maxParallel, 2);
    assert.deepEqual(build?.strategy?.axes, { node: [18, 20], os: ['linux'] });
    assert.equal(build?.steps[0]?.uses, 'actions/checkout@v4');
    assert.deepEqual(build?.steps[0]?.with, { 'fetch-depth': '1' });
    const v = build?.steps[1];
    assert.equal(v?.shell, 'sh');
    assert.equal(v?.workingDirectory, 'sub');
    assert.equal(v?.continueOnError, true);
    assert.equal(v?.timeoutMinutes, 1);
    assert.equal(v?.number, 2);
    assert.equal(test?.timeoutMinutes, 360);
    assert.deepEqual(test?.runsOn, ['linux']);
    assert.deepEqual(test?.needs, ['build']);
    assert.equal(test?.continueOnError, '${{ matrix.node == 18 }}');
    assert.deepEqual(test?.concurrency, { group: 'tests', cancelInProgress: false });
  });
  it('on: as a word or a list', () => {
    const wf = ok('on: [push, pull_request, workflow_dispatch]\njobs:\n  a:\n    runs-on: x\n    steps: [{run: "true"}]\n');
    assert.deepEqual(wf.on.push, {});
    assert.deepEqual(wf.on.pull_request?.types, ['opened', 'synchronize', 'reopened']);
    assert.deepEqual(wf.on.workflow_dispatch, { inputs: {} });
    assert.equal(wf.name, FILE);
    assert.ok(ok('on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: "true"\n').on.push);
  });
});

const JOB = 'jobs:\n  a:\n    runs-on: x\n    steps:\n      - run: "true"\n';

describe('CI workflow files: each refusal names the line and key', () => {
  it('YAML that does not parse', () => {
    has('on: push\njobs: [\n', '3: not valid YAML');
    has('on: push\non: push\n' + JOB, '2: not valid YAML: Map keys must be unique');
    assert.deepEqual(errors(''), ['1: the file is empty']);
    has('- a\n', '1: must be a mapping');
    has('x'.repeat(600 * 1024), 'the file is larger than');
  });
  it('top level: unknown keys, missing on and jobs', () => {
    has('on: push\npermissions: read\n' + JOB, '2: permissions: unknown key (allowed here: name, on, env, concurrency, jobs)');
    has(JOB, '1: on: is required');
    has('on: push\n', '1: jobs: is required');
    has('on: push\njobs: {}\n', '2: jobs: must define at least one job');
  });
  it('triggers', () => {
    has('on: release\n' + JOB, "1: on: unknown event 'release'");
    has('on:\n  issues: {}\n' + JOB, "2: on.issues: unknown event 'issues'");
    has('on: schedule\n' + JOB, "needs a list of '- cron:' entries");
    has('on:\n  schedule: daily\n' + JOB, "2: on.schedule: must be a list of '- cron:' entries");
    has("on:\n  schedule:\n    - cron: '* * *'\n" + JOB, "3: on.schedule[0].cron: '* * *' must have five fields");
    has(
      "on:\n  schedule:\n    - cron: '99 * * * *'\n" + JOB,
      "3: on.schedule[0].cron: '99 * * * *' is not a valid cron expression",
    );
    has('on:\n  schedule:\n    - at: 1\n' + JOB, '3: on.schedule[0].at: unknown key');
    has('on:\n  push:\n    branch: main\n' + JOB, '3: on.push.branch: unknown key');
    has(
      'on:\n  push:\n    branches: [a]\n    branches-ignore: [b]\n' + JOB,
      "on.push.branches-ignore: cannot be used with 'branches'",
    );
    has('on:\n  push:\n    paths: [a]\n    paths-ignore: [b]\n' + JOB, "on.push.paths-ignore: cannot be used with 'paths'");
    has('on:\n  pull_request:\n    types: [closed]\n' + JOB, "3: on.pull_request.types: unknown type 'closed'");
    has('on:\n  pull_request:\n    tags: [v1]\n' + JOB, '3: on.pull_request.tags: unknown key');
    has('on:\n  push:\n    branches: {a: 1}\n' + JOB, 'on.push.branches: must be a single value');
    has('on:\n  push:\n    branches: [~]\n' + JOB, 'on.push.branches[0]: must not be empty');
  });
  it('dispatch inputs', () => {
    const d = (input: string) => `on:\n  workflow_dispatch:\n    inputs:\n      x:\n${input}` + JOB;
    has(d('        type: number\n'), "5: on.workflow_dispatch.inputs.x.type: unknown type 'number'");
    has(d('        type: choice\n'), "on.workflow_dispatch.inputs.x.options: a 'choice' input needs options");
    has(d('        options: [a]\n'), "on.workflow_dispatch.inputs.x.options: only a 'choice' input has options");
    has(
      d('        type: boolean\n        default: maybe\n'),
      '6: on.workflow_dispatch.inputs.x.default: must be true or false for a boolean input',
    );
    has(
      d('        type: choice\n        options: [a]\n        default: b\n'),
      "on.workflow_dispatch.inputs.x.default: 'b' is not one of the options",
    );
    has(d('        required: sometimes\n'), '5: on.workflow_dispatch.inputs.x.required: must be true or false');
    has(d('        secret: 1\n'), 'on.workflow_dispatch.inputs.x.secret: unknown key');
    has('on:\n  workflow_dispatch:\n    inputs:\n      "a b": {}\n' + JOB, 'an input name is letters, digits, - and _');
  });
  it('jobs', () => {
    const j = (body: string) => `on: push\njobs:\n  a:\n${body}`;
    has(j('    runs-on: x\n'), '3: jobs.a.steps: is required');
    has(j('    steps: [{run: x}]\n'), '3: jobs.a.runs-on: is required');
    has(j('    runs-on: []\n    steps: [{run: x}]\n'), '4: jobs.a.runs-on: must name at least one label');
    has(j('    runs-on: x\n    steps: []\n'), '5: jobs.a.steps: must be a non-empty list of steps');
    has(
      j('    runs-on: x\n    services: {}\n    steps: [{run: x}]\n'),
      '5: jobs.a.services: unknown key (allowed here: name, runs-on',
    );
    has(j('    runs-on: x\n    needs: [b]\n    steps: [{run: x}]\n'), "3: jobs.a.needs: unknown job 'b'");
    has(j('    runs-on: x\n    needs: a\n    steps: [{run: x}]\n'), 'jobs.a.needs: a job cannot need itself');
    has(
      'on: push\njobs:\n  a:\n    runs-on: x\n    needs: b\n    steps: [{run: x}]\n  b:\n    runs-on: x\n    needs: a\n    steps: [{run: x}]\n',
      'jobs.a.needs: a cycle: a -> b -> a',
    );
    has(
      j('    runs-on: x\n    timeout-minutes: 0\n    steps: [{run: x}]\n'),
      '5: jobs.a.timeout-minutes: must be a number above 0 and at most 10080',
    );
    has(
      j('    runs-on: x\n    continue-on-error: maybe\n    steps: [{run: x}]\n'),
      'jobs.a.continue-on-error: must be true, false or an expression',
    );
    has(j('    runs-on: x\n    if: a ==\n    steps: [{run: x}]\n'), '5: jobs.a.if: invalid expression: expected a value');
    has(
      j('    runs-on: x\n    env:\n      "A-B": 1\n    steps: [{run: x}]\n'),
      '6: jobs.a.env.A-B: an environment variable name is letters, digits and _',
    );
    has(
      j('    runs-on: x\n    concurrency: {cancel-in-progress: true}\n    steps: [{run: x}]\n'),
      'jobs.a.concurrency.group: is required',
    );
    has('on: push\njobs:\n  "1 b":\n    runs-on: x\n    steps: [{run: x}]\n', '3: jobs.1 b: a job id is letters');
    has(
      j('    runs-on: x\n    outputs:\n      v: ${{ steps.x.outputs.y\n    steps: [{run: x}]\n'),
      "jobs.a.outputs.v: invalid expression: '${{' without a closing '}}'",
    );
  });
  it('strategy and matrix', () => {
    const m = (body: string) => `on: push\njobs:\n  a:\n    runs-on: x\n    steps: [{run: x}]\n    strategy:\n${body}`;
    has(m('      fail-fast: false\n'), 'jobs.a.strategy.matrix: is required');
    has(m('      matrix:\n        os: linux\n'), '8: jobs.a.strategy.matrix.os: must be a non-empty list of values');
    has(
      m('      matrix:\n        os: [a]\n        include: {a: 1}\n'),
      'jobs.a.strategy.matrix.include: must be a list of mappings',
    );
    has(m('      matrix:\n        os: [a, ~]\n'), 'jobs.a.strategy.matrix.os[1]: must not be empty');
    has(
      m('      max-parallel: 0\n      matrix: {os: [a]}\n'),
      'jobs.a.strategy.max-parallel: must be a number above 0 and at most 256',
    );
    has(m('      fail-fast: 1\n      matrix: {os: [a]}\n'), 'jobs.a.strategy.fail-fast: must be true or false');
  });
  it('steps', () => {
    const s = (body: string) => `on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n${body}`;
    has(s('      - name: nothing\n'), "6: jobs.a.steps[0]: a step needs 'run' or 'uses'");
    has(s('      - run: x\n        uses: y\n'), "jobs.a.steps[0]: a step has 'run' or 'uses', not both");
    has(s('      - run: x\n        with: {a: 1}\n'), "jobs.a.steps[0].with: only a 'uses' step takes 'with'");
    has(s('      - run: x\n        shell: pwsh\n'), "7: jobs.a.steps[0].shell: unknown shell 'pwsh' (supported: bash, sh)");
    has(s('      - run: x\n        runs: y\n'), '7: jobs.a.steps[0].runs: unknown key');
    has(s('      - run: x\n        id: "a b"\n'), 'jobs.a.steps[0].id: an id is letters');
    has(s('      - run: x\n        id: a\n      - run: y\n        id: a\n'), "jobs.a.steps: two steps have the id 'a'");
    has(s('      - run: echo ${{ nope( }}\n'), '6: jobs.a.steps[0].run: invalid expression');
    has(s('      - run: x\n        timeout-minutes: -1\n'), 'jobs.a.steps[0].timeout-minutes: must be a number above 0');
    has(s('      - run: [x]\n'), 'jobs.a.steps[0].run: must be a single value');
    has(s('      - run:\n'), 'jobs.a.steps[0].run: must not be empty');
  });
  it('errors are sorted by line and formatted as file:line: key: message', () => {
    const r = parseWorkflow(FILE, 'on: push\nfoo: 1\njobs:\n  a:\n    runs-on: x\n    bar: 2\n    steps: [{run: x}]\n');
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.deepEqual(
        r.errors.map((e) => [e.line, e.key]),
        [
          [2, 'foo'],
          [6, 'jobs.a.bar'],
        ],
      );
      assert.match(formatError(r.errors[0]!), /^\.weft\/workflows\/ci\.yml:2: foo: unknown key/);
    }
  });
});

describe('CI triggers', () => {
  const wf = ok(FULL);
  it('filter lists: globs, ** and ! exclusions, the last match decides', () => {
    assert.equal(matchesList(['feature/*'], 'feature/a'), true);
    assert.equal(matchesList(['feature/*'], 'feature/a/b'), false);
    assert.equal(matchesList(['feature/**'], 'feature/a/b'), true);
    assert.equal(matchesList(['**', '!main'], 'main'), false);
    assert.equal(matchesList(['**', '!main', 'main'], 'main'), true);
    assert.equal(matchesList(['*.md'], '.hidden.md'), true);
  });
  it('push: branches, paths, tags', () => {
    assert.equal(matchesPush(wf, 'refs/heads/main', ['src/a.ts']), true);
    assert.equal(matchesPush(wf, 'refs/heads/main', ['src/doc/readme.md']), false);
    assert.equal(matchesPush(wf, 'refs/heads/main', ['docs/a.ts']), false);
    assert.equal(matchesPush(wf, 'refs/heads/main', undefined), true);
    assert.equal(matchesPush(wf, 'refs/heads/release/1/2', ['src/x']), true);
    assert.equal(matchesPush(wf, 'refs/heads/release/old', ['src/x']), false);
    assert.equal(matchesPush(wf, 'refs/heads/dev', ['src/x']), false);
    assert.equal(matchesPush(wf, 'refs/tags/v1', ['src/x']), false, 'branches only: tags do not run');
    const tags = ok("on:\n  push:\n    tags: ['v*']\n    paths-ignore: ['docs/**']\n" + JOB);
    assert.equal(matchesPush(tags, 'refs/tags/v1.0', ['docs/x']), true, 'paths do not filter tags');
    assert.equal(matchesPush(tags, 'refs/tags/x', []), false);
    assert.equal(matchesPush(tags, 'refs/heads/main', []), false, 'tags only: branches do not run');
    const ignore = ok("on:\n  push:\n    branches-ignore: ['wip/**']\n    paths-ignore: ['docs/**']\n" + JOB);
    assert.equal(matchesPush(ignore, 'refs/heads/wip/a', ['src/x']), false);
    assert.equal(matchesPush(ignore, 'refs/heads/main', ['docs/a', 'docs/b']), false);
    assert.equal(matchesPush(ignore, 'refs/heads/main', ['docs/a', 'src/b']), true);
    assert.equal(matchesPush(ignore, 'refs/tags/v1', []), false, 'branches-ignore only: tags do not run');
    assert.equal(matchesPush(ok('on: pull_request\n' + JOB), 'refs/heads/main', []), false);
  });
  it('pull_request: types, base branches, paths', () => {
    assert.equal(matchesPull(wf, 'opened', 'main', undefined), true);
    assert.equal(matchesPull(wf, 'reopened', 'main', undefined), false);
    assert.equal(matchesPull(wf, 'synchronize', 'dev', undefined), false);
    const paths = ok("on:\n  pull_request:\n    paths: ['src/**']\n" + JOB);
    assert.equal(matchesPull(paths, 'reopened', 'x', ['src/a']), true);
    assert.equal(matchesPull(paths, 'opened', 'x', ['README']), false);
  });
  it('dispatch inputs: defaults, types, choices, required, unknown', () => {
    assert.deepEqual(dispatchInputs(wf, { note: 'hi' }), { level: 'low', dry: true, note: 'hi' });
    assert.deepEqual(dispatchInputs(wf, { note: 'x', dry: 'false', level: 'high' }), { level: 'high', dry: false, note: 'x' });
    assert.throws(() => dispatchInputs(wf, {}), /input 'note' is required/);
    assert.throws(() => dispatchInputs(wf, { note: '' }), /input 'note' is required/);
    assert.throws(() => dispatchInputs(wf, { note: 'x', level: 'mid' }), /input 'level' must be one of: low, high/);
    assert.throws(() => dispatchInputs(wf, { note: 'x', dry: 'yes' }), /input 'dry' must be true or false/);
    assert.throws(() => dispatchInputs(wf, { note: 3 }), /input 'note' must be a string/);
    assert.throws(() => dispatchInputs(wf, { note: 'x', other: 'y' }), /unknown input 'other'/);
    assert.throws(() => dispatchInputs(ok('on: push\n' + JOB), {}), /has no 'workflow_dispatch' trigger/);
  });
  it('schedule: the next time in UTC', () => {
    assert.equal(nextSchedule(wf, new Date('2026-11-28T00:00:00Z'))?.toISOString(), '2026-11-30T02:30:00.000Z');
    assert.equal(nextSchedule(ok('on: push\n' + JOB), new Date()), null);
  });
});

describe('CI plans: matrix, names, needs, outputs, concurrency', () => {
  const axes = (a: Record<string, Array<string | number | boolean>>, include: any[] = [], exclude: any[] = []) =>
    expandMatrix({ axes: a, include, exclude, failFast: true });
  it('the product of the axes in file order', () => {
    assert.deepEqual(axes({ os: ['l', 'm'], n: [1, 2] }), [
      { os: 'l', n: 1 },
      { os: 'l', n: 2 },
      { os: 'm', n: 1 },
      { os: 'm', n: 2 },
    ]);
  });
  it('exclude on partial matches; include extends or adds', () => {
    assert.deepEqual(axes({ os: ['l', 'm'], n: [1, 2] }, [], [{ os: 'm', n: 1 }]).length, 3);
    assert.deepEqual(axes({ os: ['l', 'm'], n: [1, 2] }, [], [{ os: 'm' }]), [
      { os: 'l', n: 1 },
      { os: 'l', n: 2 },
    ]);
    // GitHub's documented example
    assert.deepEqual(
      axes({ fruit: ['apple', 'pear'], animal: ['cat', 'dog'] }, [
        { color: 'green' },
        { color: 'pink', animal: 'cat' },
        { fruit: 'apple', shape: 'circle' },
        { fruit: 'banana' },
        { fruit: 'banana', animal: 'cat' },
      ]),
      [
        { fruit: 'apple', animal: 'cat', color: 'pink', shape: 'circle' },
        { fruit: 'apple', animal: 'dog', color: 'green', shape: 'circle' },
        { fruit: 'pear', animal: 'cat', color: 'pink' },
        { fruit: 'pear', animal: 'dog', color: 'green' },
        { fruit: 'banana' },
        { fruit: 'banana', animal: 'cat' },
      ],
    );
    assert.deepEqual(axes({}, [{ a: 1 }, { a: 2 }]), [{ a: 1 }, { a: 2 }]);
  });
  it('limits: more than 256 combinations, none left', () => {
    const many = Array.from({ length: 17 }, (_, i) => i);
    assert.throws(() => axes({ a: many, b: many }), /the matrix has 289 combinations \(at most 256\)/);
    assert.throws(() => axes({ a: many, b: many, c: many }), /more than 256 combinations/);
    assert.throws(() => axes({ a: [1] }, [], [{ a: 1 }]), /no combinations left after exclude/);
  });
  it('names and status contexts', () => {
    const wf = ok(FULL);
    const [build, test] = wf.jobs;
    const c = { contexts: { matrix: { node: 20, os: 'linux' } } };
    assert.equal(jobInstanceName(build!, { node: 20, os: 'linux' }, c), 'Build (20, linux)');
    assert.equal(jobInstanceName(test!, null, c), 'test');
    assert.equal(statusContext('CI', 'Build (20, linux)'), 'CI / Build (20, linux)');
    assert.equal(statusContext('W'.repeat(300), 'j').length, 255);
  });
  it('needs, if and outputs', () => {
    const wf = ok(FULL);
    const [build, test] = wf.jobs;
    assert.deepEqual(
      jobOrder([test!, build!]).map((j) => j.id),
      ['build', 'test'],
    );
    const base = { contexts: { weft: {} } };
    assert.equal(shouldRunJob(test!, { build: { result: 'success', outputs: { version: '1' } } }, false, base), true);
    assert.equal(shouldRunJob(test!, { build: { result: 'success', outputs: { version: '' } } }, false, base), false);
    assert.equal(shouldRunJob(test!, { build: { result: 'failure', outputs: { version: '1' } } }, false, base), false);
    const always = ok('on: push\njobs:\n  a:\n    runs-on: x\n    if: always()\n    steps: [{run: x}]\n').jobs[0]!;
    assert.equal(shouldRunJob(always, { b: { result: 'failure', outputs: {} } }, true, base), true);
    const onFail = ok(
      "on: push\njobs:\n  a:\n    runs-on: x\n    if: failure() && needs.b.result == 'failure'\n    steps: [{run: x}]\n",
    ).jobs[0]!;
    assert.equal(shouldRunJob(onFail, { b: { result: 'failure', outputs: {} } }, false, base), true);
    assert.equal(shouldRunJob(onFail, { b: { result: 'success', outputs: {} } }, false, base), false);
    assert.deepEqual(jobOutputs(build!, { contexts: { steps: { v: { outputs: { version: '1.0' } } } } }), { version: '1.0' });
  });
  it('concurrency groups', () => {
    const wf = ok(FULL);
    const c = { contexts: { weft: { ref: 'refs/heads/main' } } };
    assert.deepEqual(evaluateConcurrency(wf.concurrency, c), { group: 'ci-refs/heads/main', cancel: true });
    assert.deepEqual(evaluateConcurrency(wf.jobs[1]!.concurrency, c), { group: 'tests', cancel: false });
    assert.equal(evaluateConcurrency(undefined, c), null);
    assert.deepEqual(evaluateConcurrency({ group: 'g', cancelInProgress: "${{ weft.ref == 'refs/heads/main' }}" }, c), {
      group: 'g',
      cancel: true,
    });
  });
});
