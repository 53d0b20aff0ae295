/**
 * The preview of a Markdown field (docs/web.md "Markdown"): weft.js adds a Preview button beside
 * every Markdown text area and shows what this route answers, the text rendered by the one bounded
 * renderer (so a preview costs what a post would and never holds the loop). Signed-in callers only,
 * with the page's CSRF token like every page POST; references stay unlinked marks here (a link needs
 * the reader's access to each target, decided when the text is posted and shown).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { boundedMarkdown } from '../markdown/bounded.ts';
import { requirePage, sendPage } from './context.ts';
import { html, trusted } from './html.ts';
import { pageRoute } from './page-route.ts';

const PreviewForm = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 100 })),
    text: Type.String({ maxLength: 65536 }),
  },
  { additionalProperties: false },
);

export async function markdownPreviewPages(app: FastifyInstance): Promise<void> {
  pageRoute(app, 'POST', '/markdown/preview', {}, { body: PreviewForm }, async (request, reply) => {
    requirePage(request);
    const { text } = request.body as { text: string };
    return sendPage(
      reply,
      text.trim()
        ? html`<div class="markdown">${trusted(boundedMarkdown().render(text))}</div>`
        : html`<p class="muted">Nothing to preview.</p>`,
    );
  });
}
