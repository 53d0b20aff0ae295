import { cpus } from 'node:os';
import { resolve } from 'node:path';

/**
 * The longest secret that can authenticate (generated ones are 45 characters; the bootstrap
 * admin's is chosen by the operator and is checked against this at start-up).
 */
export const MAX_SECRET_LENGTH = 200;

/** Every environment variable Weft reads, parsed and validated in one place (docs/behaviour.md "Serving and configuration"). */
export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  /** null means the embedded SQLite database under dataDir. */
  databaseUrl: string | null;
  dataDir: string;
  /** SECRET_KEY: the server secret (src/secrets/server-secret.ts); null means DATA_DIR/secret.key. */
  secretKey: string | null;
  /** SECRET_KEY_PREVIOUS: keys current before a rotation, comma-separated, still accepted for opening. */
  secretKeyPrevious: string | null;
  bootstrapAdminToken: string | null;
  bootstrapAdminUsername: string;
  logLevel: string;
  /** Default repo quota in bytes (docs/behaviour.md "Repos and forks": 1 GiB). */
  defaultMaxDiskBytes: number;
  /**
   * TRUST_PROXY: which proxies' X-Forwarded-For to believe for the client IP (per-IP rate limits
   * of anonymous callers). false (default): none, the socket address is the client.
   */
  trustProxy: boolean | number | string[];
  /** Largest single upload in bytes (MAX_UPLOAD_BYTES; default 25 MiB): 413 payload_too_large beyond. */
  maxUploadBytes: number;
  /** LOG_FORMAT: `pretty` (pino-pretty, for development) or `json`. */
  logFormat: 'json' | 'pretty';
  /** CORS_ORIGINS: allowed browser origins (`*` for any); empty means CORS is off. */
  corsOrigins: string[];
  /** COMPRESS_THRESHOLD: responses at least this many bytes are gzip/brotli compressed. */
  compressThreshold: number;
  /** METRICS: `off`, `api` (GET /metrics on the API port) or a port number for a separate listener. */
  metrics: 'off' | 'api' | number;
  /** METRICS_HOST: address of the separate metrics listener. */
  metricsHost: string;
  /** SHUTDOWN_TIMEOUT_MS: how long a graceful shutdown may take before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** HEADERS_TIMEOUT_MS: the request line and headers must arrive within this (408). */
  headersTimeoutMs: number;
  /** REQUEST_TIMEOUT_MS: a request body must arrive within this of the request's start (408). */
  requestTimeoutMs: number;
  /** IDLE_TIMEOUT_MS: a connection with no traffic for this long is closed. */
  idleTimeoutMs: number;
  /** TRANSFER_TIMEOUT_MS: the body limit of long-lived routes (git transfers, uploads, event streams). */
  transferTimeoutMs: number;
  /** STREAM_IDLE_TIMEOUT_MS: the idle limit of long-lived routes. */
  streamIdleTimeoutMs: number;
  /** LOAD_SHED_EVENT_LOOP_DELAY_MS: above this event-loop delay requests get 503 with Retry-After; 0 is off. */
  loadShedEventLoopDelayMs: number;
  /** SSH_PORT: the git-over-SSH listener's port (README "Git over SSH"); 0 turns SSH off. */
  sshPort: number;
  /** SSH_HOST: the address the SSH listener binds (default HOST). */
  sshHost: string;
  /** SSH_PUBLIC_PORT: the port written into `ssh_url` (default SSH_PORT; set it behind a TCP proxy on 22). */
  sshPublicPort: number;
  /** SSH_MAX_SESSIONS: concurrent SSH connections per instance; more are closed at once. */
  sshMaxSessions: number;
  /** SSH_MAX_SESSIONS_PER_USER: concurrent SSH connections of one user per instance; more get a refusal message. */
  sshMaxSessionsPerUser: number;
  /** SSH_IDLE_TIMEOUT_MS: an SSH connection with no traffic either way for this long is closed. */
  sshIdleTimeoutMs: number;
  /** SSH_LOGIN_TIMEOUT_MS: a connection not authenticated this long after it opened is closed. */
  sshLoginTimeoutMs: number;
  /** SSH_MAX_UNAUTHENTICATED_PER_ADDRESS: connections of one client address in their handshake at once; more wait in line (src/ssh/server.ts). */
  sshMaxUnauthenticatedPerAddress: number;
  /** WEFT_FAST_PATH (on|off): the fast read path of src/db/fast-path.ts; off gives the same answers through plain Kysely. */
  fastPath: boolean;
  /**
   * WEFT_SQLITE_READERS: read-only worker-thread connections for search on a SQLite file
   * (src/db/sqlite-reader.ts; default 2); 0 reads on the main connection. Not used on PostgreSQL.
   */
  sqliteReaders: number;
  /**
   * WEFT_PG_HOT_CONNECTIONS: PostgreSQL only, the hot reads' own pool (src/db/index.ts: the token
   * lookup of every request and the other compiled reads; default 3), beside the main pool's 10;
   * 0: they share the main pool.
   */
  pgHotConnections: number;
  /** GIT_MAX_PROCESSES: concurrent git processes for reading code (default twice the cores). */
  gitMaxProcesses?: number;
  /** GIT_TIMEOUT_MS: timeout of one git command (or object-reader batch) of a code-reading request. */
  gitTimeoutMs?: number;
  /** GIT_MAX_OUTPUT_BYTES: most bytes one buffered git command of a code-reading request may write. */
  gitMaxOutputBytes?: number;
  /** GIT_MAX_STREAM_BYTES: most bytes a streamed git command (archive, raw file) may write. */
  gitMaxStreamBytes?: number;
  /** WEBHOOK_MAX_CONCURRENCY: webhook deliveries in flight at once on this instance (src/hooks). */
  webhookMaxConcurrency: number;
  /** WEBHOOK_TIMEOUT_MS: how long one delivery attempt may take before it fails as a timeout (default 10 s). */
  webhookTimeoutMs: number;
  /** RUN_RETENTION_DAYS: completed CI runs, their jobs and logs are kept this many days (default 90; docs/ci.md). */
  runRetentionDays: number;
  /** CI_SCHEDULE_MIN_INTERVAL_SECONDS: the shortest gap between two `schedule` runs of one workflow (default 300). */
  ciScheduleMinIntervalSeconds: number;
  /** GIT_HTTP_MAX_PROCESSES: git processes one instance runs for clients at once; beyond, 503 with Retry-After. */
  gitHttpMaxProcesses: number;
  /** GIT_HTTP_MAX_PROCESSES_PER_CLIENT: the same per client address. */
  gitHttpMaxProcessesPerClient: number;
  /** GIT_WAIT_MS: how long git over HTTP or SSH past a cap waits for a slot before its refusal (0: refuse at once). */
  gitWaitMs: number;
  /** GIT_MAINTENANCE_DELAY_MS: how long after a repo's refs move its maintenance (pack-refs, loose objects) runs. */
  gitMaintenanceDelayMs: number;
  /** GIT_MAX_REQUEST_BYTES: largest fetch negotiation body (git-upload-pack), read before git starts; 413 beyond. */
  gitMaxRequestBytes: number;
  /** SMTP_URL: `smtp://` or `smtps://` (with credentials) for notification mail (docs/notifications.md); null: no mail. */
  smtpUrl: string | null;
  /** MAIL_FROM: the From of notification mail; mail is sent only when it and SMTP_URL are set. */
  mailFrom: string | null;
  /** MAIL_REPLY_DOMAIN: the domain of `reply+TOKEN@` addresses (reply by mail, with SMTP_INBOUND_PORT). */
  mailReplyDomain: string | null;
  /** SMTP_INBOUND_PORT: the reply-by-mail SMTP listener's port; 0 (default) turns it off. */
  smtpInboundPort: number;
  /** MAIL_BATCH_MS: activity on one subject within this is batched into one mail (default 60 s). */
  mailBatchMs: number;
}

export class ConfigError extends Error {}

/** The least estimated entropy a bootstrap token may have (generated API tokens have about 256 bits). */
export const MIN_BOOTSTRAP_ENTROPY_BITS = 80;

/**
 * A rough entropy estimate: the token's length times the Shannon entropy of its own character
 * frequencies. It cannot prove a token random, but it refuses the obviously weak (one character
 * repeated, a short word doubled, a long run of few characters).
 */
export function estimatedEntropyBits(value: string): number {
  const counts = new Map<string, number>();
  for (const ch of value) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / value.length) * Math.log2(n / value.length);
  return perChar * value.length;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

/**
 * TRUST_PROXY: unset or `false` trusts no proxy; `true` trusts every hop (only behind a proxy
 * that always overwrites X-Forwarded-For); a number trusts that many hops; otherwise a
 * comma-separated list of proxy addresses or CIDR ranges (`127.0.0.1,10.0.0.0/8`).
 */
function parseTrustProxy(raw: string | undefined): boolean | number | string[] {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.every((p) => /^[0-9a-fA-F.:]+(\/\d{1,3})?$/.test(p) && /[.:]/.test(p))) return parts;
  throw new ConfigError('TRUST_PROXY must be true, false, a hop count, or a comma-separated list of addresses or CIDR ranges');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = intVar(env, 'PORT', 3000, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.DATA_DIR || './data');

  let databaseUrl: string | null = env.DATABASE_URL || null;
  if (databaseUrl !== null) {
    if (databaseUrl.startsWith('sqlite:')) {
      databaseUrl = `sqlite:${resolve(databaseUrl.slice('sqlite:'.length))}`;
    } else if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      throw new ConfigError('DATABASE_URL must be a postgres:// (or postgresql://) URL, or sqlite:PATH');
    } else {
      try {
        new URL(databaseUrl);
      } catch {
        throw new ConfigError('DATABASE_URL is not a valid URL');
      }
    }
  }

  const publicUrlRaw = env.PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let publicUrl: string;
  try {
    const u = new URL(publicUrlRaw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    publicUrl = publicUrlRaw.replace(/\/+$/, '');
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an http(s) URL, got "${publicUrlRaw}"`);
  }

  const bootstrapAdminToken = env.BOOTSTRAP_ADMIN_TOKEN || null;
  if (bootstrapAdminToken !== null) {
    if (bootstrapAdminToken.length < 20 || /\s/.test(bootstrapAdminToken)) {
      throw new ConfigError('BOOTSTRAP_ADMIN_TOKEN must be at least 20 characters with no white space');
    }
    // Longer secrets never authenticate; others cannot travel in an Authorization header as sent.
    if (bootstrapAdminToken.length > MAX_SECRET_LENGTH) {
      throw new ConfigError(`BOOTSTRAP_ADMIN_TOKEN must be at most ${MAX_SECRET_LENGTH} characters`);
    }
    if (!/^[\x21-\x7e]+$/.test(bootstrapAdminToken)) {
      throw new ConfigError('BOOTSTRAP_ADMIN_TOKEN must be printable ASCII (no spaces or accented letters)');
    }
    if (estimatedEntropyBits(bootstrapAdminToken) < MIN_BOOTSTRAP_ENTROPY_BITS || new Set(bootstrapAdminToken).size < 10) {
      throw new ConfigError(
        `BOOTSTRAP_ADMIN_TOKEN is too easy to guess (repeated or few distinct characters): use a random one, such as the output of \`openssl rand -base64 32\``,
      );
    }
  }
  const bootstrapAdminUsername = (env.BOOTSTRAP_ADMIN_USERNAME || 'admin').toLowerCase();
  if (!/^[a-z0-9][a-z0-9_-]{0,38}$/.test(bootstrapAdminUsername)) {
    throw new ConfigError('BOOTSTRAP_ADMIN_USERNAME must be 1-39 characters of a-z, 0-9, - and _');
  }

  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  const defaultMaxDiskBytes = intVar(env, 'DEFAULT_MAX_DISK_BYTES', 1024 ** 3, 0, Number.MAX_SAFE_INTEGER);

  const trustProxy = parseTrustProxy(env.TRUST_PROXY);
  const maxUploadBytes = intVar(env, 'MAX_UPLOAD_BYTES', 25 * 1024 ** 2, 1, Number.MAX_SAFE_INTEGER);
  const logFormat = env.LOG_FORMAT || (env.NODE_ENV === 'development' ? 'pretty' : 'json');
  if (logFormat !== 'json' && logFormat !== 'pretty') throw new ConfigError('LOG_FORMAT must be json or pretty');

  const corsOrigins = (env.CORS_ORIGINS ?? '')
    .split(',')
    .map((s) => s.trim().replace(/\/+$/, ''))
    .filter(Boolean);
  for (const origin of corsOrigins) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError(`CORS_ORIGINS must be * or a comma-separated list of http(s)://host[:port] origins, got "${origin}"`);
    }
  }
  const compressThreshold = intVar(env, 'COMPRESS_THRESHOLD', 1024, 0, 1024 ** 3);

  const metricsRaw = env.METRICS || 'off';
  let metrics: Config['metrics'];
  if (metricsRaw === 'off' || metricsRaw === 'api') metrics = metricsRaw;
  else if (/^\d+$/.test(metricsRaw) && Number(metricsRaw) >= 1 && Number(metricsRaw) <= 65535) metrics = Number(metricsRaw);
  else throw new ConfigError(`METRICS must be off, api or a port number, got "${metricsRaw}"`);
  const metricsHost = env.METRICS_HOST || '127.0.0.1';
  const shutdownTimeoutMs = intVar(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 100, 600_000);
  const headersTimeoutMs = intVar(env, 'HEADERS_TIMEOUT_MS', 15_000, 100, 600_000);
  const requestTimeoutMs = intVar(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const idleTimeoutMs = intVar(env, 'IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000);
  const transferTimeoutMs = intVar(env, 'TRANSFER_TIMEOUT_MS', 3_600_000, 100, 86_400_000);
  const streamIdleTimeoutMs = intVar(env, 'STREAM_IDLE_TIMEOUT_MS', 300_000, 100, 86_400_000);
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS');
  if (requestTimeoutMs > transferTimeoutMs) throw new ConfigError('REQUEST_TIMEOUT_MS must not exceed TRANSFER_TIMEOUT_MS');
  const loadShedEventLoopDelayMs = intVar(env, 'LOAD_SHED_EVENT_LOOP_DELAY_MS', 1000, 0, 60_000);
  const sshPort = intVar(env, 'SSH_PORT', 2222, 0, 65535);
  const sshHost = env.SSH_HOST || host;
  // one port cannot serve both: say so rather than fail later with EADDRINUSE
  if (sshPort !== 0 && sshPort === port && sshHost === host) {
    throw new ConfigError(
      `SSH_PORT equals PORT (${port}): git over SSH needs a port of its own; set SSH_PORT to another port, or 0 to turn SSH off`,
    );
  }
  const sshPublicPort = intVar(env, 'SSH_PUBLIC_PORT', sshPort || 22, 1, 65535);
  const sshMaxSessions = intVar(env, 'SSH_MAX_SESSIONS', 64, 1, 100_000);
  const sshMaxSessionsPerUser = intVar(env, 'SSH_MAX_SESSIONS_PER_USER', 8, 1, 100_000);
  const sshIdleTimeoutMs = intVar(env, 'SSH_IDLE_TIMEOUT_MS', 300_000, 100, 86_400_000);
  const sshLoginTimeoutMs = intVar(env, 'SSH_LOGIN_TIMEOUT_MS', 20_000, 100, 600_000);
  const sshMaxUnauthenticatedPerAddress = intVar(env, 'SSH_MAX_UNAUTHENTICATED_PER_ADDRESS', 8, 1, 100_000);
  const fastPathRaw = (env.WEFT_FAST_PATH || 'on').toLowerCase();
  if (fastPathRaw !== 'on' && fastPathRaw !== 'off')
    throw new ConfigError(`WEFT_FAST_PATH must be on or off, got "${env.WEFT_FAST_PATH}"`);
  const sqliteReaders = intVar(env, 'WEFT_SQLITE_READERS', 2, 0, 64);
  const pgHotConnections = intVar(env, 'WEFT_PG_HOT_CONNECTIONS', 3, 0, 64);
  const gitMaxProcesses = intVar(env, 'GIT_MAX_PROCESSES', 2 * Math.max(1, cpus().length), 1, 1024);
  const gitTimeoutMs = intVar(env, 'GIT_TIMEOUT_MS', 10_000, 100, 600_000);
  const gitMaxOutputBytes = intVar(env, 'GIT_MAX_OUTPUT_BYTES', 32 * 1024 ** 2, 1024, Number.MAX_SAFE_INTEGER);
  const gitMaxStreamBytes = intVar(env, 'GIT_MAX_STREAM_BYTES', 4 * 1024 ** 3, 1024, Number.MAX_SAFE_INTEGER);
  const webhookMaxConcurrency = intVar(env, 'WEBHOOK_MAX_CONCURRENCY', 32, 1, 10_000);
  const webhookTimeoutMs = intVar(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000);
  const runRetentionDays = intVar(env, 'RUN_RETENTION_DAYS', 90, 1, 36_500);
  const ciScheduleMinIntervalSeconds = intVar(env, 'CI_SCHEDULE_MIN_INTERVAL_SECONDS', 300, 60, 86_400);
  const gitHttpMaxProcesses = intVar(env, 'GIT_HTTP_MAX_PROCESSES', 32, 1, 10_000);
  const gitHttpMaxProcessesPerClient = intVar(env, 'GIT_HTTP_MAX_PROCESSES_PER_CLIENT', 8, 1, 10_000);
  const gitWaitMs = intVar(env, 'GIT_WAIT_MS', 60_000, 0, 3_600_000);
  const gitMaintenanceDelayMs = intVar(env, 'GIT_MAINTENANCE_DELAY_MS', 60_000, 0, 86_400_000);
  const gitMaxRequestBytes = intVar(env, 'GIT_MAX_REQUEST_BYTES', 16 * 1024 ** 2, 1024, Number.MAX_SAFE_INTEGER);
  const smtpUrl = env.SMTP_URL || null;
  if (smtpUrl !== null && !/^smtps?:\/\//i.test(smtpUrl)) throw new ConfigError('SMTP_URL must start with smtp:// or smtps://');
  const smtpInboundPort = intVar(env, 'SMTP_INBOUND_PORT', 0, 0, 65_535);
  const mailBatchMs = intVar(env, 'MAIL_BATCH_MS', 60_000, 0, 3_600_000);

  return {
    trustProxy,
    port,
    host,
    publicUrl,
    databaseUrl,
    dataDir,
    secretKey: env.SECRET_KEY || null,
    secretKeyPrevious: env.SECRET_KEY_PREVIOUS || null,
    bootstrapAdminToken,
    bootstrapAdminUsername,
    logLevel,
    defaultMaxDiskBytes,
    maxUploadBytes,
    logFormat,
    corsOrigins,
    compressThreshold,
    metrics,
    metricsHost,
    shutdownTimeoutMs,
    headersTimeoutMs,
    requestTimeoutMs,
    idleTimeoutMs,
    transferTimeoutMs,
    streamIdleTimeoutMs,
    loadShedEventLoopDelayMs,
    sshPort,
    sshHost,
    sshPublicPort,
    sshMaxSessions,
    sshMaxSessionsPerUser,
    sshIdleTimeoutMs,
    sshLoginTimeoutMs,
    sshMaxUnauthenticatedPerAddress,
    fastPath: fastPathRaw === 'on',
    sqliteReaders,
    pgHotConnections,
    gitMaxProcesses,
    gitTimeoutMs,
    gitMaxOutputBytes,
    gitMaxStreamBytes,
    webhookMaxConcurrency,
    webhookTimeoutMs,
    runRetentionDays,
    ciScheduleMinIntervalSeconds,
    gitHttpMaxProcesses,
    gitHttpMaxProcessesPerClient,
    gitWaitMs,
    gitMaintenanceDelayMs,
    gitMaxRequestBytes,
    smtpUrl,
    mailFrom: env.MAIL_FROM || null,
    mailReplyDomain: env.MAIL_REPLY_DOMAIN || null,
    smtpInboundPort,
    mailBatchMs,
  };
}
