/**
 * The one error type services throw. It names the API error (docs/behaviour.md "Conventions": a status, a stable
 * snake_case code and a human sentence); the HTTP layer turns it into the error envelope.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly conflictPaths?: string[],
    readonly headers?: Record<string, string>,
  ) {
    super(detail);
  }
}

export const badRequest = (detail: string) => new AppError(400, 'invalid_request', detail);
export const unauthorized = (detail = 'Authentication required: send a valid API token.') =>
  new AppError(401, 'unauthorized', detail);
export const forbidden = (detail: string, code = 'forbidden') => new AppError(403, code, detail);
export const notFound = (what = 'Resource') => new AppError(404, 'not_found', `${what} not found.`);
export const conflict = (code: string, detail: string, conflictPaths?: string[]) =>
  new AppError(409, code, detail, conflictPaths);
