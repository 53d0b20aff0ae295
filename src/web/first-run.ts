import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { authenticateSecret } from '../tokens/service.ts';
import { UpdateUserBody } from '../users/schemas.ts';
import { updateUser } from '../users/service.ts';
import type { Viewer } from '../viewer.ts';
import { checkBody } from './api-body.ts';
import { LOGIN_COOKIE, cookie } from './auth-pages.ts';
import { seeOther, sendPage } from './context.ts';
import { type FormState, attempt, emptyForm, field, formMessage } from './forms.ts';
import { html } from './html.ts';
import { layout } from './layout.ts';
import { firstRunCode, isFirstRun } from './first-run-state.ts';

/**
 * First run (README "Quickstart", "Web interface"): while no active staff user has a password,
 * `/setup` sets the bootstrap admin's password, proven by the server's console token
 * (BOOTSTRAP_ADMIN_TOKEN, or any staff user's API token) or by the one-time code this process
 * printed in its log at start-up. Once a staff user can sign in, `/setup` is 404.
 */

const SetupForm = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 100 })),
    proof: Type.Optional(Type.String({ maxLength: 200 })),
    code: Type.Optional(Type.String({ maxLength: 200 })),
    password: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
const SetupQuery = Type.Object({ code: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false });

let codeUsed = false;

const codeMatches = (given: string | undefined): boolean => {
  if (codeUsed || !given) return false;
  const a = Buffer.from(firstRunCode());
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** The staff user the one-time code sets up: the oldest active staff user (the bootstrap admin). */
async function bootstrapStaff(deps: Deps): Promise<Viewer | null> {
  const row = await deps.db
    .selectFrom('users')
    .select(['uuid', 'username'])
    .where('is_staff', '=', 1)
    .where('is_active', '=', 1)
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  return row ? { uuid: row.uuid, username: row.username, isStaff: true, tokenUuid: '' } : null;
}

export async function firstRunPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const page = async (reply: FastifyReply, state: FormState, code: string | undefined) => {
    const bound = randomBytes(18).toString('base64url');
    reply.header('set-cookie', cookie(deps, LOGIN_COOKIE, bound, 3600));
    const staff = await bootstrapStaff(deps);
    const body = staff
      ? html`<h1>Set up Weft</h1>
          <p>Set the password of the staff user <strong>${staff.username}</strong>, then sign in with it.</p>
          ${formMessage(state)}
          <form class="stack" method="post" action="/setup">
            <input type="hidden" name="_csrf" value="${bound}" />
            ${
              code
                ? html`<input type="hidden" name="code" value="${code}" />
                    <p class="muted">Using the one-time set-up link from the server&rsquo;s log.</p>`
                : field(state, {
                    name: 'proof',
                    label: 'Console token',
                    type: 'password',
                    required: true,
                    autocomplete: 'off',
                    hint: 'The BOOTSTRAP_ADMIN_TOKEN the server was started with (or a staff user’s API token).',
                  })
            }
            ${field(state, { name: 'password', label: 'New password', type: 'password', required: true, autocomplete: 'new-password' })}
            <div><button type="submit" class="primary">Set the password</button></div>
          </form>`
      : html`<h1>Set up Weft</h1>
          <p>No staff user exists yet. Create one on the server&rsquo;s console:</p>
          <pre class="wrap">npx weft create-user admin --email admin@example.com --staff</pre>
          <p>or start the server once with BOOTSTRAP_ADMIN_TOKEN set, then come back here.</p>`;
    return sendPage(reply, layout({ title: 'Set up', caller: null }, body), state.status);
  };

  app.get('/setup', { config: { public: true }, schema: { hide: true, querystring: SetupQuery } }, async (request, reply) => {
    if (!(await isFirstRun(deps))) throw new AppError(404, 'not_found', 'A staff user can sign in already: sign in instead.');
    const { code } = request.query as { code?: string };
    return page(reply, emptyForm(), code);
  });

  app.post(
    '/setup',
    { config: { public: true, rateLimit: 'api:login' }, schema: { hide: true, body: SetupForm } },
    async (request, reply) => {
      if (!(await isFirstRun(deps))) throw new AppError(404, 'not_found', 'A staff user can sign in already: sign in instead.');
      const b = request.body as { proof?: string; code?: string; password?: string };
      const done = await attempt({}, ['proof', 'password'], async () => {
        let staff: Viewer | null = null;
        if (b.code !== undefined) {
          if (!codeMatches(b.code))
            throw new AppError(
              403,
              'forbidden',
              'This set-up link was used already or is not this server’s: use the console token.',
            );
          staff = await bootstrapStaff(deps);
        } else {
          const viewer = b.proof ? await authenticateSecret(deps, b.proof) : null;
          if (!viewer?.isStaff)
            throw new AppError(
              403,
              'forbidden',
              'The console token is not right: it is the BOOTSTRAP_ADMIN_TOKEN the server was started with.',
            );
          staff = viewer;
        }
        if (!staff) throw new AppError(409, 'conflict', 'No staff user exists yet.');
        const input = { password: b.password ?? '' };
        checkBody(UpdateUserBody, input);
        await updateUser(deps, staff, staff.username, input);
        if (b.code !== undefined) codeUsed = true;
        return staff.username;
      });
      if (!done.ok) {
        // a wrong proof is the proof field's error; the password's own rules are the password's
        if (done.state.status === 403 && b.code === undefined) done.state.errors = { proof: done.state.message ?? '' };
        if (done.state.status === 403 && b.code === undefined) done.state.message = undefined;
        return page(reply, done.state, b.code);
      }
      reply.header('set-cookie', cookie(deps, LOGIN_COOKIE, '', 0));
      return seeOther(reply, '/login');
    },
  );
}
