/**
 * The SSH host key (README "Git over SSH"): made on first start under DATA_DIR
 * (`DATA_DIR/ssh/host_ed25519_key`, mode 0600) and read by every later start and by every instance
 * that shares DATA_DIR, so clients see one host. Instances starting together race safely: each
 * writes a complete key to a file of its own, then `link`s it to the final name, which succeeds
 * for exactly one of them (link never replaces and never exposes a partial file); the others
 * drop theirs and read the winner's.
 *
 * Every key written is read back before it is kept: `ssh2`'s writer makes a key it cannot read
 * again when the ed25519 public key begins with a 0 byte (about 1 in 300), so such a key is
 * thrown away and another made. A key already on disk that does not parse (written by an older
 * version) is moved aside to `host_ed25519_key.broken-<time>` and replaced by a new one, with a
 * loud warning: clients will see a new host key.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Ssh2 from 'ssh2';
import { lazyRequire } from '../lazy-require.ts';

// ssh2 is loaded when first needed, not when the server starts
const ssh2 = {
  get utils() {
    return loadSsh2().utils;
  },
};

/** Whether ssh2 reads this private key text back (the check the SSH server makes at start). */
export function hostKeyParses(text: string): boolean {
  const key = ssh2.utils.parseKey(text);
  return !(key instanceof Error) && !Array.isArray(key) && key.type === 'ssh-ed25519';
}

/** A new ed25519 host key, in text ssh2 reads back (regenerated while it does not). */
export function generateHostKey(): string {
  for (let i = 0; i < 100; i++) {
    const { private: key } = ssh2.utils.generateKeyPairSync('ed25519');
    if (hostKeyParses(key)) return key;
  }
  throw new Error('could not generate an SSH host key that parses');
}
const loadSsh2 = lazyRequire<typeof Ssh2>('ssh2');

export const hostKeyPath = (dataDir: string): string => join(dataDir, 'ssh', 'host_ed25519_key');

/**
 * The host key's private key text, made if there is none yet, and made again (the broken one
 * moved aside, `warn` told) if the one on disk does not parse.
 */
export function loadOrCreateHostKey(dataDir: string, warn: (message: string) => void = console.error): string {
  const path = hostKeyPath(dataDir);
  for (let attempt = 0; ; attempt++) {
    const existing = readKey(path);
    if (existing === null) break;
    if (hostKeyParses(existing)) return existing;
    if (attempt > 0) throw new Error(`the SSH host key ${path} does not parse`);
    const aside = `${path}.broken-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    try {
      renameSync(path, aside);
      warn(
        `weft: WARNING: the SSH host key ${path} could not be read (it was written by an older version); ` +
          `moved it to ${aside} and made a new host key: SSH clients will see a changed host key`,
      );
    } catch (err) {
      // another instance moved it first: read what is there now
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  mkdirSync(join(dataDir, 'ssh'), { recursive: true, mode: 0o700 });
  const mine = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  const key = generateHostKey();
  writeFileSync(mine, key, { mode: 0o600, flag: 'wx' });
  chmodSync(mine, 0o600); // whatever the umask
  try {
    linkSync(mine, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(mine, { force: true });
  }
  const written = readFileSync(path, 'utf8');
  if (!hostKeyParses(written)) throw new Error(`the SSH host key ${path} does not parse`);
  return written;
}

function readKey(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    return null;
  }
}
