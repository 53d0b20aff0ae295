import { ErrorBody } from './schemas.ts';

/** Error responses a route declares on top of the ones every route gets (see openapi.ts). */
export function errors(...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorBody]));
}

export const SECURED = [{ bearer: [] }, { basic: [] }];
