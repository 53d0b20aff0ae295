#!/usr/bin/env node
// `npx weft …`: runs the compiled CLI from dist/ (`npm run build`); in a source tree that has
// not been built it falls back to the TypeScript sources through tsx (a development dependency).
import console from 'node:console';
import { existsSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

// --version answers without loading the application.
if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  console.log(version);
  process.exit(0);
}

const compiled = new URL('../dist/cli.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
