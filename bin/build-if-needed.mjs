#!/usr/bin/env node
// `npm start` runs this first (so do `npm test` and `npm run test:files`: tests spawn dist/): it
// builds dist/ from src/ when dist/ is missing or older than any source file, so
// `npm install && npm start` works on a fresh clone. An installation without the
// bundler (npm ci --omit=dev, the Docker image) uses the dist/ it was shipped with.
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
const bundler = join(root, 'node_modules', 'esbuild', 'package.json');
if (built === 0 || (sources > built && existsSync(bundler))) {
  if (!existsSync(bundler)) {
    console.error('weft: dist/ is missing and the bundler (esbuild) is not installed: run `npm install` first');
    process.exit(1);
  }
  console.error('weft: building dist/ from src/ ...');
  execFileSync(process.execPath, [join(root, 'bin', 'build.mjs')], { stdio: 'inherit' });
}
