/**
 * Reads a workflow file: YAML through `yaml` (with line numbers), then the validator of the
 * supported subset. Every refusal names the file, the line and the key (`jobs.build.steps[1].run`).
 */
import { CronExpressionParser } from 'cron-parser';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node as YamlNode } from 'yaml';
import { checkCondition, checkTemplate, ExpressionError } from './expr.ts';
import {
  DEFAULT_TIMEOUT_MINUTES,
  type Concurrency,
  type DispatchInput,
  type Job,
  type MatrixRow,
  type MatrixValue,
  PULL_TYPES,
  type PullType,
  type RefFilters,
  type Step,
  type Strategy,
  type Triggers,
  type Workflow,
  type WorkflowError,
} from './model.ts';

export type ParseResult = { ok: true; workflow: Workflow } | { ok: false; errors: WorkflowError[] };

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const JOB_ID = /^[A-Za-z_][A-Za-z0-9_-]*$/;

class Reader {
  readonly errors: WorkflowError[] = [];
  constructor(
    readonly file: string,
    readonly lc: LineCounter,
  ) {}

  line(node: YamlNode | null | undefined): number {
    const at = node?.range?.[0];
    return at === undefined ? 1 : this.lc.linePos(at).line;
  }
  fail(node: YamlNode | null | undefined, key: string, message: string): undefined {
    this.errors.push({ file: this.file, line: this.line(node), key, message });
    return undefined;
  }

  /** A mapping's entries (key node, key, value), refusing keys not in `allowed`. */
  map(node: unknown, key: string, allowed?: readonly string[]): Array<[YamlNode, string, YamlNode | null]> | undefined {
    if (!isMap(node)) return this.fail(node as YamlNode, key, 'must be a mapping');
    const out: Array<[YamlNode, string, YamlNode | null]> = [];
    for (const pair of node.items) {
      const k = pair.key as YamlNode;
      if (!isScalar(k) || (typeof k.value !== 'string' && typeof k.value !== 'number')) {
        this.fail(k, key, 'keys must be text');
        continue;
      }
      const name = String(k.value);
      const path = key ? `${key}.${name}` : name;
      if (allowed && !allowed.includes(name)) {
        this.fail(k, path, `unknown key (allowed here: ${allowed.join(', ')})`);
        continue;
      }
      out.push([k, name, (pair.value as YamlNode | null) ?? null]);
    }
    return out;
  }

  scalar(node: YamlNode | null, key: string): string | number | boolean | null | undefined {
    if (node === null) return null;
    if (!isScalar(node)) return this.fail(node, key, 'must be a single value');
    const v = node.value;
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
    return this.fail(node, key, 'must be a single value');
  }

  /** Text; numbers and booleans are taken as their text (as GitHub does for env values). */
  text(node: YamlNode | null, key: string, opts: { template?: boolean } = {}): string | undefined {
    const v = this.scalar(node, key);
    if (v === undefined) return undefined;
    if (v === null) return this.fail(node, key, 'must not be empty');
    const s = String(v);
    if (opts.template !== false) this.template(node, key, s);
    return s;
  }

  template(node: YamlNode | null, key: string, s: string): void {
    try {
      checkTemplate(s);
    } catch (e) {
      if (e instanceof ExpressionError) this.fail(node, key, `invalid expression: ${e.message}`);
      else throw e;
    }
  }

  condition(node: YamlNode | null, key: string): string | undefined {
    const v = this.scalar(node, key);
    if (v === undefined) return undefined;
    if (v === null) return this.fail(node, key, 'must not be empty');
    const s = String(v);
    try {
      checkCondition(s);
    } catch (e) {
      if (e instanceof ExpressionError) return this.fail(node, key, `invalid expression: ${e.message}`);
      throw e;
    }
    return s;
  }

  bool(node: YamlNode | null, key: string): boolean | undefined {
    const v = this.scalar(node, key);
    if (typeof v === 'boolean') return v;
    if (v !== undefined) this.fail(node, key, 'must be true or false');
    return undefined;
  }

  /** `true`/`false` or an expression text. */
  boolOrExpr(node: YamlNode | null, key: string): boolean | string | undefined {
    const v = this.scalar(node, key);
    if (typeof v === 'boolean') return v;
    if (typeof v === 'string' && v.includes('${{')) {
      this.template(node, key, v);
      return v;
    }
    if (v !== undefined) this.fail(node, key, "must be true, false or an expression '${{ … }}'");
    return undefined;
  }

  positive(node: YamlNode | null, key: string, max: number): number | undefined {
    const v = this.scalar(node, key);
    if (typeof v === 'number' && v > 0 && v <= max && Number.isFinite(v)) return v;
    if (v !== undefined) this.fail(node, key, `must be a number above 0 and at most ${max}`);
    return undefined;
  }

  /** One text or a list of texts. */
  list(node: YamlNode | null, key: string, opts: { template?: boolean } = {}): string[] | undefined {
    if (isSeq(node)) {
      const out: string[] = [];
      node.items.forEach((item, i) => {
        const s = this.text(item as YamlNode, `${key}[${i}]`, opts);
        if (s !== undefined) out.push(s);
      });
      return out;
    }
    const s = this.text(node, key, opts);
    return s === undefined ? undefined : [s];
  }

  env(node: YamlNode | null, key: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, name, v] of this.map(node, key) ?? []) {
      if (!SECRET_NAME.test(name)) {
        this.fail(k, `${key}.${name}`, 'an environment variable name is letters, digits and _');
        continue;
      }
      const value = v === null ? '' : this.text(v, `${key}.${name}`);
      if (value !== undefined) out[name] = value;
    }
    return out;
  }
}

const FILTER_KEYS = ['branches', 'branches-ignore', 'tags', 'tags-ignore', 'paths', 'paths-ignore'] as const;

function filters(r: Reader, entries: Array<[YamlNode, string, YamlNode | null]>, key: string): RefFilters {
  const f: RefFilters = {};
  const names: Record<string, keyof RefFilters> = {
    branches: 'branches',
    'branches-ignore': 'branchesIgnore',
    tags: 'tags',
    'tags-ignore': 'tagsIgnore',
    paths: 'paths',
    'paths-ignore': 'pathsIgnore',
  };
  for (const [, name, v] of entries) {
    if (name === 'types') continue;
    const list = r.list(v, `${key}.${name}`, { template: false });
    const field = names[name];
    if (list && field) f[field] = list;
  }
  const pairs: Array<[keyof RefFilters, keyof RefFilters, string]> = [
    ['branches', 'branchesIgnore', 'branches'],
    ['tags', 'tagsIgnore', 'tags'],
    ['paths', 'pathsIgnore', 'paths'],
  ];
  for (const [a, b, label] of pairs) {
    if (f[a] && f[b]) {
      const at = entries.find(([, n]) => n === `${label}-ignore`);
      r.fail(at?.[0], `${key}.${label}-ignore`, `cannot be used with '${label}' (use '!' patterns in '${label}')`);
    }
  }
  return f;
}

const EVENTS = ['push', 'pull_request', 'workflow_dispatch', 'schedule'] as const;

function triggers(r: Reader, node: YamlNode | null): Triggers {
  const on: Triggers = {};
  if (node === null) {
    r.fail(node, 'on', 'must name at least one event');
    return on;
  }
  const named = (name: string, at: YamlNode, key: string): boolean => {
    if ((EVENTS as readonly string[]).includes(name)) return true;
    r.fail(at, key, `unknown event '${name}' (supported: ${EVENTS.join(', ')})`);
    return false;
  };
  if (isScalar(node) || isSeq(node)) {
    for (const name of r.list(node, 'on', { template: false }) ?? []) {
      if (!named(name, node, 'on')) continue;
      if (name === 'schedule') r.fail(node, 'on', "'schedule' needs a list of '- cron:' entries");
      else if (name === 'pull_request') on.pull_request = { types: [...PULL_TYPES] };
      else if (name === 'workflow_dispatch') on.workflow_dispatch = { inputs: {} };
      else on.push = {};
    }
    return on;
  }
  for (const [k, name, v] of r.map(node, 'on') ?? []) {
    if (!named(name, k, `on.${name}`)) continue;
    const key = `on.${name}`;
    if (name === 'push') {
      on.push = v === null ? {} : filters(r, r.map(v, key, FILTER_KEYS) ?? [], key);
    } else if (name === 'pull_request') {
      const entries = v === null ? [] : (r.map(v, key, ['branches', 'branches-ignore', 'paths', 'paths-ignore', 'types']) ?? []);
      const types: PullType[] = [];
      const typesNode = entries.find(([, n]) => n === 'types');
      if (typesNode) {
        for (const t of r.list(typesNode[2], `${key}.types`, { template: false }) ?? []) {
          if ((PULL_TYPES as string[]).includes(t)) types.push(t as PullType);
          else r.fail(typesNode[2], `${key}.types`, `unknown type '${t}' (supported: ${PULL_TYPES.join(', ')})`);
        }
      }
      on.pull_request = { ...filters(r, entries, key), types: typesNode ? types : [...PULL_TYPES] };
    } else if (name === 'workflow_dispatch') {
      on.workflow_dispatch = { inputs: v === null ? {} : dispatchInputs(r, v, key) };
    } else {
      if (!isSeq(v)) {
        r.fail(v ?? k, key, "must be a list of '- cron:' entries");
        continue;
      }
      on.schedule = [];
      v.items.forEach((item, i) => {
        const ikey = `${key}[${i}]`;
        for (const [, , cv] of r.map(item, ikey, ['cron']) ?? []) {
          const cron = r.text(cv, `${ikey}.cron`, { template: false });
          if (cron === undefined) continue;
          if (cron.trim().split(/\s+/).length !== 5) {
            r.fail(cv, `${ikey}.cron`, `'${cron}' must have five fields (minute hour day month weekday)`);
            continue;
          }
          try {
            CronExpressionParser.parse(cron, { tz: 'UTC' });
            on.schedule?.push({ cron });
          } catch (e) {
            r.fail(cv, `${ikey}.cron`, `'${cron}' is not a valid cron expression (${(e as Error).message})`);
          }
        }
      });
    }
  }
  return on;
}

function dispatchInputs(r: Reader, node: YamlNode, key: string): Record<string, DispatchInput> {
  const out: Record<string, DispatchInput> = {};
  const top = r.map(node, key, ['inputs']) ?? [];
  for (const [, , inputsNode] of top) {
    for (const [k, name, v] of r.map(inputsNode, `${key}.inputs`) ?? []) {
      const ikey = `${key}.inputs.${name}`;
      if (!JOB_ID.test(name)) {
        r.fail(k, ikey, 'an input name is letters, digits, - and _');
        continue;
      }
      const input: DispatchInput = { type: 'string', required: false };
      let defNode: YamlNode | null = null;
      for (const [fk, field, fv] of (v === null
        ? []
        : r.map(v, ikey, ['description', 'required', 'default', 'type', 'options'])) ?? []) {
        if (field === 'description') input.description = r.text(fv, `${ikey}.description`, { template: false });
        else if (field === 'required') input.required = r.bool(fv, `${ikey}.required`) ?? false;
        else if (field === 'default') defNode = fv ?? fk;
        else if (field === 'type') {
          const t = r.text(fv, `${ikey}.type`, { template: false });
          if (t === 'string' || t === 'boolean' || t === 'choice') input.type = t;
          else if (t !== undefined) r.fail(fv, `${ikey}.type`, `unknown type '${t}' (supported: string, boolean, choice)`);
        } else input.options = r.list(fv, `${ikey}.options`, { template: false });
      }
      if (input.type === 'choice' && !input.options?.length) r.fail(v ?? k, `${ikey}.options`, "a 'choice' input needs options");
      if (input.type !== 'choice' && input.options) r.fail(v ?? k, `${ikey}.options`, "only a 'choice' input has options");
      if (defNode) {
        const d = r.scalar(defNode, `${ikey}.default`);
        if (input.type === 'boolean') {
          if (typeof d === 'boolean') input.default = d;
          else if (d !== undefined) r.fail(defNode, `${ikey}.default`, 'must be true or false for a boolean input');
        } else if (d !== undefined && d !== null) {
          input.default = String(d);
          if (input.type === 'choice' && input.options && !input.options.includes(input.default))
            r.fail(defNode, `${ikey}.default`, `'${input.default}' is not one of the options`);
        }
      }
      out[name] = input;
    }
  }
  return out;
}

function concurrency(r: Reader, node: YamlNode | null, key: string): Concurrency | undefined {
  if (isScalar(node)) {
    const group = r.text(node, key);
    return group === undefined ? undefined : { group, cancelInProgress: false };
  }
  let group: string | undefined;
  let cancelInProgress: boolean | string = false;
  for (const [, name, v] of r.map(node, key, ['group', 'cancel-in-progress']) ?? []) {
    if (name === 'group') group = r.text(v, `${key}.group`);
    else cancelInProgress = r.boolOrExpr(v, `${key}.cancel-in-progress`) ?? false;
  }
  if (group === undefined) {
    r.fail(node, `${key}.group`, 'is required');
    return undefined;
  }
  return { group, cancelInProgress };
}

const STEP_KEYS = [
  'name',
  'id',
  'run',
  'uses',
  'with',
  'shell',
  'working-directory',
  'env',
  'if',
  'continue-on-error',
  'timeout-minutes',
] as const;

function step(r: Reader, node: YamlNode, key: string, number: number): Step {
  const s: Step = { number, line: r.line(node), with: {}, shell: 'bash', env: {}, continueOnError: false };
  for (const [, name, v] of r.map(node, key, STEP_KEYS) ?? []) {
    const k = `${key}.${name}`;
    switch (name) {
      case 'name':
        s.name = r.text(v, k);
        break;
      case 'id': {
        const id = r.text(v, k, { template: false });
        if (id !== undefined && !JOB_ID.test(id)) r.fail(v, k, 'an id is letters, digits, - and _, starting with a letter or _');
        else s.id = id;
        break;
      }
      case 'run':
        s.run = r.text(v, k);
        break;
      case 'uses':
        s.uses = r.text(v, k, { template: false });
        break;
      case 'with':
        for (const [, wn, wv] of r.map(v, k) ?? []) {
          const value = wv === null ? '' : r.text(wv, `${k}.${wn}`);
          if (value !== undefined) s.with[wn] = value;
        }
        break;
      case 'shell': {
        const sh = r.text(v, k, { template: false });
        if (sh === 'bash' || sh === 'sh') s.shell = sh;
        else if (sh !== undefined) r.fail(v, k, `unknown shell '${sh}' (supported: bash, sh)`);
        break;
      }
      case 'working-directory':
        s.workingDirectory = r.text(v, k);
        break;
      case 'env':
        s.env = r.env(v, k);
        break;
      case 'if':
        s.if = r.condition(v, k);
        break;
      case 'continue-on-error':
        s.continueOnError = r.boolOrExpr(v, k) ?? false;
        break;
      case 'timeout-minutes':
        s.timeoutMinutes = r.positive(v, k, 10_080);
        break;
    }
  }
  if (s.run === undefined && s.uses === undefined) r.fail(node, key, "a step needs 'run' or 'uses'");
  if (s.run !== undefined && s.uses !== undefined) r.fail(node, key, "a step has 'run' or 'uses', not both");
  if (s.uses === undefined && Object.keys(s.with).length > 0) r.fail(node, `${key}.with`, "only a 'uses' step takes 'with'");
  return s;
}

function matrixValue(r: Reader, node: YamlNode | null, key: string): MatrixValue | undefined {
  const v = r.scalar(node, key);
  if (v === null) return r.fail(node, key, 'must not be empty');
  return v;
}

function matrixRows(r: Reader, node: YamlNode | null, key: string): MatrixRow[] {
  if (!isSeq(node)) {
    r.fail(node, key, 'must be a list of mappings');
    return [];
  }
  return node.items.map((item, i) => {
    const row: MatrixRow = {};
    for (const [, name, v] of r.map(item, `${key}[${i}]`) ?? []) {
      const value = matrixValue(r, v, `${key}[${i}].${name}`);
      if (value !== undefined) row[name] = value;
    }
    return row;
  });
}

function strategy(r: Reader, node: YamlNode | null, key: string): Strategy | undefined {
  const s: Strategy = { axes: {}, include: [], exclude: [], failFast: true };
  let sawMatrix = false;
  for (const [k, name, v] of r.map(node, key, ['matrix', 'fail-fast', 'max-parallel']) ?? []) {
    if (name === 'fail-fast') s.failFast = r.bool(v, `${key}.fail-fast`) ?? true;
    else if (name === 'max-parallel') s.maxParallel = r.positive(v, `${key}.max-parallel`, 256);
    else {
      sawMatrix = true;
      for (const [ak, axis, av] of r.map(v ?? k, `${key}.matrix`) ?? []) {
        const akey = `${key}.matrix.${axis}`;
        if (axis === 'include') s.include = matrixRows(r, av, akey);
        else if (axis === 'exclude') s.exclude = matrixRows(r, av, akey);
        else if (!isSeq(av) || av.items.length === 0) r.fail(av ?? ak, akey, 'must be a non-empty list of values');
        else {
          const values: MatrixValue[] = [];
          av.items.forEach((item, i) => {
            const value = matrixValue(r, item as YamlNode, `${akey}[${i}]`);
            if (value !== undefined) values.push(value);
          });
          s.axes[axis] = values;
        }
      }
    }
  }
  if (!sawMatrix) {
    r.fail(node, `${key}.matrix`, 'is required');
    return undefined;
  }
  return s;
}

const JOB_KEYS = [
  'name',
  'runs-on',
  'needs',
  'if',
  'env',
  'timeout-minutes',
  'continue-on-error',
  'strategy',
  'outputs',
  'concurrency',
  'steps',
] as const;

function job(r: Reader, keyNode: YamlNode, id: string, node: YamlNode | null): Job {
  const key = `jobs.${id}`;
  const j: Job = {
    id,
    line: r.line(keyNode),
    runsOn: [],
    needs: [],
    env: {},
    timeoutMinutes: DEFAULT_TIMEOUT_MINUTES,
    continueOnError: false,
    outputs: {},
    steps: [],
  };
  if (!JOB_ID.test(id)) r.fail(keyNode, key, 'a job id is letters, digits, - and _, starting with a letter or _');
  let sawRunsOn = false;
  let sawSteps = false;
  for (const [, name, v] of r.map(node, key, JOB_KEYS) ?? []) {
    const k = `${key}.${name}`;
    switch (name) {
      case 'name':
        j.name = r.text(v, k);
        break;
      case 'runs-on':
        sawRunsOn = true;
        j.runsOn = r.list(v, k) ?? [];
        if (j.runsOn.length === 0 && isSeq(v)) r.fail(v, k, 'must name at least one label');
        break;
      case 'needs':
        j.needs = r.list(v, k, { template: false }) ?? [];
        break;
      case 'if':
        j.if = r.condition(v, k);
        break;
      case 'env':
        j.env = r.env(v, k);
        break;
      case 'timeout-minutes':
        j.timeoutMinutes = r.positive(v, k, 10_080) ?? DEFAULT_TIMEOUT_MINUTES;
        break;
      case 'continue-on-error':
        j.continueOnError = r.boolOrExpr(v, k) ?? false;
        break;
      case 'strategy':
        j.strategy = strategy(r, v, k);
        break;
      case 'outputs':
        for (const [, on, ov] of r.map(v, k) ?? []) {
          const value = r.text(ov, `${k}.${on}`);
          if (value !== undefined) j.outputs[on] = value;
        }
        break;
      case 'concurrency':
        j.concurrency = concurrency(r, v, k);
        break;
      case 'steps':
        sawSteps = true;
        if (!isSeq(v) || v.items.length === 0) r.fail(v, k, 'must be a non-empty list of steps');
        else v.items.forEach((item, i) => j.steps.push(step(r, item as YamlNode, `${k}[${i}]`, i + 1)));
        break;
    }
  }
  if (!sawRunsOn) r.fail(keyNode, `${key}.runs-on`, 'is required');
  if (!sawSteps) r.fail(keyNode, `${key}.steps`, 'is required');
  const ids = new Set<string>();
  for (const s of j.steps) {
    if (s.id === undefined) continue;
    if (ids.has(s.id)) r.fail(node, `${key}.steps`, `two steps have the id '${s.id}'`);
    ids.add(s.id);
  }
  return j;
}

/** Unknown `needs` and cycles, reported at the job that names them. */
function checkNeeds(r: Reader, jobs: Job[]): void {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  for (const j of jobs) {
    for (const n of j.needs) {
      if (!byId.has(n)) r.errors.push({ file: r.file, line: j.line, key: `jobs.${j.id}.needs`, message: `unknown job '${n}'` });
      else if (n === j.id)
        r.errors.push({ file: r.file, line: j.line, key: `jobs.${j.id}.needs`, message: 'a job cannot need itself' });
    }
  }
  const state = new Map<string, 1 | 2>();
  const visit = (j: Job, path: string[]): boolean => {
    if (state.get(j.id) === 2) return false;
    if (state.get(j.id) === 1) {
      const cycle = [...path.slice(path.indexOf(j.id)), j.id];
      r.errors.push({ file: r.file, line: j.line, key: `jobs.${j.id}.needs`, message: `a cycle: ${cycle.join(' -> ')}` });
      return true;
    }
    state.set(j.id, 1);
    for (const n of j.needs) {
      const d = byId.get(n);
      if (d && d.id !== j.id && visit(d, [...path, j.id])) return true;
    }
    state.set(j.id, 2);
    return false;
  };
  for (const j of jobs) if (visit(j, [])) break;
}

export const MAX_WORKFLOW_BYTES = 512 * 1024;

/** Parses and validates one workflow file. */
export function parseWorkflow(file: string, text: string): ParseResult {
  const lc = new LineCounter();
  const r = new Reader(file, lc);
  if (Buffer.byteLength(text) > MAX_WORKFLOW_BYTES) {
    return { ok: false, errors: [{ file, line: 1, key: '', message: `the file is larger than ${MAX_WORKFLOW_BYTES} bytes` }] };
  }
  const doc = parseDocument(text, { lineCounter: lc, uniqueKeys: true, prettyErrors: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((e) => ({
        file,
        line: e.linePos?.[0]?.line ?? 1,
        key: '',
        message: `not valid YAML: ${(e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '')}`,
      })),
    };
  }
  const root = doc.contents as YamlNode | null;
  if (root === null) return { ok: false, errors: [{ file, line: 1, key: '', message: 'the file is empty' }] };
  const wf: Workflow = { path: file, name: file, on: {}, env: {}, jobs: [] };
  let sawOn = false;
  let sawJobs = false;
  for (const [k, name, v] of r.map(root, '', ['name', 'on', 'env', 'concurrency', 'jobs']) ?? []) {
    switch (name) {
      case 'name':
        wf.name = r.text(v, 'name', { template: false }) ?? file;
        break;
      case 'on':
        sawOn = true;
        wf.on = triggers(r, v ?? null);
        break;
      case 'env':
        wf.env = r.env(v, 'env');
        break;
      case 'concurrency':
        wf.concurrency = concurrency(r, v, 'concurrency');
        break;
      case 'jobs':
        sawJobs = true;
        for (const [jk, id, jv] of r.map(v ?? k, 'jobs') ?? []) wf.jobs.push(job(r, jk, id, jv));
        if (wf.jobs.length === 0 && r.errors.length === 0) r.fail(v ?? k, 'jobs', 'must define at least one job');
        break;
    }
  }
  if (isMap(root)) {
    if (!sawOn) r.fail(root, 'on', 'is required');
    if (!sawJobs) r.fail(root, 'jobs', 'is required');
  }
  checkNeeds(r, wf.jobs);
  if (r.errors.length > 0) return { ok: false, errors: r.errors.sort((a, b) => a.line - b.line) };
  return { ok: true, workflow: wf };
}
