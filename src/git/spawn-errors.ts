import { AppError } from '../errors.ts';

/** Refusals of git processes for lack of capacity (src/git/limits.ts, src/git/run.ts). */

/** Seconds a refused client is told to wait. */
export const GIT_RETRY_AFTER_SECONDS = 5;

export function gitBusy(reason: string): AppError {
  return new AppError(503, 'service_unavailable', `${reason}; retry after ${GIT_RETRY_AFTER_SECONDS} seconds.`, undefined, {
    'retry-after': String(GIT_RETRY_AFTER_SECONDS),
  });
}

/** Error codes of a process that could not start for lack of resources: the request gets 503, the server lives on. */
const RESOURCE_CODES = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM']);

export function isResourceExhaustion(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RESOURCE_CODES.has(code);
}
