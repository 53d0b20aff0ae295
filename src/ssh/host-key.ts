/**
 * The SSH host key (README "Git over SSH"): made on first start under DATA_DIR
 * (`DATA_DIR/ssh/host_ed25519_key`, mode 0600) and read by every later start and by every instance
 * that shares DATA_DIR, so clients see one host. Instances starting together race safely: each
 * writes a complete key to a file of its own, then `link`s it to the final name, which succeeds
 * for exactly one of them (link never replaces and never exposes a partial file); the others
 * drop theirs and read the winner's.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Ssh2 from 'ssh2';
import { lazyRequire } from '../lazy-require.ts';

// ssh2 is loaded when first needed, not when the server starts
const ssh2 = {
  get utils() {
    return loadSsh2().utils;
  },
};
const loadSsh2 = lazyRequire<typeof Ssh2>('ssh2');

export const hostKeyPath = (dataDir: string): string => join(dataDir, 'ssh', 'host_ed25519_key');

/** The host key's private key text, made if there is none yet. */
export function loadOrCreateHostKey(dataDir: string): string {
  const path = hostKeyPath(dataDir);
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(join(dataDir, 'ssh'), { recursive: true, mode: 0o700 });
  const mine = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  const { private: key } = ssh2.utils.generateKeyPairSync('ed25519');
  writeFileSync(mine, key, { mode: 0o600, flag: 'wx' });
  chmodSync(mine, 0o600); // whatever the umask
  try {
    linkSync(mine, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(mine, { force: true });
  }
  return readFileSync(path, 'utf8');
}
