/** What every search shares (docs/search.md): paging, counts, qualifiers, repo names, text queries and snippets. */
import { type RawBuilder, type SqlBool, sql } from 'kysely';
import { AppError } from '../errors.ts';

/** X-Total-Count is exact up to this many, then `10000+`. */
export const COUNT_CAP = 10_000;
/** A regex search (verification included) may run this long, then 400 query_too_broad. */
export interface PageWindow {
  offset: number;
  /** one more than a page, so the caller knows whether a next page exists */
  limit: number;
}

export interface Counted<T> {
  rows: T[];
  /** exact up to COUNT_CAP; COUNT_CAP + 1 means "more" */
  total: number;
  /**
   * the total is a lower bound: the search stopped counting once its page was full and a bounded
   * amount of work was done (X-Total-Count `N+`)
   */
  atLeast?: boolean;
}

/** X-Total-Count: the number, `10000+` past the cap, `N+` when counting stopped early (at least N). */
export const totalHeader = (total: number, atLeast = false): string =>
  total > COUNT_CAP ? `${COUNT_CAP}+` : atLeast ? `${total}+` : String(total);

/** `repo:`, `path:`, `lang:` and friends taken out of `q`; the rest, trimmed, is the text. */
export function takeQualifiers(q: string, names: readonly string[]): { text: string; quals: Map<string, string[]> } {
  const quals = new Map<string, string[]>();
  const re = new RegExp(`(^|\\s)(${names.join('|')}):("[^"]*"|\\S+)`, 'gi');
  const text = q
    .replace(re, (_all, lead: string, name: string, value: string) => {
      const key = name.toLowerCase();
      const v = value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
      quals.set(key, [...(quals.get(key) ?? []), v]);
      return lead;
    })
    .trim();
  return { text, quals };
}

export const one = (quals: Map<string, string[]>, name: string): string | undefined => quals.get(name)?.at(-1);

/** `owner/slug` as a condition on `repos` and its owner's name (`owner_name` below). */
export function repoNamed(full: string): RawBuilder<SqlBool> {
  const slash = full.indexOf('/');
  if (slash < 1) throw new AppError(400, 'invalid_request', 'repo must be owner/slug.');
  const owner = full.slice(0, slash);
  const slug = full.slice(slash + 1);
  return sql<SqlBool>`(repos.slug = ${slug} and ${ownerName()} = ${owner})`;
}

/** The owner's name of `repos` (a team's slug or a user's username). */
export const ownerName = (): RawBuilder<string> =>
  sql<string>`(case when repos.owner_kind = 'team' then (select t.slug from teams t where t.uuid = repos.owner_uuid)
    else (select u.username from users u where u.uuid = repos.owner_uuid) end)`;

export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * PostgreSQL's text-search parser is quadratic in words joined by `_`; text is parsed with `_` read as
 * U+FF3F, a separator too (the same lexemes; migration 540 indexes the same expression), and snippets
 * turn it back.
 */
export const tsText = (text: RawBuilder<unknown>) => sql`translate(${text}, '_', U&'\\FF3F')`;
export const untsText = (text: RawBuilder<unknown>) => sql`translate(${text}, U&'\\FF3F', '_')`;

export const MARK_OPEN = '\u0002';
export const MARK_CLOSE = '\u0003';
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A snippet with sentinel marks as HTML: escaped, the marks as `<mark>`. */
export function markSnippet(raw: string): string {
  return escapeHtml(raw.replace(/\s+/g, ' ').trim()).replaceAll(MARK_OPEN, '<mark>').replaceAll(MARK_CLOSE, '</mark>');
}

const fold = (w: string) =>
  w
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();

/**
 * SQLite's snippet of a document, made here: FTS5's `snippet()` would run the full-text query
 * over every matching document again (it cannot seek the page's rows). The words are FTS5
 * `unicode61`'s (letters and digits, case and diacritics folded); a single query word also
 * matches as a prefix, as the query does. About 24 words around the first match, the matches
 * between the sentinel marks.
 */
export function textSnippet(doc: string, query: string): string {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let m = re.exec(query); m; m = re.exec(query)) {
    const words = (m[1] ?? m[2]!)
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)
      .map(fold);
    if (words.length === 1) prefixes.push(words[0]!);
    else for (const w of words) exact.add(w);
  }
  const tokens = [...doc.matchAll(/[\p{L}\p{N}]+/gu)];
  const hit = (w: string) => {
    const f = fold(w);
    return exact.has(f) || prefixes.some((p) => f.startsWith(p));
  };
  const first = Math.max(
    0,
    tokens.findIndex((t) => hit(t[0])),
  );
  const from = Math.max(0, first - 6);
  const to = Math.min(tokens.length, from + 24);
  if (to <= from) return doc.slice(0, 200);
  let out = from > 0 ? '\u2026' : '';
  let at = tokens[from]!.index!;
  for (let k = from; k < to; k++) {
    const t = tokens[k]!;
    out += doc.slice(at, t.index!);
    out += hit(t[0]) ? `${MARK_OPEN}${t[0]}${MARK_CLOSE}` : t[0];
    at = t.index! + t[0].length;
  }
  return to < tokens.length ? `${out}\u2026` : out;
}

/**
 * Words and "phrases" of `text` as an FTS5 query and as a PostgreSQL tsquery (null: nothing to
 * search), and the tsquery with every word in a title (`tsTitle`: weight A, for ranking title matches).
 */
export function textQuery(text: string): { fts: string; ts: string; tsTitle: string } | null {
  const parts: string[][] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const words = (m[1] ?? m[2]!).split(/[^\p{L}\p{N}_]+/u).filter(Boolean);
    if (words.length) parts.push(words);
  }
  if (parts.length === 0) return null;
  const fts = parts.map((w) => `"${w.join(' ').replace(/"/g, '""')}"${w.length === 1 ? '*' : ''}`).join(' AND ');
  const lexeme = (x: string) => `'${x.toLowerCase().replace(/'/g, "''")}'`;
  const ts = (weight: string) =>
    parts
      .map((w) =>
        w.length === 1 ? `${lexeme(w[0]!)}:*${weight}` : w.map((x) => `${lexeme(x)}${weight ? `:${weight}` : ''}`).join(' <-> '),
      )
      .join(' & ');
  return { fts, ts: ts(''), tsTitle: ts('A') };
}
