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

/** The terms of a thread's or reply's text (table thread_terms): its words and `@username` per mention. */
export function threadTerms(text: string): string[] {
  return [...wordsOf(text), ...extractMentions(text).map((u) => `@${u}`)];
}
