/**
 * Git over SSH in the same process (README "Git over SSH"), with the `ssh2` package:
 * - public-key authentication only; the user is found by the key's fingerprint (src/sshkeys/);
 * - each session runs `git-upload-pack` or `git-receive-pack` (src/ssh/git-command.ts), nothing
 *   else: a shell, a pty-less login, another command or a subsystem gets a message and exit 1;
 * - the key and its user are read again before every command, so a deleted key or a deactivated
 *   user is refused at once, even on a connection already open;
 * - bounded: at most SSH_MAX_SESSIONS connections per instance (more are closed at once), at
 *   most SSH_MAX_SESSIONS_PER_USER git commands per user at once (more wait for a slot up to
 *   GIT_WAIT_MS, then get a message), SSH_IDLE_TIMEOUT_MS without
 *   traffic closes a connection, and git runs with the same limits as over HTTP (src/git/run.ts);
 * - a connection that has not authenticated yet is closed SSH_LOGIN_TIMEOUT_MS after it opened
 *   (however it trickles), such connections hold at most SSH_MAX_UNAUTHENTICATED_PER_ADDRESS
 *   slots per client address and at most three quarters of SSH_MAX_SESSIONS in all, so the
 *   last quarter is for authenticated users (see `unauthenticatedCap`);
 * - the host key is shared through DATA_DIR (src/ssh/host-key.ts).
 */
import { type Server as NetServer, type Socket, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import ssh2, { type Connection, type ServerChannel } from 'ssh2';
import type { Deps } from '../deps.ts';
import { GitHttpLimiter } from '../git/limits.ts';
import { fingerprintOf } from '../sshkeys/parse.ts';
import { type DeployKeyGrant, deployKeyGrant, touchDeployKey } from '../sshkeys/deploy-keys.ts';
import { type KeyOwner, keyOwner, touchSshKey } from '../sshkeys/service.ts';
import { loadOrCreateHostKey } from './host-key.ts';
import { ONLY_GIT, parseGitCommand, refuse, runGitCommand } from './git-command.ts';
import { lfsAuthenticate, parseLfsAuthenticate } from '../lfs/ssh.ts';

export interface SshServer {
  /** the port it listens on (the real one when asked for port 0) */
  port: number;
  /** stops accepting and ends every open connection */
  close(): Promise<void>;
  /** the most connections of this address that were ever unauthenticated at once (for tests and probes) */
  peakUnauthenticated(ip: string): number;
}

export interface SshServerOptions {
  port?: number;
  host?: string;
}

/** Starts the SSH server on `SSH_HOST:SSH_PORT` (or the given port; 0 picks a free one). */
export async function startSshServer(deps: Deps, opts: SshServerOptions = {}): Promise<SshServer> {
  const { config } = deps;
  const ssh = new ssh2.Server({ hostKeys: [loadOrCreateHostKey(config.dataDir)] });
  ssh.on('error', (err: Error) => console.error('weft: ssh server error:', err.message));
  // git commands of one user at once: past the cap a command waits for a slot (GIT_WAIT_MS)
  const perUser = new GitHttpLimiter(
    Number.MAX_SAFE_INTEGER,
    config.sshMaxSessionsPerUser,
    config.gitWaitMs,
    `too many concurrent SSH sessions for this user (at most ${config.sshMaxSessionsPerUser})`,
  );
  const clients = new Set<Connection>();

  // The slots, counted on our own listener's sockets (ssh2 sees a connection only once the client
  // has sent its version line, which a trickling client never finishes).
  const slots = { total: 0, unauthenticated: 0 };
  const unauthenticatedOf = new Map<string, number>();
  const pending = new Map<string, () => void>(); // `ip|port` -> marks that socket authenticated
  const unauthenticatedCap = unauthenticatedCapOf(config.sshMaxSessions);

  ssh.on('connection', (client: Connection, connection: { ip: string; port: number }) => {
    clients.add(client);
    const authenticated = pending.get(`${connection.ip}|${connection.port}`);
    if (authenticated) client.once('ready', authenticated);
    let keyUuid: string | null = null;
    let deployKey = false;
    let userUuid: string | null = null;
    client.on('error', () => undefined); // a client that vanishes mid-handshake
    client.on('close', () => {
      clients.delete(client);
    });

    client.on('authentication', (ctx) => {
      if (ctx.method !== 'publickey') return ctx.reject(['publickey']);
      const fingerprint = fingerprintOf(ctx.key.data);
      findPrincipal(deps, { fingerprint }).then(
        async (owner) => {
          if (!owner) return ctx.reject(['publickey']);
          // without a signature the client only asks whether this key would do
          if (!ctx.signature) return ctx.accept();
          const key = ssh2.utils.parseKey(owner.publicKey);
          if (key instanceof Error || Array.isArray(key) || key.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) !== true) {
            return ctx.reject(['publickey']);
          }
          userUuid = owner.viewer.uuid;
          keyUuid = owner.keyUuid;
          deployKey = owner.deploy !== null;
          await (owner.deploy ? touchDeployKey(deps, owner.deploy) : touchSshKey(deps, owner)).catch(() => undefined);
          ctx.accept();
        },
        () => ctx.reject(['publickey']),
      );
    });

    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        const env: Record<string, string> = {};
        session.on('env', (accept, reject, info) => {
          if (info.key === 'GIT_PROTOCOL') env.GIT_PROTOCOL = info.val;
          accept?.();
        });
        session.on('pty', (_accept, reject) => reject?.());
        session.on('shell', (accept) => {
          const channel = accept();
          channel.write(`Hi! You've authenticated, but Weft does not provide shell access.\r\n`);
          refuse(channel, ONLY_GIT);
        });
        session.on('subsystem', (accept) => refuse(accept(), ONLY_GIT));
        session.on('exec', (accept, _reject, info) => {
          const channel: ServerChannel = accept();
          const lfs = parseLfsAuthenticate(info.command);
          if (lfs) {
            // git-lfs-authenticate (docs/lfs.md): the LFS API's address and a short-lived header
            void findPrincipal(deps, { keyUuid: keyUuid! }, deployKey)
              .then(async (owner) => {
                if (!owner) return refuse(channel, 'this key is no longer registered, or its user is inactive.');
                const answer = await lfsAuthenticate(deps, owner.viewer, owner.deploy, lfs);
                if ('refusal' in answer) return refuse(channel, answer.refusal);
                channel.write(`${JSON.stringify(answer.json)}\n`);
                channel.exit(0);
                channel.end();
              })
              .catch((err) => {
                console.error('weft: git-lfs-authenticate failed:', err);
                refuse(channel, 'internal error.');
              });
            return;
          }
          const command = parseGitCommand(info.command);
          if (!command) return refuse(channel, ONLY_GIT);
          // a slot of the user's (past the cap: wait in line up to GIT_WAIT_MS), held until the channel closes
          const gone = new AbortController();
          channel.once('close', () => gone.abort());
          client.once('close', () => gone.abort());
          perUser
            .acquire(userUuid!, gone.signal)
            .then(
              async (release) => {
                try {
                  if (gone.signal.aborted) return;
                  const owner = await findPrincipal(deps, { keyUuid: keyUuid! }, deployKey);
                  if (!owner) return refuse(channel, 'this key is no longer registered, or its user is inactive.');
                  // resolves once git has exited
                  await runGitCommand(deps, owner.viewer, command, env, connection.ip, channel, owner.deploy);
                } finally {
                  release();
                }
              },
              (err: { detail?: string }) => refuse(channel, err.detail ?? 'too many concurrent SSH sessions for this user.'),
            )
            .catch((err) => {
              console.error('weft: an SSH git command failed:', err);
              refuse(channel, 'internal error.');
            });
        });
      });
    });
  });

  // Sockets of an address past its unauthenticated cap wait here (not yet handed to ssh2, so no
  // banner, no handshake work) until one of that address's handshakes ends: a burst of real
  // clients from one host (a CI matrix cloning at once) is admitted in turn instead of refused,
  // while a flood still holds at most the cap. Each waits at most the login deadline.
  const queued = new Map<string, Socket[]>();
  const queueExpiry = new Map<Socket, NodeJS.Timeout>();
  const arrivedAt = new Map<Socket, number>();
  const peakOf = new Map<string, number>();
  const admitNext = (ip: string) => {
    const line = queued.get(ip);
    const next = line?.shift();
    if (line && line.length === 0) queued.delete(ip);
    if (next) {
      clearTimeout(queueExpiry.get(next));
      queueExpiry.delete(next);
      admit(next, ip, arrivedAt.get(next));
      arrivedAt.delete(next);
    }
  };
  const admit = (socket: Socket, ip: string, arrived = Date.now()) => {
    if (socket.destroyed) return admitNext(ip);
    if (slots.total >= config.sshMaxSessions) {
      socket.destroy();
      return admitNext(ip);
    }
    const peer = `${ip}|${socket.remotePort}`;
    slots.total++;
    slots.unauthenticated++;
    unauthenticatedOf.set(ip, (unauthenticatedOf.get(ip) ?? 0) + 1);
    peakOf.set(ip, Math.max(peakOf.get(ip) ?? 0, unauthenticatedOf.get(ip)!));
    let waiting = true;
    const leaveUnauthenticated = () => {
      if (!waiting) return;
      waiting = false;
      clearTimeout(deadline);
      pending.delete(peer);
      slots.unauthenticated--;
      const n = (unauthenticatedOf.get(ip) ?? 1) - 1;
      if (n <= 0) unauthenticatedOf.delete(ip);
      else unauthenticatedOf.set(ip, n);
      admitNext(ip);
    };
    // the login deadline counts from the connection's arrival, its wait in line included
    const deadline = setTimeout(() => socket.destroy(), Math.max(0, arrived + config.sshLoginTimeoutMs - Date.now()));
    pending.set(peer, leaveUnauthenticated);
    socket.once('close', () => {
      leaveUnauthenticated();
      slots.total--;
    });
    socket.setTimeout(config.sshIdleTimeoutMs, () => socket.destroy());
    ssh.injectSocket(socket);
  };

  // Our own listener, so each socket gets the idle timeout before ssh2 takes it over.
  const listener: NetServer = createServer((socket: Socket) => {
    socket.on('error', () => undefined);
    const ip = socket.remoteAddress ?? '';
    if (slots.total >= config.sshMaxSessions || slots.unauthenticated >= unauthenticatedCap) {
      socket.destroy();
      return;
    }
    if ((unauthenticatedOf.get(ip) ?? 0) >= config.sshMaxUnauthenticatedPerAddress) {
      const line = queued.get(ip) ?? [];
      if (line.length >= MAX_QUEUED_PER_ADDRESS) {
        socket.destroy();
        return;
      }
      line.push(socket);
      queued.set(ip, line);
      arrivedAt.set(socket, Date.now());
      queueExpiry.set(
        socket,
        setTimeout(() => socket.destroy(), config.sshLoginTimeoutMs),
      );
      socket.once('close', () => {
        clearTimeout(queueExpiry.get(socket));
        queueExpiry.delete(socket);
        arrivedAt.delete(socket);
        const l = queued.get(ip);
        const i = l ? l.indexOf(socket) : -1;
        if (l && i >= 0) l.splice(i, 1);
        if (l && l.length === 0) queued.delete(ip);
      });
      return;
    }
    admit(socket, ip);
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(opts.port ?? config.sshPort, opts.host ?? config.sshHost, () => {
      listener.off('error', reject);
      resolve();
    });
  });
  return {
    port: (listener.address() as AddressInfo).port,
    peakUnauthenticated: (ip: string) => peakOf.get(ip) ?? 0,
    close: async () => {
      const closed = new Promise<void>((resolve) => listener.close(() => resolve()));
      for (const client of clients) client.end();
      await closed;
    },
  };
}

/** Sockets of one address that may wait for its unauthenticated cap; more are closed at once. */
const MAX_QUEUED_PER_ADDRESS = 64;

/** Connections not yet authenticated may hold three quarters of the slots (at least one). */
export const unauthenticatedCapOf = (maxSessions: number): number => Math.max(1, maxSessions - Math.ceil(maxSessions / 4));

/** Who a key signs in as: a user's key (their whole access), else a deploy key (one repo). */
type Principal = KeyOwner & { deploy: DeployKeyGrant | null };

async function findPrincipal(
  deps: Deps,
  by: { fingerprint: string } | { keyUuid: string },
  deploy?: boolean,
): Promise<Principal | null> {
  if (deploy !== true) {
    const owner = await keyOwner(deps, by);
    if (owner || deploy === false) return owner && { ...owner, deploy: null };
  }
  const grant = await deployKeyGrant(deps, by);
  return (
    grant && {
      keyUuid: grant.keyUuid,
      publicKey: grant.publicKey,
      lastUsedAt: grant.lastUsedAt,
      viewer: grant.viewer,
      deploy: grant,
    }
  );
}
