/**
 * The background side of CI on one instance: a sweep that fails the jobs of lost runners even
 * when no runner polls (a poll sweeps too). Every instance sweeps; `finishJob` is conditional, so
 * a job is failed once.
 */
import { inTransaction } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { RUNNER_LOST_MS, sweepLostRunners } from './runs.ts';

const timers = new WeakMap<object, NodeJS.Timeout>();

export function startCiBackground(deps: Deps): void {
  const sweep = () =>
    void inTransaction(deps, (tx) => sweepLostRunners(deps, tx)).catch((err) =>
      console.error('weft: the CI runner sweep failed', err),
    );
  const timer = setInterval(sweep, Math.min(5000, Math.max(250, RUNNER_LOST_MS / 4)));
  timer.unref();
  timers.set(deps, timer);
}

export function stopCiBackground(deps: Deps): void {
  clearInterval(timers.get(deps));
  timers.delete(deps);
}
