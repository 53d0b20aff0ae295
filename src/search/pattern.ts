import { Script, createContext } from 'node:vm';
import { AppError } from '../errors.ts';

/**
 * Code search patterns (docs/search.md): what narrows the candidates in the trigram index, and
 * the exact verification of a file's text.
 *
 * A literal narrows by itself. A regex narrows by the literal runs it cannot match without
 * (as Russ Cox's codesearch and zoekt do): a run of 3 characters or more in a sequence is
 * required, an alternation requires one of its branches' requirements, anything optional
 * (`?`, `*`, `{0,…}`) or unknown (a class, `.`, `\w`) requires nothing. A pattern requiring
 * nothing is 400 `query_too_broad`.
 */

/** What a file must contain (case-insensitively) to be a candidate: every `and`, one of each `or`. */
export type Need = { lit: string } | { and: Need[] } | { or: Need[] };

export const tooBroad = (why: string): AppError =>
  new AppError(
    400,
    'query_too_broad',
    `${why} Give a literal of at least 3 characters, or a regex with a literal run of 3 characters.`,
  );

/** Flattens and drops empty parts; null means "anything". */
function and(parts: (Need | null)[]): Need | null {
  const kept: Need[] = [];
  for (const p of parts) {
    if (!p) continue;
    if ('and' in p) kept.push(...p.and);
    else kept.push(p);
  }
  if (kept.length === 0) return null;
  return kept.length === 1 ? kept[0]! : { and: kept };
}

function or(parts: (Need | null)[]): Need | null {
  if (parts.length === 0 || parts.some((p) => p === null)) return null;
  return parts.length === 1 ? parts[0]! : { or: parts as Need[] };
}

/** A parsed piece of a regex: `lit` a known literal string, `need` what it requires otherwise. */
interface Piece {
  /** the exact text this piece matches, when it is a fixed string */
  exact: string | null;
  need: Need | null;
}

const litNeed = (s: string): Need | null => (s.length >= 3 ? { lit: s } : null);

/** Parses a JavaScript regex source enough to find what it requires. */
export function regexNeed(source: string): Need | null {
  let pos = 0;

  function alternation(): Piece {
    const branches: Piece[] = [sequence()];
    while (source[pos] === '|') {
      pos++;
      branches.push(sequence());
    }
    if (branches.length === 1) return branches[0]!;
    return { exact: null, need: or(branches.map((b) => b.need ?? (b.exact !== null ? litNeed(b.exact) : null))) };
  }

  function sequence(): Piece {
    const needs: (Need | null)[] = [];
    let run = '';
    let fixed = true;
    const flush = () => {
      needs.push(litNeed(run));
      run = '';
    };
    while (pos < source.length && source[pos] !== '|' && source[pos] !== ')') {
      const atom = parseAtom();
      const q = quantifier();
      if (atom === 'zero') continue; // an anchor or a lookaround: matches no character
      if (q === 'one') {
        if (atom.exact !== null) run += atom.exact;
        else {
          fixed = false;
          flush();
          needs.push(atom.need);
        }
      } else {
        fixed = false;
        if (q === 'plus' && atom.exact !== null) {
          run += atom.exact; // at least once
          flush();
        } else {
          flush();
          if (q === 'plus') needs.push(atom.need);
        }
      }
    }
    if (fixed) return { exact: run, need: litNeed(run) };
    flush();
    return { exact: null, need: and(needs) };
  }

  /** 'one' (exactly once), 'plus' (at least once), 'optional' (maybe never) */
  function quantifier(): 'one' | 'plus' | 'optional' {
    const c = source[pos];
    let q: 'one' | 'plus' | 'optional' = 'one';
    if (c === '*' || c === '?') {
      pos++;
      q = 'optional';
    } else if (c === '+') {
      pos++;
      q = 'plus';
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(pos));
      if (!m) return 'one'; // a literal "{"
      pos += m[0].length;
      const min = Number(m[1]);
      q = min === 0 ? 'optional' : m[2] === undefined && min === 1 ? 'one' : 'plus';
    } else return 'one';
    if (source[pos] === '?') pos++; // lazy
    return q;
  }

  function parseAtom(): Piece | 'zero' {
    const c = source[pos]!;
    if (c === '^' || c === '$') {
      pos++;
      return 'zero';
    }
    if (c === '.') {
      pos++;
      return { exact: null, need: null };
    }
    if (c === '[') {
      pos++;
      if (source[pos] === '^') pos++;
      if (source[pos] === ']') pos++;
      while (pos < source.length && source[pos] !== ']') pos += source[pos] === '\\' ? 2 : 1;
      pos++;
      return { exact: null, need: null };
    }
    if (c === '(') {
      pos++;
      let lookaround = false;
      if (source[pos] === '?') {
        if (source[pos + 1] === ':') pos += 2;
        else if (source[pos + 1] === '<' && source[pos + 2] !== '=' && source[pos + 2] !== '!') {
          const end = source.indexOf('>', pos);
          pos = end < 0 ? source.length : end + 1;
        } else {
          lookaround = true;
          pos += source[pos + 1] === '<' ? 3 : 2;
        }
      }
      const inner = alternation();
      if (source[pos] === ')') pos++;
      return lookaround ? 'zero' : inner;
    }
    if (c === '\\') {
      const n = source[pos + 1] ?? '';
      pos += 2;
      if (n === 'b' || n === 'B') return 'zero';
      if (/[dDwWsSpPkcu0-9xnrtfv]/.test(n)) {
        // classes, back-references, escapes of code units: nothing required (\p{..}, \u{..}, \x.. skipped)
        if ((n === 'p' || n === 'P' || n === 'k') && (source[pos] === '{' || source[pos] === '<')) {
          const close = source.indexOf(source[pos] === '{' ? '}' : '>', pos);
          pos = close < 0 ? source.length : close + 1;
        } else if (n === 'x') pos += 2;
        else if (n === 'u') pos += source[pos] === '{' ? Math.max(0, source.indexOf('}', pos) - pos + 1) : 4;
        else if (n === 'c') pos += 1;
        return { exact: null, need: null };
      }
      return { exact: n, need: null };
    }
    // one character (a surrogate pair as one)
    const cp = source.codePointAt(pos)!;
    const ch = String.fromCodePoint(cp);
    pos += ch.length;
    return { exact: ch, need: null };
  }

  const top = alternation();
  return top.need ?? (top.exact !== null ? litNeed(top.exact) : null);
}

/** A parsed `q`: the pattern to verify with and what narrows the candidates. */
export interface CodePattern {
  regex: RegExp;
  need: Need;
  /** the text of a literal query (null for a regex) */
  literal: string | null;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** `q` without qualifiers: a literal of 3+ characters, or `/regex/`. */
export function codePattern(text: string, caseSensitive: boolean): CodePattern {
  const flags = caseSensitive ? 'g' : 'gi';
  if (text.length >= 2 && text.startsWith('/') && text.endsWith('/')) {
    const source = text.slice(1, -1);
    let regex: RegExp;
    try {
      regex = new RegExp(source, flags);
    } catch (err) {
      throw new AppError(400, 'invalid_request', `q is not a valid regex: ${(err as Error).message}`);
    }
    const need = regexNeed(source);
    if (!need) throw tooBroad('This regex has no literal run of 3 characters to narrow the search by.');
    return { regex, need, literal: null };
  }
  if ([...text].length < 3) throw tooBroad('The query is shorter than 3 characters.');
  return { regex: new RegExp(escapeRegex(text), flags), need: { lit: text }, literal: text };
}

export interface LineMatch {
  line_number: number;
  line: string;
  ranges: [number, number][];
}

export interface FileMatches {
  matches: LineMatch[];
  match_count: number;
}

const MAX_LINE = 500;
const MAX_LINES = 5;

/** Code-point offsets of UTF-16 offsets within `line`. */
function codePointOffsets(line: string, offsets: number[]): number[] {
  let cp = 0;
  let unit = 0;
  const out: number[] = [];
  const sorted = [...offsets].map((o, i) => [o, i] as const).sort((a, b) => a[0] - b[0]);
  const result = new Array<number>(offsets.length);
  for (const [o, i] of sorted) {
    while (unit < o && unit < line.length) {
      const c = line.charCodeAt(unit);
      unit += c >= 0xd800 && c <= 0xdbff && unit + 1 < line.length ? 2 : 1;
      cp++;
    }
    result[i] = cp;
  }
  out.push(...result);
  return out;
}

/**
 * The matches of `regex` in `text`, line by line (a line ends at "\n"; a "\r" before it is not
 * part of the line). Ranges are `[start, end)` in characters (code points) of the line; a line
 * longer than 500 characters is cut there and keeps the ranges inside it. At most 5 lines are
 * listed; `match_count` counts every match in the file.
 */
export function matchText(regex: RegExp, text: string): FileMatches | null {
  const matches: LineMatch[] = [];
  let count = 0;
  let start = 0;
  let number = 0;
  // a quick reject: most candidates of a case-insensitive literal do match; a regex may not
  regex.lastIndex = 0;
  if (!regex.test(text) && !/[\^$]/.test(regex.source)) return null;
  while (start <= text.length) {
    number++;
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let line = text.slice(start, end);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    regex.lastIndex = 0;
    const units: number[] = [];
    for (;;) {
      const m = regex.exec(line);
      if (!m) break;
      if (m[0].length === 0) {
        regex.lastIndex = m.index + 1;
        if (regex.lastIndex > line.length) break;
        continue;
      }
      units.push(m.index, m.index + m[0].length);
    }
    if (units.length) {
      count += units.length / 2;
      if (matches.length < MAX_LINES) {
        const cps = codePointOffsets(line, units);
        const chars = [...line];
        const ranges: [number, number][] = [];
        for (let i = 0; i < cps.length; i += 2) {
          if (cps[i]! >= MAX_LINE) break;
          ranges.push([cps[i]!, Math.min(cps[i + 1]!, MAX_LINE)]);
        }
        matches.push({ line_number: number, line: chars.length > MAX_LINE ? chars.slice(0, MAX_LINE).join('') : line, ranges });
      }
    }
    if (end === text.length) break;
    start = end + 1;
  }
  return count > 0 ? { matches, match_count: count } : null;
}

const context = createContext({ task: null as null | (() => void) });
const runTask = new Script('task()');

/**
 * The time one search's regex may spend matching, summed over its files: only the matching is
 * counted, not the reads between (a search waiting for the database under load is not a runaway
 * regex; a wall-clock deadline refused every regex search under 10 concurrent clients on
 * PostgreSQL, bench/README.md "Search").
 */
export class RegexClock {
  constructor(private left: number) {}
  /** Runs one match within what is left: false when the regex ran out of time. */
  run(fn: () => void): boolean {
    const t0 = performance.now();
    const ran = withinTime(fn, this.left);
    this.left -= performance.now() - t0;
    return ran;
  }
}

/** Runs `fn` with a time limit (a runaway regex is stopped): false when it ran out of time. */
export function withinTime(fn: () => void, ms: number): boolean {
  if (ms <= 0) return false;
  (context as { task: null | (() => void) }).task = fn;
  try {
    runTask.runInContext(context, { timeout: Math.max(1, Math.floor(ms)) });
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return false;
    throw err;
  } finally {
    (context as { task: null | (() => void) }).task = null;
  }
}
