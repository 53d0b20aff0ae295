/**
 * The one reference parser (README "Issue tracker"): finds `#N` (thread N), `!N` (pull N),
 * `{owner}/{slug}#N` and `{owner}/{slug}!N` in Markdown text, and which of them a closing keyword
 * (`close`, `closes`, `closed`, `fix`, `fixes`, `fixed`, `resolve`, `resolves`, `resolved`, any
 * case) names. Code (fenced and indented blocks, inline code spans) and URLs (bare, autolinks and
 * link targets) hold no references. Pure: no database, no I/O.
 */
import { referenceMatches } from '../markdown/references.ts';

export interface Reference {
  kind: 'thread' | 'pull';
  /** the owner (a team slug or username) and repo slug, lower-cased; null for this repo */
  owner: string | null;
  slug: string | null;
  number: number;
  /** preceded by a closing keyword */
  closing: boolean;
}

/** Text with code and URLs blanked out (same length, so offsets stay). */
export function maskNonText(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, ' ');
  let out = text;
  // fenced code blocks: ``` or ~~~ (3 or more) up to the same fence or the end
  out = out.replace(/^( {0,3})(`{3,}|~{3,})[^\n]*\n[\s\S]*?(?:^\1?\2[`~]*[ \t]*$|(?![\s\S]))/gm, blank);
  // indented code blocks: lines of 4+ spaces or a tab after a blank line (or at the start)
  out = out.replace(/(^|\n[ \t]*\n)((?:(?: {4}|\t)[^\n]*(?:\n|$))+)/g, (_m, lead: string, code: string) => lead + blank(code));
  // inline code spans: a run of backticks up to the same run
  out = out.replace(/(`+)[\s\S]*?[^`]\1(?!`)|(`+)\S?\2(?!`)/g, blank);
  // link targets [text](target) and autolinks <scheme:...>
  out = out.replace(/\]\([^)\s]*(?:\s+"[^"]*")?\)/g, blank);
  out = out.replace(/<[a-z][a-z0-9+.-]*:[^>\s]*>/gi, blank);
  // bare URLs and www. hosts
  out = out.replace(/\b(?:[a-z][a-z0-9+.-]*:\/\/|www\.)[^\s<>]*/gi, blank);
  return out;
}

const KEYWORD_RE = /(?:^|[^\w])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?[ \t]+$/i;

/** Every reference in the text, in order, each (kind, owner, slug, number) once; closing if any occurrence is. */
export function findReferences(text: string): Reference[] {
  const masked = maskNonText(text);
  const found = new Map<string, Reference>();
  for (const m of referenceMatches(masked)) {
    const number = Number(m[4]);
    if (!Number.isSafeInteger(number) || number < 1 || number > 2 ** 31 - 1) continue;
    const owner = m[1]?.toLowerCase() ?? null;
    const slug = m[2]?.toLowerCase() ?? null;
    const kind = m[3] === '#' ? 'thread' : 'pull';
    const before = masked.slice(Math.max(0, m.index - 40), m.index);
    const closing = kind === 'thread' && KEYWORD_RE.test(before);
    const key = `${kind}:${owner ?? ''}/${slug ?? ''}:${number}`;
    const seen = found.get(key);
    if (seen) seen.closing ||= closing;
    else found.set(key, { kind, owner, slug, number, closing });
  }
  return [...found.values()];
}

/** The thread references a closing keyword names. */
export const closingReferences = (text: string): Reference[] => findReferences(text).filter((r) => r.closing);

const MENTION_RE = /(?<![\w@/.-])@([a-z0-9][a-z0-9_-]{0,99})(?![\w@-])/gi;

/**
 * The `@name` mentions in Markdown text (a username or a team slug, lower-cased, each once, in
 * order); code and URLs hold none, as for references (docs/notifications.md).
 */
export function findMentions(text: string): string[] {
  const found = new Set<string>();
  for (const m of maskNonText(text).matchAll(MENTION_RE)) found.add(m[1]!.toLowerCase());
  return [...found];
}
