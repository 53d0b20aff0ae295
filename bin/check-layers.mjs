#!/usr/bin/env node
/**
 * Imports run downward only (docs/architecture.md "Layers"): a file may import its own layer or
 * a lower one, never a higher one. Type-only imports count too. Prints every upward import and
 * exits 1 when there is one not in ALLOWED (the ones known when the check was written, to be
 * removed, never added to).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(import.meta.resolve('../src/'));
const log = (line) => process.stdout.write(`${line}\n`);
const warn = (line) => process.stderr.write(`${line}\n`);

/** Lowest first. A path is placed by its first segment (folder, or file at the top of src/). */
const LAYERS = [
  // the foundation: what everything may use
  [
    'viewer.ts',
    'errors.ts',
    'time.ts',
    'names.ts',
    'version.ts',
    'token-scopes.ts',
    'lazy-require.ts',
    'config.ts',
    'startup-heap.ts',
    'db',
    'markdown',
  ],
  // libraries and seams: git, blobs, jobs, the HTTP conventions, and the seams' interfaces
  ['git', 'blobs', 'jobs', 'http', 'secrets', 'deps.ts'],
  // the core every domain builds on: access decisions, the write pipeline, the event outbox
  ['access', 'core', 'events'],
  // the domains
  [
    'users',
    'tokens',
    'teams',
    'repos',
    'forks',
    'protections',
    'pulls',
    'threads',
    'uploads',
    'timers',
    'ratelimits',
    'invites',
    'settings',
    'sessions',
    'sshkeys',
    'statuses',
    'hooks',
    'activity',
    'attachments',
    'code',
    'search',
    'ssh',
    'tracker',
    'lfs',
    'releases',
    'mirrors',
    'references',
    'backup',
    'notifications',
    'signin',
    'ci',
  ],
  // pages and the composition root
  ['web', 'app.ts', 'root.ts', 'main.ts', 'serve.ts', 'cli.ts'],
];

/** Upward imports that exist today ("from > to"); remove an entry when its import goes. */
const ALLOWED = new Set(JSON.parse(readFileSync(fileURLToPath(import.meta.resolve('./layers-allowed.json')), 'utf8')));

const layerOf = (path) => {
  const first = path.split('/')[0];
  const i = LAYERS.findIndex((names) => names.includes(first));
  return i < 0 ? null : i;
};

const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(p);
  }
};
walk(SRC);

const upward = [];
const unplaced = new Set();
for (const file of files) {
  const from = relative(SRC, file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+'(\.[^']+)'/g)) {
    const to = relative(SRC, normalize(join(dirname(file), m[1])));
    const a = layerOf(from);
    const b = layerOf(to);
    if (a === null) unplaced.add(from.split('/')[0]);
    if (b === null) unplaced.add(to.split('/')[0]);
    if (a !== null && b !== null && b > a) upward.push(`${from} > ${to}`);
  }
}
const fresh = upward.filter((u) => !ALLOWED.has(u));
if (process.argv.includes('--list')) log(JSON.stringify(upward.sort(), null, 2));
else {
  if (unplaced.size) warn(`not placed in a layer (bin/check-layers.mjs LAYERS): ${[...unplaced].join(', ')}`);
  for (const u of fresh) warn(`upward import: ${u}`);
  log(`${upward.length} upward imports (${upward.length - fresh.length} known, ${fresh.length} new)`);
  process.exit(fresh.length || unplaced.size ? 1 : 0);
}
