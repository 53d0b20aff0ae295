/**
 * Where a review comment points in a pull's diff (README "Code review"): the hunks of one file's
 * unified patch, the lines each side shows, and how a comment made on one head finds its place on
 * another. Pure functions over patch text.
 */

export type Side = 'LEFT' | 'RIGHT';

export interface HunkLine {
  kind: ' ' | '+' | '-';
  /** line number on the LEFT (merge base) side, or null for an added line */
  old: number | null;
  /** line number on the RIGHT (head) side, or null for a removed line */
  new: number | null;
  text: string;
}

export interface Hunk {
  oldStart: number;
  newStart: number;
  header: string;
  /** the hunk's lines, each with its one-character prefix, joined by newlines (no header) */
  body: string;
  lines: HunkLine[];
}

const HEADER = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** The hunks of one file's patch (as `files[].patch` gives it). */
export function parseHunks(patch: string | null): Hunk[] {
  if (!patch) return [];
  const hunks: Hunk[] = [];
  let cur: Hunk | null = null;
  let o = 0;
  let n = 0;
  const raw: string[] = [];
  const close = () => {
    if (cur) cur.body = raw.splice(0).join('\n');
  };
  for (const line of patch.split('\n')) {
    const m = HEADER.exec(line);
    if (m) {
      close();
      o = Number(m[1]);
      n = Number(m[2]);
      cur = { oldStart: o, newStart: n, header: line, body: '', lines: [] };
      hunks.push(cur);
      continue;
    }
    if (!cur) continue;
    const kind = line[0];
    if (kind === ' ' || (kind === undefined && line === '')) {
      // a context line (an empty last line of the patch text is not one)
      if (kind === undefined) continue;
      cur.lines.push({ kind: ' ', old: o++, new: n++, text: line.slice(1) });
    } else if (kind === '+') cur.lines.push({ kind: '+', old: null, new: n++, text: line.slice(1) });
    else if (kind === '-') cur.lines.push({ kind: '-', old: o++, new: null, text: line.slice(1) });
    else continue; // "\ No newline at end of file"
    raw.push(line);
  }
  close();
  return hunks;
}

const lineOn = (l: HunkLine, side: Side) => (side === 'LEFT' ? l.old : l.new);

/** The hunk and the index in it of `line` on `side`, or null when the diff does not show it. */
export function findLine(hunks: Hunk[], side: Side, line: number): { hunk: Hunk; index: number } | null {
  for (const hunk of hunks) {
    const index = hunk.lines.findIndex((l) => lineOn(l, side) === line);
    if (index >= 0) return { hunk, index };
  }
  return null;
}

/** How far a hunk moved between two diffs, on each side. */
export function hunkShift(from: Hunk, to: Hunk): { LEFT: number; RIGHT: number } {
  return { LEFT: to.oldStart - from.oldStart, RIGHT: to.newStart - from.newStart };
}

/** The hunk of `hunks` with this body, or null when no hunk is unchanged (the comment is outdated). */
export function sameHunk(hunks: Hunk[], body: string): Hunk | null {
  return hunks.find((h) => h.body === body) ?? null;
}

/** A hunk as its header and body, as a comment stores it. */
export const hunkText = (hunk: Hunk): string => `${hunk.header}\n${hunk.body}`;

/** The hunk stored with a comment, parsed again. */
export function storedHunk(text: string): Hunk | null {
  return parseHunks(text)[0] ?? null;
}

/** The suggested lines of a body's first ```suggestion block, or null when it has none. */
export function suggestionOf(body: string): string[] | null {
  const m = /(^|\n)(`{3,})suggestion[^\n]*\n([\s\S]*?)\n?\2[ \t]*(\n|$)/.exec(body.replace(/\r\n/g, '\n'));
  if (!m) return null;
  const text = m[3]!;
  return text === '' ? [] : text.split('\n');
}
