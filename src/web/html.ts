/**
 * Server-rendered HTML (README "Web interface"): a tagged template that escapes every
 * interpolated value unless it is already `Html` (made by this template or by `trusted`, for the
 * sanitised output of the Markdown renderer and the highlighter). Arrays are joined.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

type Value = Html | string | number | boolean | null | undefined | Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup that is already safe: sanitised Markdown, highlighted code, a server-built fragment. */
export const trusted = (text: string): Html => new Html(text);

/** A path segment, escaped for a URL (the template escapes it again for the attribute). */
export const seg = (value: string | number): string => encodeURIComponent(String(value));

/** A short relative time for a timestamp, in a <time> element (the full date in its title). */
export function when(iso: string | null | undefined): Html {
  if (!iso) return html``;
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time>`;
}

/** Previous/next links of a paginated list (`?page=N` on `path`, other query values kept). */
export function pager(path: string, page: number, hasMore: boolean, query: Record<string, string> = {}): Html {
  if (page <= 1 && !hasMore) return html``;
  const to = (n: number) => `${path}?${new URLSearchParams({ ...query, page: String(n) }).toString()}`;
  return html`<nav class="row" aria-label="Pages">
    ${page > 1 ? html`<a href="${to(page - 1)}" rel="prev">Previous</a>` : ''}
    <span class="muted">page ${page}</span>${hasMore ? html`<a href="${to(page + 1)}" rel="next">Next</a>` : ''}
  </nav>`;
}
