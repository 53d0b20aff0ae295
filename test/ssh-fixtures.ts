import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A key pair made by the system ssh-keygen: the private key's path and the .pub line. */
export interface KeyPair {
  path: string;
  pub: string;
  /** as `ssh-keygen -lf` prints it */
  fingerprint: string;
}

export function keyDir(): {
  dir: string;
  make(name: string, type: string, bits?: number, comment?: string): KeyPair;
  cleanup(): void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'weft-ssh-keys-'));
  return {
    dir,
    make(name, type, bits, comment = `${name}@test`) {
      const path = join(dir, name);
      execFileSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', comment, '-f', path]);
      const pub = readFileSync(`${path}.pub`, 'utf8').trim();
      const fingerprint = execFileSync('ssh-keygen', ['-lf', `${path}.pub`], { encoding: 'utf8' }).split(' ')[1]!;
      return { path, pub, fingerprint };
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The ssh options every test connection uses: the key only, no host key checks, no agent, batch mode. */
export const sshOptions = (key: string, port: number): string[] => [
  '-i',
  key,
  '-o',
  'IdentitiesOnly=yes',
  '-o',
  'IdentityAgent=none',
  '-o',
  'StrictHostKeyChecking=no',
  '-o',
  'UserKnownHostsFile=/dev/null',
  '-o',
  'BatchMode=yes',
  '-o',
  'LogLevel=ERROR',
  '-F',
  '/dev/null',
  '-p',
  String(port),
];

/** `GIT_SSH_COMMAND` for git with this key and port. */
export const gitSshCommand = (key: string, port: number): string => ['ssh', ...sshOptions(key, port)].join(' ');

/** Runs the system ssh client with a command; resolves with its exit code and output. */
export function runSsh(
  key: string,
  port: number,
  command: string[],
  timeoutMs = 60_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('ssh', [...sshOptions(key, port), 'git@127.0.0.1', ...command], { timeout: timeoutMs }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}
