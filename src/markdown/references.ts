/**
 * The shape of a reference in text (README "Issue tracker"): `#N` (thread N), `!N` (pull N),
 * `{owner}/{slug}#N` and `{owner}/{slug}!N`. One pattern for the reference parser
 * (src/references/parse.ts) and the renderer, which marks each as `<span class="ref">` for the
 * reader's page to link (src/references/render.ts).
 */
const NAME = '[a-z0-9][a-z0-9_-]{0,99}';

/** Groups: 1 owner, 2 slug, 3 `#` or `!`, 4 the number. Global, case-insensitive: make a new one per use. */
export const referencePattern = (): RegExp =>
  new RegExp(`(?<![\\w/&#!.-])(?:(${NAME})/(${NAME}))?([#!])([0-9]{1,10})(?![\\w])`, 'gi');

/** The class of the marker the renderer puts around a reference. */
export const REF_MARK_OPEN = '<span class="ref">';
export const REF_MARK_CLOSE = '</span>';

const TAIL = /[#!][0-9]{1,10}(?![\w])/g;
const HEAD = new RegExp(`(?<![\\w/&#!.-])(?:(${NAME})/(${NAME}))?$`, 'i');
/** the longest `owner/slug` a reference can name */
const HEAD_MAX = 201;

/**
 * The matches of `referencePattern()` in `text`, found in time linear in the text: each `#N`/`!N`
 * is found first, then its optional `owner/slug` in the few hundred characters before it (the
 * pattern run over the whole text tried an `owner/slug` at every position: on 64 KB of `_a_a…`
 * that held the event loop for hundreds of milliseconds).
 */
export function referenceMatches(text: string): Array<RegExpMatchArray & { index: number }> {
  const out: Array<RegExpMatchArray & { index: number }> = [];
  let floor = 0;
  for (const tail of text.matchAll(TAIL)) {
    const at = tail.index!;
    if (at < floor) continue;
    const from = Math.max(floor, at - HEAD_MAX);
    // the lookbehind needs the character before the window too: give it one more, then drop it
    const lead = from > 0 ? 1 : 0;
    const head = HEAD.exec(text.slice(from - lead, at));
    if (!head) continue;
    const start = from - lead + head.index;
    // an owner/slug reaching past the window is longer than a name can be
    if (start < from) continue;
    const m = Object.assign([text.slice(start, at + tail[0].length), head[1], head[2], tail[0][0], tail[0].slice(1)], {
      index: start,
    }) as unknown as RegExpMatchArray & { index: number };
    out.push(m);
    floor = at + tail[0].length;
  }
  return out;
}
