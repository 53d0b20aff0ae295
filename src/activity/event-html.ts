import type SanitizeHtml from 'sanitize-html';
import { lazyRequire } from '../lazy-require.ts';
import { boundedMarkdown } from '../markdown/bounded.ts';
import type { EventRecord } from '../events/service.ts';
import { sentence } from './event-sentence.ts';

const markdown = { render: (text: string) => boundedMarkdown().render(text) };
// sanitize-html is loaded with the first fragment
const sanitizer = lazyRequire<typeof SanitizeHtml>('sanitize-html');
let FRAGMENT: SanitizeHtml.IOptions | null = null;

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// The fragment's own markup plus what the Markdown renderer allows.
const fragmentOptions = (sanitizeHtml: typeof SanitizeHtml): SanitizeHtml.IOptions => ({
  ...sanitizeHtml.defaults,
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'article', 'header', 'span', 'time', 'dl', 'dt', 'dd', 'img', 'del', 's'],
  allowedAttributes: {
    article: ['id', 'class', 'data-kind', 'data-event-id'],
    span: ['class'],
    time: ['datetime', 'title'],
    a: ['href', 'class', 'title', 'rel'],
    img: ['src', 'alt', 'title'],
    code: ['class'],
    th: ['style'],
    td: ['style'],
    ol: ['start'],
    div: ['class'],
  },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowProtocolRelative: false,
});

/** The Markdown text an event carries, by the payload fields the event kinds use. */
function markdownOf(payload: Record<string, unknown>): string | null {
  for (const key of ['body', 'message', 'text']) {
    if (typeof payload[key] === 'string') return payload[key] as string;
  }
  return null;
}

/**
 * An event as a sanitised HTML fragment (README "Live event stream", `html=true`): an `<article>`
 * with the event's id and kind, a header naming the actor, what they did as a sentence with links
 * (event-sentence.ts; the kind for kinds without one) and the time, the event's Markdown text
 * (its `body_html`, or its `body`/`message` rendered by the Markdown renderer) and its other
 * plain payload fields as a definition list. Several lines; the stream sends one `data:` line each.
 */
export function eventHtml(event: EventRecord): string {
  const payload = event.payload;
  const lines: string[] = [];
  lines.push(
    `<article id="event-${escape(event.id)}" class="weft-event" data-kind="${escape(event.kind)}" data-event-id="${escape(event.id)}">`,
  );
  const actor = event.actor ? `<span class="actor">${escape(event.actor.username)}</span> ` : '';
  lines.push(
    `<header>${actor}<span class="what">${sentence(event.kind, payload)}</span> <time datetime="${escape(event.created_at)}" title="${escape(event.created_at)}">${escape(event.created_at)}</time></header>`,
  );
  const text = markdownOf(payload);
  const body = typeof payload.body_html === 'string' ? (payload.body_html as string) : text !== null ? markdown.render(text) : '';
  if (body.trim()) lines.push(`<div class="body">${body.trim()}</div>`);
  const fields = Object.entries(payload).filter(
    ([key, value]) =>
      !['body', 'body_html', 'message', 'text'].includes(key) && ['string', 'number', 'boolean'].includes(typeof value),
  );
  if (fields.length) {
    lines.push('<dl>');
    for (const [key, value] of fields) lines.push(`<dt>${escape(key)}</dt><dd>${escape(String(value))}</dd>`);
    lines.push('</dl>');
  }
  lines.push('</article>');
  const sanitizeHtml = sanitizer();
  return sanitizeHtml(lines.join('\n'), (FRAGMENT ??= fragmentOptions(sanitizeHtml)));
}
