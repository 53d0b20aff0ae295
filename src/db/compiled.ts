/** The compiled hot queries live in the fast-path module (src/db/fast-path.ts); kept for existing imports. */
export { compiledOnce, numberArg, numberParam } from './fast-path.ts';
