/**
 * One-click unsubscribe (RFC 8058, docs/notifications.md "Mail"): the `List-Unsubscribe` link of a
 * notification mail. Its signed token names the user and the subject (or the repo); a POST (what a
 * mail client sends, `List-Unsubscribe=One-Click`) unsubscribes without signing in; a GET shows a
 * page with the button, so a link scanner that follows links changes nothing.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { inTransaction } from '../../core/transaction.ts';
import type { Deps } from '../../deps.ts';
import { readUnsubscribeToken } from '../../notifications/mail.ts';
import { catchUp } from '../../notifications/watch.ts';
import { sendPage } from '../context.ts';
import { html } from '../html.ts';
import { layout } from '../layout.ts';
import { FormBody } from '../settings-common.ts';

const Params = Type.Object({ token: Type.String({ maxLength: 600 }) });

export async function unsubscribePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const invalid = html`<h1>Unsubscribe</h1>
    <p class="error">This unsubscribe link is not valid.</p>`;

  app.get(
    '/notifications/unsubscribe/:token',
    { config: { public: true }, schema: { hide: true, params: Params } },
    async (request, reply) => {
      const { token } = request.params as { token: string };
      const found = readUnsubscribeToken(deps, token);
      const body = found
        ? html`<h1>Unsubscribe</h1>
            <p>Stop mail and notifications about this ${found.what === 'r' ? 'repo' : 'thread or pull'}?</p>
            <form method="post" action="/notifications/unsubscribe/${token}">
              <input type="hidden" name="List-Unsubscribe" value="One-Click" />
              <button type="submit" class="primary">Unsubscribe</button>
            </form>`
        : invalid;
      return sendPage(reply, layout({ title: 'Unsubscribe', caller: request.page ?? null }, body), found ? 200 : 404);
    },
  );

  app.post(
    '/notifications/unsubscribe/:token',
    { config: { public: true }, schema: { hide: true, params: Params, body: Type.Optional(FormBody) } },
    async (request, reply) => {
      const found = readUnsubscribeToken(deps, (request.params as { token: string }).token);
      if (!found) return sendPage(reply, layout({ title: 'Unsubscribe', caller: request.page ?? null }, invalid), 404);
      const now = deps.clock.now().toISOString();
      // leaving a watched repo: the inbox takes in what it has not yet read of it first (watch.ts)
      if (found.what === 'r') await catchUp(deps, found.user);
      // no caller: the signed token is the credential, and it can only turn mail off for its own user
      await inTransaction(deps, async (tx) => {
        if (found.what === 's') {
          await tx.db
            .deleteFrom('subject_subscriptions')
            .where('user_uuid', '=', found.user)
            .where('subject_uuid', '=', found.uuid)
            .execute();
          await tx.db
            .insertInto('subject_subscriptions')
            .values({ user_uuid: found.user, subject_uuid: found.uuid, subscribed: 0, created_at: now })
            .execute();
        } else {
          await tx.db
            .deleteFrom('repo_subscriptions')
            .where('user_uuid', '=', found.user)
            .where('repo_uuid', '=', found.uuid)
            .execute();
          await tx.db
            .insertInto('repo_subscriptions')
            .values({ user_uuid: found.user, repo_uuid: found.uuid, level: 'ignoring', created_at: now })
            .execute();
        }
      });
      const body = html`<h1>Unsubscribed</h1>
        <p>
          You will get no more mail or notifications about this ${found.what === 'r' ? 'repo' : 'thread or pull'}, except direct
          mentions and review requests.
        </p>`;
      return sendPage(reply, layout({ title: 'Unsubscribed', caller: request.page ?? null }, body));
    },
  );
}
