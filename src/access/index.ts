/**
 * The one place that answers "what may this user do to this team / repo / pull". Routes and
 * services ask here; nothing re-derives access inline. Invisible things are 404, never 403.
 * Split by subject; each domain that lands adds its file and re-exports it here.
 */
export * from './levels.ts';
export * from './teams.ts';
export * from './repo-level.ts';
export * from './repos.ts';
export * from './repo-read.ts';
export * from './check.ts';
export * from './pulls.ts';
export * from './users.ts';
export * from './tokens.ts';
export * from './timers.ts';
export * from './threads.ts';
export { SCOPE_READERS } from './scopes.ts';
export * from './events.ts';
export * from './limits.ts';
export * from './git.ts';
export * from './ssh-keys.ts';
export * from './hooks.ts';
export * from './tracker.ts';
export * from './signin.ts';
export * from './review-comments.ts';
export * from './two-factor.ts';
