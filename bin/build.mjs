#!/usr/bin/env node
// `npm run build`: a clean dist/ bundled from src/ by esbuild: dist/main.js (the server) and
// dist/cli.js (the CLI), with the code they share in chunks beside them and a source map for each
// file (stack traces name src/ lines with `node --enable-source-maps`). One file to load instead
// of a few hundred modules is most of the server's start-up time (bench/README.md "Start-up").
// Type checking is `npm run typecheck` (CI runs both). A failed build leaves no dist/, so the
// next `npm start` builds again.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');

/**
 * Packages left in node_modules and loaded from there: native add-ons, packages that read files
 * next to their own code (swagger-ui's and @fastify/static's assets, pino's worker transports),
 * and the optional native parts of ssh2 and pg. Packages loaded on first use (lazy-require.ts)
 * stay outside the bundle by themselves.
 */
const EXTERNAL = [
  'better-sqlite3',
  'ssh2',
  'cpu-features',
  'pg-native',
  'pino',
  'pino-pretty',
  'thread-stream',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  '@fastify/static',
];

rmSync(dist, { recursive: true, force: true });
try {
  await build({
    absWorkingDir: root,
    entryPoints: ['src/main.ts', 'src/cli.ts'],
    outdir: dist,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    external: EXTERNAL,
    // CommonJS packages in the bundle call require() for Node's own modules
    banner: {
      js: "import { createRequire as __weftCreateRequire } from 'node:module'; const require = __weftCreateRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
} catch {
  rmSync(dist, { recursive: true, force: true });
  process.exit(1);
}
