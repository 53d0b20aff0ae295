import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let version: string | null = null;

/**
 * The package version, from the package.json nearest above this module: src/ in a source tree,
 * dist/ (the bundle and its chunks, any depth) in a build.
 */
export function weftVersion(): string {
  if (version !== null) return version;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (version = (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version);
    if (dirname(dir) === dir) throw new Error('package.json not found above the Weft sources');
  }
}
