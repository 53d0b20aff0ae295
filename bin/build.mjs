#!/usr/bin/env node
// `npm run build`: a clean dist/ compiled from src/ (tsconfig.build.json rewrites the .ts import
// specifiers to .js). A failed build leaves no dist/, so the next `npm start` builds again.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(join(root, 'dist'), { recursive: true, force: true });
try {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
} catch {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  process.exit(1);
}
