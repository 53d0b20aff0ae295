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
