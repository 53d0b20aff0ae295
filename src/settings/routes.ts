import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { errors } from '../http/route-schemas.ts';
import { SiteSettings, UpdateSiteSettingsBody } from './schemas.ts';
import { getSettings, updateSettings } from './service.ts';

export async function settingsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['site-settings'];
  r.get(
    '/site-settings',
    {
      schema: {
        tags,
        summary: 'The site settings (staff only)',
        description: 'Stored in the database: every server instance sees a change on its next request. Non-staff get 403.',
        response: { 200: SiteSettings, ...errors(403) },
      },
    },
    async (request) => getSettings(deps, requireViewer(request)),
  );
  r.put(
    '/site-settings',
    {
      schema: {
        tags,
        summary: 'Change site settings (staff only); omitted fields keep their values',
        description:
          "Emits settings-updated in the acting user's scope. A duration that does not parse (`7x`, `-1d`, `1.5d`) is 400. Non-staff get 403.",
        body: UpdateSiteSettingsBody,
        response: { 200: SiteSettings, ...errors(403) },
      },
    },
    async (request) => updateSettings(deps, requireViewer(request), request.body),
  );
}
