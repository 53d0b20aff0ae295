import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS package loaded on first use rather than when the importing module loads: for the
 * large ones a request may never need (syntax highlighting, HTML sanitising, SSH, the webhook
 * HTTP client), so the server starts without reading and compiling them. Pass the type as
 * `typeof import('pkg')` (a type-only import, erased from the output).
 */
export function lazyRequire<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
