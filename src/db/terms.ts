import { extractMentions } from '../markdown/render.ts';

/** The longest word kept as a term, and the most terms one text gives (README "Issue tracker", lists). */
export const TERM_MAX_CHARS = 64;
export const TERMS_PER_TEXT = 2000;

/** The words of a text as the `q` filter matches them: lower-cased runs of letters and digits. */
export function wordsOf(text: string): string[] {
  const out = new Set<string>();
  for (const w of text.toLowerCase().split(/[^\p{L}\p{N}_]+/u)) {
    if (w.length === 0 || w.length > TERM_MAX_CHARS) continue;
    out.add(w);
    if (out.size >= TERMS_PER_TEXT) break;
  }
  return [...out];
}

/**
 * Texts longer than this are not parsed as Markdown for their mentions (a parse of 64 KB of
 * pathological Markdown holds the event loop for hundreds of milliseconds, test/markdown-bounded):
 * their `@username`s are found by a plain scan, which also counts one inside code.
 */
const PARSE_MAX_CHARS = 2000;
const MENTION_SCAN = /(?<![\w@/.-])@([a-z0-9][a-z0-9_-]{0,99})(?![\w@-])/gi;

/** The terms of a thread's or reply's text (table thread_terms): its words and `@username` per mention. */
export function threadTerms(text: string): string[] {
  const mentions =
    text.length <= PARSE_MAX_CHARS
      ? extractMentions(text)
      : [...new Set([...text.matchAll(MENTION_SCAN)].map((m) => m[1]!.toLowerCase()))].slice(0, TERMS_PER_TEXT);
  return [...wordsOf(text), ...mentions.map((u) => `@${u}`)];
}
