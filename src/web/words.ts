/**
 * The API's error details in words for a person (README "Web interface": pages never show an
 * error code, a schema path or an operation id as such). The API keeps its own wording; a page
 * passes each detail through `inWords` before showing it.
 */
const OPERATIONS: Record<string, string> = {
  'api:login': 'signing in',
  'api:signup': 'signing up',
};

const fieldName = (path: string): string => path.replace(/_/g, ' ');

export function inWords(detail: string): string {
  let s = detail;
  s = s.replace(/\bapi:[a-z_-]+\b/g, (op) => OPERATIONS[op] ?? 'this action');
  s = s.replace(
    /^(body|querystring|params|request) has an unknown property "([^"]+)"\./,
    'The form has a field it does not take (“$2”).',
  );
  s = s.replace(
    /^(body|querystring|params|request) is missing the required property "([^"]+)"\./,
    (_m, _w, f: string) => `Fill in the ${fieldName(f)}.`,
  );
  // "body.password must …": "The password must …"
  s = s.replace(/^(?:body|querystring|params)\.([a-z_]+)(?:\.\d+)?\s/, (_m, f: string) => `The ${fieldName(f)} `);
  s = s.replace(/must NOT have fewer than (\d+) characters/, 'must have at least $1 characters');
  s = s.replace(/must NOT have more than (\d+) characters/, 'must have at most $1 characters');
  s = s.replace(/must NOT have fewer than (\d+) items/, 'must have at least $1 entries');
  s = s.replace(/must NOT have more than (\d+) items/, 'must have at most $1 entries');
  s = s.replace(/must match format "email"/, 'must be an email address');
  s = s.replace(/must match format "uri"/, 'must be a web address (http:// or https://)');
  s = s.replace(/must match format "([^"]+)"/, 'is not a valid $1');
  s = s.replace(/must match pattern "[^"]*"/, 'has characters it may not have');
  s = s.replace(/must be >= (\d+)/, 'must be at least $1');
  s = s.replace(/must be <= (\d+)/, 'must be at most $1');
  s = s.replace(/must be integer/, 'must be a whole number');
  s = s.replace(/must be boolean/, 'must be yes or no');
  s = s.replace(/must be one of ((?:"[^"]*"(?:, )?)+)/, (_m, list: string) => `must be one of ${list.replace(/"/g, '')}`);
  return s;
}

/** A page's heading for an error status. */
export function statusTitle(status: number): string {
  switch (status) {
    case 400:
      return 'That did not work';
    case 401:
      return 'Sign in first';
    case 403:
      return 'Not allowed';
    case 404:
      return 'Not found';
    case 409:
      return 'That cannot be done now';
    case 413:
      return 'Too large';
    case 429:
      return 'Too many tries';
    case 503:
      return 'Busy: try again soon';
    default:
      return status >= 500 ? 'Something went wrong' : 'That did not work';
  }
}
