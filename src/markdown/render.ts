import type MarkdownIt from 'markdown-it';
import type { StateInline, Token } from 'markdown-it';
import type SanitizeHtml from 'sanitize-html';
import { lazyRequire } from '../lazy-require.ts';
import { REF_MARK_CLOSE, REF_MARK_OPEN, referenceMatches } from './references.ts';

// Both are loaded with the first text rendered, not when the server starts.
const markdownIt = lazyRequire<typeof MarkdownIt>('markdown-it');
const sanitizer = lazyRequire<typeof SanitizeHtml>('sanitize-html');
let sanitizeWith: SanitizeHtml.IOptions | null = null;
const sanitize = (dirty: string) => {
  const sanitizeHtml = sanitizer();
  return sanitizeHtml(dirty, (sanitizeWith ??= sanitizeOptions(sanitizeHtml)));
};

/**
 * The one Markdown renderer (thread and reply bodies, ping bodies, timer messages, event HTML).
 * markdown-it with raw HTML off, then sanitize-html as a second fence: only ordinary formatting
 * tags survive, links only to http(s) and mailto. `@username` becomes a link to the user.
 */

// Usernames as names.ts defines them; a mention must not follow a word character (emails).
const MENTION_RE = /^@([a-z0-9][a-z0-9_-]{0,38})(?![a-z0-9_-])/i;

function mentionRule(mentionHref: (username: string) => string) {
  return (state: StateInline, silent: boolean): boolean => {
    if (state.src.charCodeAt(state.pos) !== 0x40 /* @ */) return false;
    const prev = state.pos > 0 ? state.src[state.pos - 1]! : '';
    if (/[\w@.-]/.test(prev)) return false;
    const match = MENTION_RE.exec(state.src.slice(state.pos));
    if (!match) return false;
    if (!silent) {
      const username = match[1]!.toLowerCase();
      const open = state.push('link_open', 'a', 1);
      open.attrs = [
        ['href', mentionHref(username)],
        ['class', 'mention'],
      ];
      const text = state.push('text', '', 0);
      text.content = match[0];
      state.push('link_close', 'a', -1);
    }
    state.pos += match[0].length;
    return true;
  };
}

const escapeText = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/**
 * Marks each reference (`#N`, `!N`, `owner/slug#N`) in the text of a paragraph as
 * `<span class="ref">`, outside links and code (which are other tokens). A page links the marks
 * the reader may follow (src/references/render.ts); unlinked, a mark is the text as written.
 */
function referenceRule(state: { tokens: Token[]; Token: new (type: string, tag: string, nesting: number) => Token }): void {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    let inLink = 0;
    const out: Token[] = [];
    for (const tok of block.children) {
      if (tok.type === 'link_open') inLink++;
      if (tok.type === 'link_close') inLink--;
      if (tok.type !== 'text' || inLink > 0 || !/[#!]/.test(tok.content)) {
        out.push(tok);
        continue;
      }
      let last = 0;
      const text = tok.content;
      for (const m of referenceMatches(text)) {
        if (m.index > last) out.push(textToken(state, text.slice(last, m.index), tok.level));
        const mark = new state.Token('html_inline', '', 0);
        mark.content = `${REF_MARK_OPEN}${escapeText(m[0])}${REF_MARK_CLOSE}`;
        mark.level = tok.level;
        out.push(mark);
        last = m.index + m[0].length;
      }
      if (last === 0) out.push(tok);
      else if (last < text.length) out.push(textToken(state, text.slice(last), tok.level));
    }
    block.children = out;
  }
}

function textToken(
  state: { Token: new (type: string, tag: string, nesting: number) => Token },
  content: string,
  level: number,
): Token {
  const t = new state.Token('text', '', 0);
  t.content = content;
  t.level = level;
  return t;
}

function sanitizeOptions(sanitizeHtml: typeof SanitizeHtml): SanitizeHtml.IOptions {
  const SANITIZE: SanitizeHtml.IOptions = {
    allowedTags: [
      'p',
      'br',
      'hr',
      'h1',
      'h2',
      'h3',
      'h4',
      'h5',
      'h6',
      'blockquote',
      'pre',
      'code',
      'em',
      'strong',
      's',
      'del',
      'ul',
      'ol',
      'li',
      'a',
      'table',
      'thead',
      'tbody',
      'tr',
      'th',
      'td',
      'img',
      'span',
    ],
    allowedAttributes: {
      a: ['href', 'class', 'title'],
      img: ['src', 'alt', 'title'],
      span: ['class'],
      code: ['class'],
      th: ['style'],
      td: ['style'],
      ol: ['start'],
    },
    allowedClasses: { span: ['ref'] },
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesAppliedToAttributes: ['href', 'src'],
    allowProtocolRelative: false,
    allowedStyles: { th: { 'text-align': [/^(left|right|center)$/] }, td: { 'text-align': [/^(left|right|center)$/] } },
    transformTags: { a: sanitizeHtml.simpleTransform('a', { rel: 'nofollow noopener' }, true) },
  };
  SANITIZE.allowedAttributes = {
    ...(SANITIZE.allowedAttributes as Record<string, string[]>),
    a: ['href', 'class', 'title', 'rel'],
  };
  return SANITIZE;
}

export interface MarkdownRenderer {
  /** Sanitised HTML for a Markdown text. */
  render(markdown: string): string;
}

export function createMarkdownRenderer(opts: { mentionHref?: (username: string) => string } = {}): MarkdownRenderer {
  const href = opts.mentionHref ?? ((u: string) => `/users/${encodeURIComponent(u)}`);
  let md: InstanceType<typeof MarkdownIt> | null = null;
  const build = () => {
    const built = new (markdownIt())({ html: false, linkify: true, breaks: false });
    built.inline.ruler.after('emphasis', 'mention', mentionRule(href));
    built.core.ruler.push('references', referenceRule as Parameters<typeof built.core.ruler.push>[1]);
    return built;
  };
  return { render: (markdown) => sanitize((md ??= build()).render(markdown)) };
}

/** The distinct usernames mentioned as `@username` (lowercase, first-seen order), outside code. */
export function extractMentions(markdown: string): string[] {
  const seen = new Set<string>();
  const md = new (markdownIt())({ html: false });
  md.inline.ruler.after(
    'emphasis',
    'mention',
    mentionRule((u) => {
      seen.add(u);
      return '#';
    }),
  );
  md.render(markdown);
  return [...seen];
}
