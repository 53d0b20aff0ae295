#!/usr/bin/env node
// `npm start` runs this first: it compiles src/ to dist/ when dist/ is missing or older than any
// source file, so `npm install && npm start` works on a fresh clone. An installation without the
// TypeScript compiler (npm ci --omit=dev, the Docker image) uses the dist/ it was shipped with.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import console from 'node:console';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = join(root, 'dist', 'main.js');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const sources = Math.max(
  newest(join(root, 'src')),
  statSync(join(root, 'tsconfig.json')).mtimeMs,
  statSync(join(root, 'tsconfig.build.json')).mtimeMs,
);
const built = existsSync(entry) ? statSync(entry).mtimeMs : 0;
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
if (built === 0 || (sources > built && existsSync(tsc))) {
  if (!existsSync(tsc)) {
    console.error('weft: dist/ is missing and the TypeScript compiler is not installed: run `npm install` first');
    process.exit(1);
  }
  console.error('weft: compiling src/ to dist/ ...');
  execFileSync(process.execPath, [join(root, 'bin', 'build.mjs')], { stdio: 'inherit' });
}
