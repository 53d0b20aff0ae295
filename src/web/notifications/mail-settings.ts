/**
 * `/settings/notifications` (docs/notifications.md "What users choose"): the caller's mail
 * settings — instant, daily digest or off, and the timezone of the digest's 08:00 — through the
 * same rule as `PUT /user/notification-settings`. A plain form; a refusal shows the form again
 * with the error beside its field. Saving also confirms a bouncing address.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../../deps.ts';
import { type MailSetting, mailConfigured, mailSettings } from '../../notifications/mail.ts';
import { PutMailSettingsBody } from '../../notifications/schemas.ts';
import { putMailSettings } from '../../notifications/service.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from '../context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from '../forms.ts';
import { html } from '../html.ts';
import { csrfField } from '../layout.ts';
import { FormBody, type FormFields, checkBody, text } from '../settings-common.ts';
import { settingsPage } from '../settings-user.ts';

const MODES = [
  ['instant', 'At once (activity on one subject within a minute is one mail)'],
  ['daily', 'A daily digest at 08:00 in my timezone'],
  ['off', 'No mail'],
] as const;

const Query = Type.Object({ saved: Type.Optional(Type.String({ maxLength: 1 })) });

export async function mailSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const page = async (reply: FastifyReply, c: PageCaller, state?: FormState, saved = false) => {
    const s = await mailSettings(deps.db, c.viewer.uuid);
    const body = html`<section aria-labelledby="mail-h">
      <h2 id="mail-h">Notification mail</h2>
      ${mailConfigured(deps) ? '' : html`<p class="muted">This server sends no mail (SMTP is not set up); your choice is kept.</p>`}
      ${s.email_bouncing ? html`<p class="error" role="alert">Mail to your address was refused: saving here confirms it and sends again.</p>` : ''}
      ${saved ? html`<p role="status">Saved.</p>` : ''} ${formMessage(state)}
      <form class="stack" method="post" action="/settings/notifications">
        ${csrfField(c)}
        ${field(state, { name: 'email_notifications', label: 'Send me mail', type: 'select', value: s.email_notifications, options: MODES })}
        ${field(state, {
          name: 'timezone',
          label: 'Timezone',
          value: s.timezone,
          required: true,
          maxlength: 64,
          hint: 'An IANA name such as Europe/Berlin or UTC: the daily digest comes at 08:00 there.',
        })}
        <div><button type="submit" class="primary">Save mail settings</button></div>
      </form>
    </section>`;
    return sendPage(reply, settingsPage(c, 'Notification mail', '/settings/notifications', body), state?.status ?? 200);
  };

  app.get(
    '/settings/notifications',
    { config: { public: true }, schema: { hide: true, querystring: Query } },
    async (request, reply) => page(reply, requirePage(request), undefined, (request.query as { saved?: string }).saved === '1'),
  );

  app.post(
    '/settings/notifications',
    { config: { public: true }, schema: { hide: true, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const body = request.body as FormFields;
      const input = {
        email_notifications: text(body, 'email_notifications') as MailSetting,
        timezone: text(body, 'timezone').trim(),
      };
      const done = await attempt(typedValues(body), ['email_notifications', 'timezone'], async () => {
        checkBody(PutMailSettingsBody, input);
        return putMailSettings(deps, c.viewer, input);
      });
      if (!done.ok) return page(reply, c, done.state);
      return seeOther(reply, '/settings/notifications?saved=1');
    },
  );
}
