import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, repoParamsSchema } from '../http/repo-paths.ts';
import { repoRequest } from '../http/repo-routes.ts';
import { Page } from '../http/schemas.ts';
import {
  MailSettingsSchema,
  MarkReadBody,
  PutMailSettingsBody,
  Marked,
  Notification,
  NotificationListQuery,
  NotificationParams,
  PutRepoSubscriptionBody,
  PutSubjectSubscriptionBody,
  RepoSubscription,
  SubjectSubscription,
  UnreadCount,
  UpdateNotificationBody,
} from './schemas.ts';
import { mailSettings } from './mail.ts';
import {
  getNotification,
  inboxCursor,
  listNotifications,
  markAllRead,
  putMailSettings,
  unreadCount,
  updateNotification,
} from './service.ts';
import {
  getPullSubscription,
  getRepoWatch,
  getThreadSubscription,
  putPullSubscription,
  putRepoWatch,
  putThreadSubscription,
} from './subscriptions.ts';

const NumberParam = { number: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) };

/** The inbox and the subscriptions (docs/notifications.md). */
export async function notificationsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['notifications'];
  const access =
    'Only notifications whose subject the caller can read now are listed: one whose repo they lost access to is left out (not deleted: it returns with access).';

  r.get(
    '/notifications',
    {
      schema: {
        tags,
        summary: "The caller's notifications, newest updated_at first",
        description: `One per (user, subject). state: unread, read, done or all (default unread and read); reason: the latest reason; repo: {owner}/{slug}. Paging is by keyset: \`next\` carries \`after\` (the last row's cursor), so every page costs what the first does; \`page\` still works. ${access}`,
        querystring: NotificationListQuery,
        response: { 200: Page(Notification) },
      },
    },
    async (request, reply) => {
      const p = pageParams(request.query);
      const { state, reason, repo, after } = request.query;
      const filter = { ...(state ? { state } : {}), ...(reason ? { reason } : {}), ...(repo ? { repo } : {}) };
      const rows = await listNotifications(deps, requireViewer(request), filter, p, after);
      // the next page by keyset (after the last row), so a deep page costs what the first does
      const last = rows.length > p.perPage ? rows[p.perPage - 1] : undefined;
      return pageOf(request, reply, p, rows, undefined, last ? { after: inboxCursor(last), page: '1' } : undefined, ['after']);
    },
  );

  r.get(
    '/notifications/count',
    {
      // the header badge of every page asks with the page's session (docs/notifications.md)
      config: { sessionCookie: true },
      schema: { tags, summary: "The caller's unread count (unread, not done, readable now)", response: { 200: UnreadCount } },
    },
    async (request) => ({ unread: await unreadCount(deps, requireViewer(request)) }),
  );

  r.post(
    '/notifications/mark-read',
    {
      schema: {
        tags,
        summary: "Mark read the caller's unread notifications updated at or before `before` (default now)",
        description: 'With repo ({owner}/{slug}), that repo only. Emits notification-updated in the user scope when any changed.',
        body: MarkReadBody,
        response: { 200: Marked },
      },
    },
    async (request) => ({ marked: await markAllRead(deps, requireViewer(request), request.body ?? {}) }),
  );

  r.get(
    '/notifications/:uuid',
    {
      schema: {
        tags,
        summary: 'One of your notifications',
        description: `Another user's uuid is 404. ${access}`,
        params: NotificationParams,
        response: { 200: Notification },
      },
    },
    async (request) => getNotification(deps, requireViewer(request), request.params.uuid),
  );

  r.patch(
    '/notifications/:uuid',
    {
      schema: {
        tags,
        summary: 'Mark a notification read or unread, done or not done',
        description:
          "done: true also marks it read (unless unread is given). New activity on its subject makes it unread and not done again. Another user's uuid is 404. Emits notification-updated in the user scope.",
        params: NotificationParams,
        body: UpdateNotificationBody,
        response: { 200: Notification },
      },
    },
    async (request) => updateNotification(deps, requireViewer(request), request.params.uuid, request.body),
  );

  r.get(
    '/user/notification-settings',
    {
      schema: {
        tags,
        summary: 'Your notification mail settings',
        description: 'Kept beside the user record. Mail is sent only when the server has SMTP_URL and MAIL_FROM.',
        response: { 200: MailSettingsSchema },
      },
    },
    async (request) => mailSettings(deps.db, requireViewer(request).uuid),
  );
  r.put(
    '/user/notification-settings',
    {
      schema: {
        tags,
        summary: 'Change your notification mail settings',
        description:
          'Omitted fields stay unchanged; an unknown timezone is 400. Saving confirms your address: email_bouncing goes back to false.',
        body: PutMailSettingsBody,
        response: { 200: MailSettingsSchema },
      },
    },
    async (request) => putMailSettings(deps, requireViewer(request), request.body),
  );

  for (const form of REPO_FORMS) {
    const repoParams = repoParamsSchema(form);
    const numberParams = repoParamsSchema(form, NumberParam);
    const watchDesc = 'Read access to the repo (404 otherwise); your own setting, so an archived repo is no obstacle.';
    r.get(
      `${form.prefix}/subscription`,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'Your watch level on the repo (participating by default)',
          description: watchDesc,
          params: repoParams,
          response: { 200: RepoSubscription },
        },
      },
      async (request) => getRepoWatch(deps, requireViewer(request), repoRequest(request).at),
    );
    r.put(
      `${form.prefix}/subscription`,
      {
        schema: {
          tags,
          summary: 'Set your watch level on the repo',
          description: watchDesc,
          params: repoParams,
          body: PutRepoSubscriptionBody,
          response: { 200: RepoSubscription },
        },
      },
      async (request) => {
        const { viewer, ref } = repoRequest(request);
        return putRepoWatch(deps, viewer, ref, request.body.level);
      },
    );
    r.delete(
      `${form.prefix}/subscription`,
      {
        schema: {
          tags,
          summary: 'Back to the default watch level (participating)',
          description: watchDesc,
          params: repoParams,
          response: { 200: RepoSubscription },
        },
      },
      async (request) => {
        const { viewer, ref } = repoRequest(request);
        return putRepoWatch(deps, viewer, ref, null);
      },
    );

    for (const kind of ['threads', 'pulls'] as const) {
      const one = kind === 'threads' ? 'thread' : 'pull';
      const desc = `Read access to the repo (404 otherwise, and for a missing ${one}). An explicit subscription overrides the repo level both ways.`;
      const get = kind === 'threads' ? getThreadSubscription : getPullSubscription;
      const put = kind === 'threads' ? putThreadSubscription : putPullSubscription;
      r.get(
        `${form.prefix}/${kind}/:number/subscription`,
        {
          config: { repo: 'repo' },
          schema: {
            tags,
            summary: `Whether the ${one}'s activity reaches your inbox`,
            description: desc,
            params: numberParams,
            response: { 200: SubjectSubscription },
          },
        },
        async (request) => {
          const on = repoRequest<{ repo_slug: string; number: number }>(request);
          return get(deps, on.viewer, on.at, on.params.number);
        },
      );
      r.put(
        `${form.prefix}/${kind}/:number/subscription`,
        {
          schema: {
            tags,
            summary: `Subscribe to the ${one} (subscribed: true) or mute it (false)`,
            description: desc,
            params: numberParams,
            body: PutSubjectSubscriptionBody,
            response: { 200: SubjectSubscription },
          },
        },
        async (request) => {
          const on = repoRequest<{ repo_slug: string; number: number }>(request);
          return put(deps, on.viewer, on.ref, on.params.number, request.body.subscribed);
        },
      );
      r.delete(
        `${form.prefix}/${kind}/:number/subscription`,
        {
          schema: {
            tags,
            summary: `Remove your explicit subscription to the ${one} (the repo level decides again)`,
            description: desc,
            params: numberParams,
            response: { 200: SubjectSubscription },
          },
        },
        async (request) => {
          const on = repoRequest<{ repo_slug: string; number: number }>(request);
          return put(deps, on.viewer, on.ref, on.params.number, null);
        },
      );
    }
  }
}
