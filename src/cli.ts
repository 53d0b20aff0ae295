import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { createDeps } from './root.ts';
import type { Deps } from './deps.ts';
import { AppError } from './errors.ts';
import { createTokenFor } from './tokens/service.ts';
import { inTransaction } from './core/transaction.ts';
import { nowIso } from './time.ts';
import { hashPassword } from './users/password.ts';
import { createUser, findUserByUsername } from './users/service.ts';
import { weftVersion } from './version.ts';
import { createBackup } from './backup/backup.ts';
import { forgetPreviousKeys, rotateKeyFile, ServerSecret } from './secrets/server-secret.ts';
import { resealAll } from './secrets/rotate.ts';
import { BackupCryptoError } from './backup/crypto.ts';
import { reindex } from './search/service.ts';
import { sqliteFileOf } from './backup/database.ts';
import { BackupInvalidError, RestoreRefusedError, restoreBackup, verifyBackup } from './backup/restore.ts';
import { sendTestMail } from './notifications/mail.ts';

export { weftVersion };

const USAGE = `usage: weft <command> [options]

commands:
  migrate                                   apply pending database migrations
  create-user <username> --email E [--staff] [--display-name N] [--token-name T]
                                            create a user and print a new API token
  create-token <username> [--name T]        print a new API token for an existing, active user
  list-users                                one line per user: username, staff, active, uuid
  list-tokens <username>                    one line per token: uuid, name, status, created, last used
  set-password <username>                   set a password, read from standard input (first line)
  revoke-token <token-uuid>                 revoke an API token
  deactivate-user <username>                deactivate a user (their tokens stop working)
  backup --out FILE                         write a backup of the database, repos, blobs and keys
                                            (beside a running server; encrypted when
                                            WEFT_BACKUP_PASSPHRASE is set)
  backup --verify FILE                      check a backup archive against its manifest
  restore FILE                              fill an empty DATA_DIR and an empty database from a backup
  rotate-secret-key [--forget-previous]     make a new server secret (DATA_DIR/secret.key) and re-seal
                                            every stored secret with it; with SECRET_KEY set, re-seal
                                            with the SECRET_KEY given (docs/secrets.md)
  reindex [OWNER/REPO]                      rebuild the code search index of one repo, or of every repo,
                                            in this process (docs/search.md)
  send-test-mail <address>                  send one mail with SMTP_URL and MAIL_FROM (docs/notifications.md)
  runner register --url U --token T --name N [--labels a,b] [--capacity N] [--config FILE]
                                            register a CI runner; its secret goes to FILE
                                            (default .weft-runner.json, mode 600; docs/ci.md)
  runner [--config FILE] [--capacity N] [--workdir DIR]
                                            run the CI runner: poll for jobs and run them
  help, --help                              print this
  --version                                 print the version

Exit codes: 0 done, 1 not found (no such user, token or database) or a damaged backup, 2 bad
usage or input (a taken username or email, a password outside 8-256 characters, a deactivated
user, a restore into a non-empty DATA_DIR or database), 3 the database cannot be reached.

Configuration comes from the environment (DATABASE_URL, DATA_DIR, ...), as for the server.`;

const COMMANDS = [
  'migrate',
  'create-user',
  'create-token',
  'list-users',
  'list-tokens',
  'set-password',
  'revoke-token',
  'deactivate-user',
  'backup',
  'restore',
  'rotate-secret-key',
  'reindex',
  'send-test-mail',
];
const NEEDS_ARG = [
  'send-test-mail',
  'create-user',
  'create-token',
  'list-tokens',
  'set-password',
  'revoke-token',
  'deactivate-user',
  'restore',
];

/** commands with an optional argument (`reindex [OWNER/REPO]`) */
const MAY_TAKE_ARG = ['reindex'];

async function readStdinLine(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('password: ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      staff: { type: 'boolean', default: false },
      'display-name': { type: 'string' },
      'token-name': { type: 'string', default: 'cli' },
      name: { type: 'string', default: 'cli' },
      out: { type: 'string' },
      verify: { type: 'string' },
      'forget-previous': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
      version: { type: 'boolean', short: 'v', default: false },
    },
  });
}

/**
 * `weft rotate-secret-key` (docs/secrets.md "Rotating the key"). With the key in DATA_DIR: a new
 * key file (the old one kept in secret.key.previous), then every sealed column re-sealed; running
 * servers read the key at start, so restart them, then `--forget-previous` re-seals what they
 * sealed meanwhile and forgets the old key. With SECRET_KEY: re-seal with it (the old one given
 * in SECRET_KEY_PREVIOUS), `--forget-previous` being a reminder to remove that variable.
 */
async function rotateSecretKey(deps: Deps, forgetPrevious: boolean): Promise<number> {
  const fromEnv = deps.config.secretKey !== null;
  let secret = deps.secret;
  if (!fromEnv && !forgetPrevious) {
    rotateKeyFile(deps.config.dataDir);
    secret = ServerSecret.load({ secretKey: null, previousKeys: deps.config.secretKeyPrevious, dataDir: deps.config.dataDir });
  }
  const summary = await resealAll({ ...deps, secret });
  if (forgetPrevious && !fromEnv) forgetPreviousKeys(deps.config.dataDir);
  console.error(
    `re-sealed ${summary.resealed} stored secrets with key ${secret.current.id} (${summary.current} already were)` +
      (forgetPrevious
        ? fromEnv
          ? "; remove SECRET_KEY_PREVIOUS from the servers' environment"
          : '; previous keys forgotten'
        : fromEnv
          ? ''
          : '; restart every server on this DATA_DIR, then run `weft rotate-secret-key --forget-previous`'),
  );
  return 0;
}

async function runBackupCommand(
  command: 'backup' | 'restore',
  arg: string | undefined,
  values: { out?: string; verify?: string },
): Promise<number> {
  const passphrase = process.env.WEFT_BACKUP_PASSPHRASE || undefined;
  try {
    if (command === 'backup' && values.verify !== undefined) {
      const started = Date.now();
      const v = await verifyBackup(values.verify, passphrase);
      console.error(
        `backup ok: ${v.entries} entries, ${v.bytes} bytes, made ${v.format.created_at} by Weft ${v.format.weft_version} (${v.format.dialect}${v.format.encrypted ? ', encrypted' : ''}) in ${Date.now() - started} ms`,
      );
      return 0;
    }
    const config = loadConfig();
    if (command === 'backup') {
      if (!values.out) {
        console.error('weft: backup needs --out FILE (or --verify FILE)');
        return 2;
      }
      if (existsSync(values.out)) {
        console.error(`weft: ${values.out} exists: backup writes a new file only`);
        return 2;
      }
      const sqliteFile = sqliteFileOf(config.databaseUrl, config.dataDir);
      if (sqliteFile !== null && !existsSync(sqliteFile)) {
        console.error(`weft: no database at ${sqliteFile}: set DATA_DIR (or DATABASE_URL) to the server's`);
        return 1;
      }
      const started = Date.now();
      const s = await createBackup({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, out: values.out, passphrase });
      console.error(
        `backup written to ${values.out}: ${s.rows} rows, ${s.repos} repos, ${s.blobs} blobs, ${s.entries} entries, ${s.bytes} bytes${passphrase ? ' (encrypted)' : ''} in ${Date.now() - started} ms`,
      );
      return 0;
    }
    const r = await restoreBackup({ file: arg!, passphrase, databaseUrl: config.databaseUrl, dataDir: config.dataDir });
    console.error(
      `restored ${r.rows} rows and ${r.files} files from a backup of ${r.format.created_at} into ${config.dataDir}; run \`weft reindex\` to rebuild the code search index (docs/search.md)`,
    );
    return 0;
  } catch (err) {
    if (err instanceof RestoreRefusedError) {
      console.error(`weft: restore refused: ${err.message}`);
      return 2;
    }
    if (err instanceof BackupInvalidError || err instanceof BackupCryptoError) {
      console.error(`weft: ${err.message}`);
      return 1;
    }
    // zlib's own errors (Z_DATA_ERROR, ...) from a damaged compressed stream
    if (typeof (err as NodeJS.ErrnoException).code === 'string' && (err as NodeJS.ErrnoException).code!.startsWith('Z_')) {
      console.error(`weft: the archive is damaged: ${(err as Error).message}`);
      return 1;
    }
    throw err;
  }
}

async function run(argv: string[]): Promise<number> {
  // `weft runner …` (docs/ci.md): the CI runner, which needs no database
  if (argv[0] === 'runner') return (await import('./ci/runner/runner.ts')).runnerMain(argv.slice(1));
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    console.error(`weft: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { positionals, values } = parsed;
  const [command, arg] = positionals;
  if (values.version) {
    console.log(weftVersion());
    return 0;
  }
  if (values.help || command === 'help' || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  const expected = NEEDS_ARG.includes(command ?? '') || MAY_TAKE_ARG.includes(command ?? '') ? 2 : 1;
  if (positionals.length > expected) {
    console.error(
      `weft: ${command} takes ${expected - 1 || 'no'} argument${expected === 2 ? '' : 's'}; unexpected: ${positionals.slice(expected).join(' ')}\n\n${USAGE}`,
    );
    return 2;
  }
  if (!COMMANDS.includes(command)) {
    console.error(`weft: unknown command: ${command}\n\n${USAGE}`);
    return 2;
  }
  if (command === 'create-user' && (!arg || !values.email)) {
    console.error('weft: create-user needs a username and --email');
    return 2;
  }
  if (command === 'create-user' && !/^[^\s@]+@[^\s@]+$/.test(values.email ?? '')) {
    console.error('weft: --email must be an email address');
    return 2;
  }
  if (NEEDS_ARG.includes(command) && !arg) {
    console.error(`weft: ${command} needs an argument\n\n${USAGE}`);
    return 2;
  }
  if (command === 'backup' || command === 'restore') return runBackupCommand(command, arg, values);
  if (command === 'send-test-mail') {
    if (!/^[^\s@]+@[^\s@]+$/.test(arg ?? '')) {
      console.error('weft: send-test-mail needs an email address');
      return 2;
    }
    const config = loadConfig();
    if (!config.smtpUrl || !config.mailFrom) {
      console.error('weft: set SMTP_URL and MAIL_FROM to send mail (docs/notifications.md)');
      return 2;
    }
    try {
      await sendTestMail(config, arg!);
    } catch (err) {
      console.error(`weft: sending the test mail failed: ${(err as Error).message}`);
      return 3;
    }
    console.log(`sent a test mail to ${arg}`);
    return 0;
  }
  let password = '';
  if (command === 'set-password') {
    password = await readStdinLine();
    if (password.length < 8 || password.length > 256) {
      console.error('weft: the password must be 8-256 characters (read from standard input)');
      return 2;
    }
  }
  const tokenName = (command === 'create-user' ? values['token-name'] : values.name).trim();
  if (!tokenName || tokenName.length > 100) {
    console.error('weft: the token name must be 1-100 characters');
    return 2;
  }
  const config = loadConfig();
  // Only `migrate` may create a database: run elsewhere, another command must not leave a new
  // empty SQLite file (and users in it) behind.
  const sqliteFile =
    config.databaseUrl === null
      ? join(config.dataDir, 'weft.sqlite')
      : config.databaseUrl.startsWith('sqlite:')
        ? config.databaseUrl.slice('sqlite:'.length)
        : null;
  if (command !== 'migrate' && sqliteFile !== null && !existsSync(sqliteFile)) {
    console.error(
      `weft: no database at ${sqliteFile}: set DATA_DIR (or DATABASE_URL) to the server's, or run \`weft migrate\` to create one there`,
    );
    return 1;
  }
  const database = await openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    migrate: false,
    readers: config.sqliteReaders,
    hotConnections: config.pgHotConnections,
  });
  const deps = createDeps(config, database);
  try {
    const applied = await migrateToLatest(database.db as Kysely<unknown>, database.dialect);
    if (command === 'migrate') {
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'migrations are up to date');
      return 0;
    }
    if (command === 'rotate-secret-key') return await rotateSecretKey(deps, values['forget-previous']);
    if (command === 'reindex') {
      let uuids: string[] | null = null;
      if (arg) {
        const [owner, slug] = arg.split('/');
        const row = await deps.db
          .selectFrom('repos as r')
          .leftJoin('teams as t', (j) => j.onRef('t.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
          .leftJoin('users as u', (j) => j.onRef('u.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
          .select('r.uuid')
          .where('r.slug', '=', slug ?? '')
          .where((eb) => eb.or([eb('t.slug', '=', owner ?? ''), eb('u.username', '=', owner ?? '')]))
          .executeTakeFirst();
        if (!row) {
          console.error(`weft: no repo ${arg}`);
          return 1;
        }
        uuids = [row.uuid];
      }
      const n = await reindex(deps, uuids);
      console.log(`reindexed ${n} repo${n === 1 ? '' : 's'}`);
      return 0;
    }
    if (command === 'create-user') {
      const { user, token } = await createUser(
        deps,
        null,
        { username: arg!, email: values.email!, display_name: values['display-name'], is_staff: values.staff },
        { name: tokenName },
      );
      console.error(`created ${user.is_staff ? 'staff ' : ''}user ${user.username} (${user.uuid})`);
      console.log(token!.token);
      return 0;
    }
    if (command === 'create-token') {
      const user = arg ? await findUserByUsername(deps.db, arg) : undefined;
      if (!user) {
        console.error(`weft: no such user: ${arg ?? ''}`);
        return 1;
      }
      if (user.is_active !== 1) {
        console.error(`weft: ${user.username} is deactivated; their tokens would not work`);
        return 2;
      }
      const token = await inTransaction(deps, (tx) => createTokenFor(tx, user, { name: tokenName }, null));
      console.log(token.token);
      return 0;
    }
    if (command === 'list-users') {
      const rows = await deps.db
        .selectFrom('users')
        .select(['username', 'uuid', 'is_staff', 'is_active'])
        .orderBy('username')
        .execute();
      for (const r of rows) {
        console.log(`${r.username}\t${r.is_staff ? 'staff' : '-'}\t${r.is_active ? 'active' : 'inactive'}\t${r.uuid}`);
      }
      return 0;
    }
    if (command === 'list-tokens') {
      const user = await findUserByUsername(deps.db, arg!);
      if (!user) {
        console.error(`weft: no such user: ${arg}`);
        return 1;
      }
      const rows = await deps.db
        .selectFrom('api_tokens')
        .select(['uuid', 'name', 'created_at', 'last_used_at', 'revoked_at', 'expires_at'])
        .where('user_uuid', '=', user.uuid)
        .orderBy('created_at')
        .orderBy('uuid')
        .execute();
      const now = Date.now();
      for (const r of rows) {
        const status =
          r.revoked_at !== null ? 'revoked' : r.expires_at !== null && Date.parse(r.expires_at) <= now ? 'expired' : 'active';
        console.log(`${r.uuid}\t${r.name}\t${status}\t${r.created_at}\t${r.last_used_at ?? '-'}`);
      }
      return 0;
    }
    if (command === 'set-password' || command === 'deactivate-user') {
      const user = await findUserByUsername(deps.db, arg!);
      if (!user) {
        console.error(`weft: no such user: ${arg}`);
        return 1;
      }
      const changes = command === 'set-password' ? { password_hash: await hashPassword(password) } : { is_active: 0 as const };
      await inTransaction(deps, async (tx) => {
        await tx.db
          .updateTable('users')
          .set({ ...changes, updated_at: nowIso() })
          .where('uuid', '=', user.uuid)
          .execute();
        await tx.emit({
          kind: 'user-updated',
          scopes: [`user:${user.uuid}`],
          actor: null,
          payload: {
            user_uuid: user.uuid,
            username: user.username,
            fields: command === 'set-password' ? ['password'] : ['is_active'],
          },
        });
      });
      console.error(command === 'set-password' ? `password set for ${user.username}` : `deactivated ${user.username}`);
      return 0;
    }
    if (command === 'revoke-token') {
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(arg!)) {
        console.error(`weft: not a token uuid: ${arg}`);
        return 2;
      }
      const row = await deps.db
        .selectFrom('api_tokens')
        .innerJoin('users', 'users.uuid', 'api_tokens.user_uuid')
        .select(['api_tokens.uuid', 'api_tokens.name', 'api_tokens.revoked_at', 'api_tokens.user_uuid', 'users.username'])
        .where('api_tokens.uuid', '=', arg!)
        .executeTakeFirst();
      if (!row) {
        console.error(`weft: no such API token: ${arg}`);
        return 1;
      }
      if (row.revoked_at === null) {
        await inTransaction(deps, async (tx) => {
          const updated = await tx.db
            .updateTable('api_tokens')
            .set({ revoked_at: nowIso() })
            .where('uuid', '=', row.uuid)
            .where('revoked_at', 'is', null)
            .executeTakeFirst();
          if (Number(updated.numUpdatedRows) === 0) return;
          await tx.emit({
            kind: 'token-revoked',
            scopes: [`user:${row.user_uuid}`],
            actor: null,
            payload: { token_uuid: row.uuid, name: row.name, username: row.username },
          });
        });
      }
      console.error(`revoked token ${row.name} (${row.uuid}) of ${row.username}`);
      return 0;
    }
    return 2;
  } finally {
    await database.close();
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof ConfigError) {
      console.error(`weft: configuration error: ${err.message}`);
      process.exit(1);
    }
    if (err instanceof AppError) {
      // bad input or a conflict (a taken username or email) is 2, as the README says; not found 1
      console.error(`weft: ${err.detail}`);
      process.exit(err.status === 404 ? 1 : err.status < 500 ? 2 : 1);
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (
      code === 'ECONNREFUSED' ||
      code === 'ENOTFOUND' ||
      code === 'EAI_AGAIN' ||
      code === 'ETIMEDOUT' ||
      code === '28P01' ||
      code === '3D000'
    ) {
      console.error(`weft: cannot reach the database (DATABASE_URL): ${(err as Error).message || code}`);
      process.exit(3);
    }
    // one line; the stack only when asked for
    console.error(`weft: ${(err as Error).message ?? String(err)}`);
    if (process.env.WEFT_DEBUG) console.error(err);
    process.exit(1);
  },
);
