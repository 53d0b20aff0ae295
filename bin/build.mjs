#!/usr/bin/env node
// `npm run build`: a clean dist/ bundled from src/ by esbuild: dist/main.js (the server) and
// dist/cli.js (the CLI), with the code they share in chunks beside them and a source map for each
// file (stack traces name src/ lines with `node --enable-source-maps`). One file to load instead
// of a few hundred modules is most of the server's start-up time (bench/README.md "Start-up").
// Type checking is `npm run typecheck` (CI runs both). A failed build leaves no dist/, so the
// next `npm start` builds again.
import { readFileSync, readdirSync, rmSync } from 'node:fs';
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
    // the Markdown worker thread is a file of its own (src/markdown/bounded.ts starts it)
    entryPoints: ['src/main.ts', 'src/cli.ts', 'src/markdown/render-worker.ts'],
    outdir: dist,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    // Without comments and indentation the bundle's source text, which V8 keeps in memory for
    // lazy compilation, is a third smaller; with no character past Latin-1 left in it (esbuild
    // escapes them in strings; page templates use HTML entities) V8 keeps it
    // one byte per character instead of two: 5 MB less heap (bench/README.md "Start-up").
    minifyWhitespace: true,
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

// One character past Latin-1 makes V8 keep a whole file's source two bytes per character (see
// `minifyWhitespace` above): name it, so src/ writes it as a \u escape (an HTML entity in a page
// template, where Prettier would turn an escape back into the character) instead.
for (const name of readdirSync(dist).filter((f) => f.endsWith('.js'))) {
  const text = readFileSync(join(dist, name), 'utf8');
  const at = text.search(/[\u{100}-\u{10ffff}]/u);
  if (at >= 0) {
    const line = text.slice(0, at).split('\n').length;
    process.stderr.write(
      `build: dist/${name} line ${line} holds ${JSON.stringify(text[at])} (U+${text.codePointAt(at).toString(16).toUpperCase()}) ` +
        `near ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 10))}: write it as a \\u escape (an HTML entity in a page template) in src/\n`,
    );
    rmSync(dist, { recursive: true, force: true });
    process.exit(1);
  }
}
