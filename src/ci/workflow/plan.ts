/**
 * From a workflow to the jobs of a run: matrix expansion (include/exclude as GitHub does it),
 * names with the matrix values, `needs` readiness and results, `if`, outputs and concurrency
 * groups.
 */
import { evaluateCondition, type ExprContext, interpolate, interpolateText, toText, truthy, type Value } from './expr.ts';
import { type Concurrency, type Job, MAX_MATRIX, type MatrixRow, type Strategy } from './model.ts';

export class PlanError extends Error {}

const sameValue = (a: unknown, b: unknown) => a === b;

/**
 * Every combination of a matrix: the product of its axes (in file order), minus each row that
 * matches an `exclude` entry on all that entry's keys, then each `include` entry merged into
 * every combination whose original values it does not change, or added as its own combination
 * when it fits none. Refused above 256 combinations.
 */
export function expandMatrix(s: Strategy): MatrixRow[] {
  const axes = Object.entries(s.axes);
  let rows: MatrixRow[] = axes.length ? [{}] : [];
  for (const [key, values] of axes) {
    const next: MatrixRow[] = [];
    for (const row of rows) for (const v of values) next.push({ ...row, [key]: v });
    rows = next;
    if (rows.length > MAX_MATRIX * 4) throw new PlanError(`the matrix has more than ${MAX_MATRIX} combinations`);
  }
  rows = rows.filter((row) => !s.exclude.some((ex) => Object.entries(ex).every(([k, v]) => sameValue(row[k], v))));
  const originals = rows.map((r) => ({ ...r }));
  const added: MatrixRow[] = [];
  for (const inc of s.include) {
    let fitted = false;
    rows.forEach((row, i) => {
      const orig = originals[i] ?? {};
      const conflicts = Object.entries(inc).some(([k, v]) => k in orig && !sameValue(orig[k], v));
      if (!conflicts) {
        Object.assign(row, inc);
        fitted = true;
      }
    });
    if (!fitted) added.push({ ...inc });
  }
  const all = [...rows, ...added];
  if (all.length > MAX_MATRIX) throw new PlanError(`the matrix has ${all.length} combinations (at most ${MAX_MATRIX})`);
  if (all.length === 0) throw new PlanError('the matrix has no combinations left after exclude');
  return all;
}

/** A job instance's display name: its `name` (interpolated) or id, then the matrix values. */
export function jobInstanceName(job: Job, matrix: MatrixRow | null, ctx: ExprContext): string {
  const base = job.name ? interpolateText(job.name, ctx) : job.id;
  if (!matrix || Object.keys(matrix).length === 0) return base;
  // a name that already uses the matrix names it itself
  if (job.name?.includes('matrix.')) return base;
  return `${base} (${Object.values(matrix).map(String).join(', ')})`;
}

/** The status context of a job: `{workflow name} / {job name}`, at most 255 characters. */
export function statusContext(workflowName: string, jobName: string): string {
  const c = `${workflowName} / ${jobName}`;
  return c.length > 255 ? `${c.slice(0, 254)}…` : c;
}

export type Conclusion = 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'startup_failure';

export interface NeedResult {
  result: Conclusion;
  outputs: Record<string, string>;
}

/**
 * The state the status functions see for a job with these needs: `cancelled` when the run is
 * being cancelled, `failure` when a needed job did not succeed (skipped counts as success only
 * for `always()`-style conditions, as on GitHub a skipped need makes `success()` false).
 */
export function needsState(needs: NeedResult[], runCancelled: boolean): 'success' | 'failure' | 'cancelled' {
  if (runCancelled) return 'cancelled';
  return needs.every((n) => n.result === 'success') ? 'success' : 'failure';
}

/** The `needs` context: `{ job: { result, outputs } }`. */
export function needsContext(byId: Record<string, NeedResult>): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const [id, n] of Object.entries(byId)) out[id] = { result: n.result, outputs: { ...n.outputs } };
  return out;
}

/** Whether a job whose needs are all finished runs (`true`) or is skipped. */
export function shouldRunJob(job: Job, needs: Record<string, NeedResult>, runCancelled: boolean, ctx: ExprContext): boolean {
  const state = needsState(Object.values(needs), runCancelled);
  return evaluateCondition(job.if, {
    contexts: { ...ctx.contexts, needs: needsContext(needs) },
    state,
  });
}

/** A job's outputs from its steps' outputs (`steps.<id>.outputs.<name>`), each ≤ 1 MiB. */
export function jobOutputs(job: Job, ctx: ExprContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, expr] of Object.entries(job.outputs)) {
    const v = toText(interpolate(expr, ctx));
    out[name] = v.length > 1024 * 1024 ? v.slice(0, 1024 * 1024) : v;
  }
  return out;
}

/** A concurrency setting evaluated: the group's text and whether to cancel what is in progress. */
export function evaluateConcurrency(c: Concurrency | undefined, ctx: ExprContext): { group: string; cancel: boolean } | null {
  if (!c) return null;
  const group = interpolateText(c.group, ctx).trim();
  if (group === '') return null;
  const cancel = typeof c.cancelInProgress === 'boolean' ? c.cancelInProgress : truthy(interpolate(c.cancelInProgress, ctx));
  return { group: group.slice(0, 400), cancel };
}

/** Jobs in an order where each comes after the jobs it needs (the validator refused cycles). */
export function jobOrder(jobs: Job[]): Job[] {
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const done = new Set<string>();
  const out: Job[] = [];
  const visit = (j: Job) => {
    if (done.has(j.id)) return;
    done.add(j.id);
    for (const n of j.needs) {
      const d = byId.get(n);
      if (d) visit(d);
    }
    out.push(j);
  };
  jobs.forEach(visit);
  return out;
}
