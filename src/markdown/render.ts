import { createHash } from 'node:crypto';
import type MarkdownIt from 'markdown-it';
import type { StateCore, StateInline, Token } from 'markdown-it';
import type SanitizeHtml from 'sanitize-html';
import { lazyRequire } from '../lazy-require.ts';
import { REF_MARK_CLOSE, REF_MARK_OPEN, referenceMatches } from './references.ts';

// Both are loaded with the first text rendered, not when the server starts.
const markdownIt = lazyRequire<typeof MarkdownIt>('markdown-it');
type Plugin = (md: InstanceType<typeof MarkdownIt>) => void;
const footnotePlugin = lazyRequire<Plugin>('markdown-it-footnote');
const emojiPlugins = lazyRequire<{ full: Plugin }>('markdown-it-emoji');
const sanitizer = lazyRequire<typeof SanitizeHtml>('sanitize-html');
let sanitizeWith: SanitizeHtml.IOptions | null = null;
const sanitize = (dirty: string) => {
  const sanitizeHtml = sanitizer();
  return sanitizeHtml(dirty, (sanitizeWith ??= sanitizeOptions()));
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

/** A task list item's marker at the start of its first paragraph: `[ ]`, `[x]` or `[X]`, then a space. */
const TASK_RE = /^\[([ xX])\](?=\s)/;

/**
 * The task list items of a parsed text, in document order: the inline token of each item's first
 * paragraph whose text starts with a marker (GitHub's task lists).
 */
function taskItems(tokens: Token[]): Array<{ item: Token; inline: Token; checked: boolean }> {
  const out: Array<{ item: Token; inline: Token; checked: boolean }> = [];
  for (let i = 2; i < tokens.length; i++) {
    const inline = tokens[i]!;
    if (inline.type !== 'inline' || tokens[i - 1]!.type !== 'paragraph_open' || tokens[i - 2]!.type !== 'list_item_open')
      continue;
    const m = TASK_RE.exec(inline.content);
    if (m) out.push({ item: tokens[i - 2]!, inline, checked: m[1] !== ' ' });
  }
  return out;
}

/** Task lists: each marker becomes a checkbox numbered in document order (`data-task`), disabled until a page enables it. */
function taskListRule(state: StateCore): void {
  taskItems(state.tokens).forEach(({ item, inline, checked }, index) => {
    item.attrJoin('class', 'task-list-item');
    const first = inline.children?.[0];
    if (!first || first.type !== 'text') return;
    first.content = first.content.replace(TASK_RE, '');
    const box = new state.Token('html_inline', '', 0);
    box.content = `<input type="checkbox" class="task-list-item-checkbox" data-task="${index}" disabled${checked ? ' checked' : ''}>`;
    inline.children!.unshift(box);
  });
}

/**
 * The text with its `index`-th task (in the order the renderer numbers them) ticked or not; null
 * when there is no such task. Only the marker on that item's line changes.
 */
export function toggleTask(markdown: string, index: number, checked: boolean): string | null {
  const md = new (markdownIt())({ html: true });
  const task = taskItems(md.parse(markdown, {}))[index];
  if (!task || !task.inline.map) return null;
  const lines = markdown.split('\n');
  const at = task.inline.map[0];
  const line = lines[at];
  if (line === undefined) return null;
  const changed = line.replace(/^((?:\s*>)*\s*(?:[-*+]|\d{1,9}[.)])\s+)\[[ xX]\]/, `$1[${checked ? 'x' : ' '}]`);
  if (
    changed === line &&
    TASK_RE.exec(line.replace(/^((?:\s*>)*\s*(?:[-*+]|\d{1,9}[.)])\s+)/, ''))?.[1] !== (checked ? 'x' : ' ')
  ) {
    // the marker is not on the item's first line as written (a lazy continuation): leave it
    return null;
  }
  lines[at] = changed;
  return lines.join('\n');
}

/** Headings get an id (`user-content-` and a slug of their text, unique in the text) and a link to themselves. */
function headingAnchorRule(state: StateCore): void {
  const seen = new Map<string, number>();
  const tokens = state.tokens;
  for (let i = 0; i < tokens.length - 1; i++) {
    if (tokens[i]!.type !== 'heading_open') continue;
    const inline = tokens[i + 1]!;
    const base =
      inline.content
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .trim()
        .replace(/\s+/g, '-')
        .slice(0, 100) || 'section';
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    const id = `user-content-${n ? `${base}-${n}` : base}`;
    tokens[i]!.attrSet('id', id);
    const link = new state.Token('html_inline', '', 0);
    link.content = `<a class="anchor" href="#${id}" aria-hidden="true" tabindex="-1"></a>`;
    inline.children?.unshift(link);
  }
}

/** Footnote ids carry the text's hash, so two texts on one page do not share `#fn-1`. */
const docId = (markdown: string) => createHash('sha256').update(markdown).digest('hex').slice(0, 8);

function sanitizeOptions(): SanitizeHtml.IOptions {
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
      // the usual safe subset of inline HTML (GitHub's), footnotes and task lists
      'b',
      'i',
      'u',
      'ins',
      'mark',
      'sub',
      'sup',
      'kbd',
      'samp',
      'var',
      'abbr',
      'cite',
      'q',
      'small',
      'dl',
      'dt',
      'dd',
      'details',
      'summary',
      'div',
      'section',
      'caption',
      'tfoot',
      'figure',
      'figcaption',
      'input',
    ],
    allowedAttributes: {
      a: ['href', 'class', 'title', 'id', 'aria-hidden', 'tabindex'],
      img: ['src', 'alt', 'title', 'width', 'height'],
      span: ['class'],
      code: ['class'],
      th: ['style', 'align'],
      td: ['style', 'align'],
      ol: ['start', 'class'],
      li: ['id', 'class'],
      sup: ['class'],
      section: ['class'],
      hr: ['class'],
      h1: ['id'],
      h2: ['id'],
      h3: ['id'],
      h4: ['id'],
      h5: ['id'],
      h6: ['id'],
      abbr: ['title'],
      details: ['open'],
      input: ['type', 'class', 'data-task', 'disabled', 'checked'],
    },
    allowedClasses: {
      span: ['ref'],
      a: ['mention', 'anchor', 'footnote-backref'],
      sup: ['footnote-ref'],
      section: ['footnotes'],
      ol: ['footnotes-list'],
      li: ['footnote-item', 'task-list-item'],
      hr: ['footnotes-sep'],
      input: ['task-list-item-checkbox'],
    },
    allowedSchemes: ['http', 'https', 'mailto'],
    allowedSchemesAppliedToAttributes: ['href', 'src'],
    allowProtocolRelative: false,
    allowedStyles: { th: { 'text-align': [/^(left|right|center)$/] }, td: { 'text-align': [/^(left|right|center)$/] } },
  };
  SANITIZE.allowedAttributes = {
    ...(SANITIZE.allowedAttributes as Record<string, string[]>),
    a: ['href', 'class', 'title', 'rel', 'id', 'aria-hidden', 'tabindex'],
  };
  // ids only as the renderer makes them (headings, footnotes): a text cannot clobber the page's own
  const idOk = (id: string | undefined) =>
    id === undefined || /^(user-content-[\p{L}\p{N}_-]+|fn(ref)?-[0-9a-f]{8}-[0-9]+(:[0-9]+)?)$/u.test(id);
  const inputOk = (attribs: Record<string, string>) => attribs.type === 'checkbox' && attribs.disabled !== undefined;
  const withoutForeignId = (attribs: Record<string, string>) => {
    const out = { ...attribs };
    if (!idOk(out.id)) delete out.id;
    return out;
  };
  SANITIZE.transformTags = {
    a: (tagName, attribs) => ({ tagName, attribs: { ...withoutForeignId(attribs), rel: 'nofollow noopener' } }),
    '*': (tagName, attribs) => ({ tagName, attribs: withoutForeignId(attribs) }),
  };
  SANITIZE.exclusiveFilter = (frame) => frame.tag === 'input' && !inputOk(frame.attribs);
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
    const built = new (markdownIt())({ html: true, linkify: true, breaks: false });
    built.use(footnotePlugin());
    built.use(emojiPlugins().full);
    built.inline.ruler.after('emphasis', 'mention', mentionRule(href));
    built.core.ruler.push('references', referenceRule as Parameters<typeof built.core.ruler.push>[1]);
    built.core.ruler.push('task_lists', taskListRule);
    built.core.ruler.push('heading_anchors', headingAnchorRule);
    return built;
  };
  return { render: (markdown) => sanitize((md ??= build()).render(markdown, { docId: docId(markdown) })) };
}

/** The distinct usernames mentioned as `@username` (lowercase, first-seen order), outside code. */
export function extractMentions(markdown: string): string[] {
  // no `@`, no mention: every reply and thread text is read for its terms (db/terms.ts)
  if (!markdown.includes('@')) return [];
  const seen = new Set<string>();
  mentionSink = seen;
  try {
    // the rule sees each mention while the text is parsed; nothing needs rendering
    (mentionParser ??= buildMentionParser()).parse(markdown, {});
  } finally {
    mentionSink = null;
  }
  return [...seen];
}

/** Where the one mention parser's rule puts what it sees (set for the length of one synchronous parse). */
let mentionSink: Set<string> | null = null;
let mentionParser: InstanceType<typeof MarkdownIt> | null = null;
function buildMentionParser(): InstanceType<typeof MarkdownIt> {
  const md = new (markdownIt())({ html: false });
  md.inline.ruler.after(
    'emphasis',
    'mention',
    mentionRule((u) => {
      mentionSink?.add(u);
      return '#';
    }),
  );
  return md;
}
