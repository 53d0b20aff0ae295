import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { ROOT } from './foundation-helpers.ts';

// The deployment files (README "Deploying") checked against the tree, since docker, docker
// compose and hadolint are not available where the suite runs.

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('deployment files', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  it('Dockerfile: multi-stage, non-root, DATA_DIR volume, healthcheck on /readyz, runs dist/main.js', () => {
    assert.ok(instructions.filter((l) => l.startsWith('FROM ')).length >= 2, 'multi-stage');
    const user = instructions.filter((l) => l.startsWith('USER ')).at(-1);
    assert.ok(user && !/^USER (root|0)\b/.test(user), 'the runtime stage runs as a non-root user');
    assert.ok(instructions.some((l) => /^VOLUME .*"\/data"/.test(l)));
    assert.ok(instructions.some((l) => /^ENV .*DATA_DIR=\/data/.test(l)));
    assert.ok(instructions.some((l) => /^HEALTHCHECK .*\/readyz/.test(l)));
    assert.ok(instructions.some((l) => l === 'CMD ["node", "--v8-pool-size=1", "dist/main.js"]'));
    // what the build stage compiles into is what the start script and the CLI run
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; bin: Record<string, string> };
    assert.equal(pkg.scripts.start, 'exec node --v8-pool-size=1 dist/main.js');
    assert.match(read(pkg.bin.weft!), /dist/);
  });

  it('Dockerfile: every COPY source from the context exists, and .dockerignore keeps node_modules and dist out', () => {
    for (const line of instructions.filter((l) => l.startsWith('COPY ') && !l.includes('--from='))) {
      const parts = line.split(/\s+/).slice(1);
      for (const src of parts.slice(0, -1)) assert.ok(existsSync(join(ROOT, src)), `${line}: ${src} exists`);
    }
    const ignored = read('.dockerignore').split('\n');
    for (const entry of ['node_modules', 'dist', 'data', '.git']) assert.ok(ignored.includes(entry), entry);
  });

  it('the image keeps production dependencies only: every package src/ imports at run time is a dependency', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const missing: string[] = [];
    for (const file of sourceFiles(join(ROOT, 'src'))) {
      for (const [, typeOnly, spec] of read(relative(ROOT, file)).matchAll(/^import (type )?[^'"]*from '([^'.][^']*)'/gm)) {
        if (typeOnly || spec!.startsWith('node:') || builtinModules.includes(spec!)) continue;
        const name = spec!.startsWith('@') ? spec!.split('/').slice(0, 2).join('/') : spec!.split('/')[0]!;
        if (!pkg.dependencies[name]) missing.push(`${relative(ROOT, file)}: ${name}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('every production dependency is used at run time: src/ names it (an import, a lazy load or a pino transport)', () => {
    const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const text = sourceFiles(join(ROOT, 'src'))
      .map((file) => read(relative(ROOT, file)))
      .join('\n');
    const unused = Object.keys(pkg.dependencies).filter((name) => !new RegExp(`['"]${name}(/[^'"]*)?['"]`).test(text));
    assert.deepEqual(unused, [], 'a package only types or tests need belongs in devDependencies');
  });

  it('compose.yaml: PostgreSQL and two Weft instances behind one published port', () => {
    const compose = parse(read('compose.yaml'), { merge: true }) as {
      services: Record<string, { image?: string; build?: string; ports?: string[]; environment?: Record<string, string> }>;
    };
    const services = Object.entries(compose.services);
    const wefts = services.filter(([, s]) => s.build === '.');
    assert.equal(wefts.length, 2);
    for (const [, s] of wefts) {
      assert.match(s.environment!.DATABASE_URL!, /^postgres:\/\/.*@postgres:5432\//);
      assert.equal(s.ports, undefined, 'instances are reached through the proxy only');
    }
    assert.match(compose.services.postgres!.image!, /^postgres:/);
    const published = services.filter(([, s]) => s.ports?.length);
    assert.deepEqual(
      published.map(([name]) => name),
      ['proxy'],
    );
    const nginx = read('deploy/nginx.conf');
    for (const [name] of wefts) assert.match(nginx, new RegExp(`server ${name}:3000`));
    // git over SSH: published by the proxy too, a TCP pass-through to each instance's SSH_PORT
    assert.ok(compose.services.proxy!.ports!.some((p) => p.endsWith(':2222')));
    const main = read('deploy/nginx-main.conf');
    for (const [name, s] of wefts) {
      assert.equal(s.environment!.SSH_PORT, '2222');
      assert.match(main, new RegExp(`server ${name}:2222`));
    }
    assert.match(main, /stream \{/);
  });

  it('systemd unit runs the compiled server as its own user, with SIGTERM for a drained stop', () => {
    const unit = read('deploy/weft.service');
    assert.match(unit, /^ExecStart=\/usr\/bin\/node --v8-pool-size=1 \/opt\/weft\/dist\/main\.js$/m);
    assert.match(unit, /^User=weft$/m);
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.match(unit, /^Environment=DATA_DIR=\/var\/lib\/weft$/m);
    assert.ok(existsSync(join(ROOT, 'LICENSE')));
    assert.match(read('LICENSE'), /^MIT License/);
  });
});
