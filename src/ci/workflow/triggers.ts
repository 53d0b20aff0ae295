/**
 * Which workflows an event starts: branch, tag and path filters (globs as GitHub writes them:
 * `*` stops at `/`, `**` does not, a `!pattern` later in a list takes a match back), pull types,
 * dispatch inputs and schedules.
 */
import { CronExpressionParser } from 'cron-parser';
import picomatch from 'picomatch';
import type { Value } from './expr.ts';
import type { PullType, RefFilters, Workflow } from './model.ts';

const matchers = new Map<string, (s: string) => boolean>();
function glob(pattern: string): (s: string) => boolean {
  let m = matchers.get(pattern);
  if (!m) {
    m = picomatch(pattern, { dot: true, nonegate: true });
    if (matchers.size > 1000) matchers.clear();
    matchers.set(pattern, m);
  }
  return m;
}

/** Whether a name matches a filter list: the last pattern that matches decides (`!` excludes). */
export function matchesList(patterns: string[], name: string): boolean {
  let matched = false;
  for (const p of patterns) {
    if (p.startsWith('!')) {
      if (matched && glob(p.slice(1))(name)) matched = false;
    } else if (!matched && glob(p)(name)) matched = true;
  }
  return matched;
}

function refAllowed(name: string, only: string[] | undefined, ignore: string[] | undefined): boolean {
  if (only) return matchesList(only, name);
  if (ignore) return !matchesList(ignore, name);
  return true;
}

/**
 * Whether the changed paths pass `paths`/`paths-ignore`: with `paths`, one path must match;
 * with `paths-ignore`, one path must not be ignored. `undefined` paths (not known, e.g. a new
 * branch) pass.
 */
export function pathsAllowed(f: RefFilters, changed: string[] | undefined): boolean {
  if (changed === undefined) return true;
  if (f.paths) return changed.some((p) => matchesList(f.paths as string[], p));
  if (f.pathsIgnore) return changed.some((p) => !matchesList(f.pathsIgnore as string[], p));
  return true;
}

/** A push of `ref` (refs/heads/… or refs/tags/…) with its changed paths. */
export function matchesPush(wf: Workflow, ref: string, changed: string[] | undefined): boolean {
  const f = wf.on.push;
  if (!f) return false;
  const hasBranch = f.branches !== undefined || f.branchesIgnore !== undefined;
  const hasTag = f.tags !== undefined || f.tagsIgnore !== undefined;
  if (ref.startsWith('refs/heads/')) {
    if (hasTag && !hasBranch) return false;
    if (!refAllowed(ref.slice(11), f.branches, f.branchesIgnore)) return false;
    return pathsAllowed(f, changed);
  }
  if (ref.startsWith('refs/tags/')) {
    if (hasBranch && !hasTag) return false;
    // path filters are not evaluated for tags, as on GitHub
    return refAllowed(ref.slice(10), f.tags, f.tagsIgnore);
  }
  return false;
}

/** A pull event: `base` is the target branch; `changed` the pull's changed paths. */
export function matchesPull(wf: Workflow, type: PullType, base: string, changed: string[] | undefined): boolean {
  const f = wf.on.pull_request;
  if (!f || !f.types.includes(type)) return false;
  if (!refAllowed(base, f.branches, f.branchesIgnore)) return false;
  return pathsAllowed(f, changed);
}

export class DispatchError extends Error {}

/**
 * The inputs of a dispatch, checked against the workflow's declarations and completed with
 * defaults: booleans as booleans (`true`/`false` texts accepted), choices among their options.
 */
export function dispatchInputs(wf: Workflow, given: Record<string, unknown>): Record<string, Value> {
  const decl = wf.on.workflow_dispatch;
  if (!decl) throw new DispatchError(`the workflow ${wf.path} has no 'workflow_dispatch' trigger`);
  const out: Record<string, Value> = {};
  for (const name of Object.keys(given)) {
    if (!Object.prototype.hasOwnProperty.call(decl.inputs, name)) throw new DispatchError(`unknown input '${name}'`);
  }
  for (const [name, input] of Object.entries(decl.inputs)) {
    const v = Object.prototype.hasOwnProperty.call(given, name) ? given[name] : undefined;
    if (v === undefined || v === null) {
      if (input.required && input.default === undefined) throw new DispatchError(`input '${name}' is required`);
      out[name] = input.default ?? (input.type === 'boolean' ? false : '');
      continue;
    }
    if (input.type === 'boolean') {
      if (typeof v === 'boolean') out[name] = v;
      else if (v === 'true' || v === 'false') out[name] = v === 'true';
      else throw new DispatchError(`input '${name}' must be true or false`);
    } else {
      if (typeof v !== 'string') throw new DispatchError(`input '${name}' must be a string`);
      if (input.type === 'choice' && !input.options?.includes(v))
        throw new DispatchError(`input '${name}' must be one of: ${input.options?.join(', ')}`);
      if (input.required && v === '') throw new DispatchError(`input '${name}' is required`);
      out[name] = v;
    }
  }
  return out;
}

/** The first time after `after` (exclusive) at which any of the crons (five fields, UTC) fires; null: never. */
export function nextCronTime(crons: string[], after: Date): Date | null {
  let best: Date | null = null;
  for (const cron of crons) {
    let next: Date;
    try {
      next = CronExpressionParser.parse(cron, { tz: 'UTC', currentDate: after }).next().toDate();
    } catch {
      continue;
    }
    if (!best || next < best) best = next;
  }
  return best;
}

/** Whether the cron fires at the instant `ms` (a whole minute). */
export const cronFiresAt = (cron: string, ms: number): boolean => nextCronTime([cron], new Date(ms - 1))?.getTime() === ms;

/** The first time after `after` (exclusive) at which any of the workflow's schedules fires. */
export function nextSchedule(wf: Workflow, after: Date): Date | null {
  return nextCronTime(
    (wf.on.schedule ?? []).map((s) => s.cron),
    after,
  );
}
