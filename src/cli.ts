import { parseArgs } from 'node:util';
import type { Kysely } from 'kysely';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { createDeps } from './deps.ts';
import { AppError } from './errors.ts';
import { createTokenFor } from './tokens/service.ts';
import { inTransaction } from './events/service.ts';
import { createUser, findUserByUsername } from './users/service.ts';

const USAGE = `usage: weft <command> [options]

commands:
  migrate                                   apply pending database migrations
  create-user <username> --email E [--staff] [--display-name N] [--token-name T]
                                            create a user and print a new API token
  create-token <username> [--name T]        print a new API token for an existing user

Configuration comes from the environment (DATABASE_URL, DATA_DIR, ...), as for the server.`;

const COMMANDS = ['migrate', 'create-user', 'create-token'];

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
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

async function run(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    console.error(`weft: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { positionals, values } = parsed;
  const [command, arg] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
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
  const tokenName = (command === 'create-user' ? values['token-name'] : values.name).trim();
  if (!tokenName || tokenName.length > 100) {
    console.error('weft: the token name must be 1-100 characters');
    return 2;
  }
  const config = loadConfig();
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir, migrate: false });
  const deps = createDeps(config, database);
  try {
    const applied = await migrateToLatest(database.db as Kysely<unknown>, database.dialect);
    if (command === 'migrate') {
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'migrations are up to date');
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
      const token = await inTransaction(deps, (tx) => createTokenFor(tx, user, { name: tokenName }, null));
      console.log(token.token);
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
    if (err instanceof ConfigError) console.error(`weft: configuration error: ${err.message}`);
    else if (err instanceof AppError) console.error(`weft: ${err.detail}`);
    else console.error('weft:', err);
    process.exit(1);
  },
);
