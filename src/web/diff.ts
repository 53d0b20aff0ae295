import { type Html, escapeHtml, html, trusted } from './html.ts';

/** A changed file as the code reader gives it (src/code/schemas.ts DiffFile). */
export interface PatchedFile {
  path: string;
  previous_path: string | null;
  status: string;
  additions: number;
  deletions: number;
  binary: boolean;
  patch: string | null;
  patch_truncated?: boolean;
}

type Line = { kind: 'add' | 'del' | 'ctx' | 'hunk'; text: string; old: number | null; new: number | null };

/** A file's unified diff hunks as numbered lines. */
export function parseHunks(patch: string): Line[] {
  const lines: Line[] = [];
  let oldNo = 0;
  let newNo = 0;
  for (const line of patch.split('\n')) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      lines.push({ kind: 'hunk', text: line, old: null, new: null });
    } else if (line.startsWith('+')) lines.push({ kind: 'add', text: line.slice(1), old: null, new: newNo++ });
    else if (line.startsWith('-')) lines.push({ kind: 'del', text: line.slice(1), old: oldNo++, new: null });
    else if (line.startsWith(' ')) lines.push({ kind: 'ctx', text: line.slice(1), old: oldNo++, new: newNo++ });
  }
  return lines;
}

const SIGN = { add: '+', del: '-', ctx: ' ', hunk: '' } as const;

/**
 * A file's patch as table rows, built as plain strings with no whitespace between the cells (a
 * pull's 50 files make thousands of rows: the page's size and its time are mostly these).
 */
function patchRows(patch: string): string {
  const out: string[] = [];
  for (const l of parseHunks(patch)) {
    if (l.kind === 'hunk') out.push(`<tr class="hunk"><td class="n"></td><td class="n"></td><td>${escapeHtml(l.text)}</td></tr>`);
    else
      out.push(
        `<tr class="${l.kind}"><td class="n">${l.old ?? ''}</td><td class="n">${l.new ?? ''}</td><td>${SIGN[l.kind]}${escapeHtml(l.text)}</td></tr>`,
      );
  }
  return out.join('');
}

/** Changed files as tables (old and new line numbers, +/- marks), each under its path and counts. */
export function renderDiff(files: PatchedFile[], truncated: boolean): Html {
  if (files.length === 0) return html`<p class="muted">No changes.</p>`;
  return html`${files.map((f) => {
    const title = f.previous_path && f.previous_path !== f.path ? `${f.previous_path} → ${f.path}` : f.path;
    let body: Html;
    if (f.binary) body = html`<p class="muted">Binary file.</p>`;
    else if (f.patch === null)
      body = html`<p class="muted">${f.patch_truncated ? 'The change is too large to show.' : 'No text changes.'}</p>`;
    else
      body = html`<table>
        <caption class="skip">
          Changes to ${f.path}
        </caption>
        <tbody>
          ${trusted(patchRows(f.patch))}
        </tbody>
      </table>`;
    return html`<div class="diff">
      <h3>${title} <span class="muted">(${f.status}, +${f.additions} &minus;${f.deletions})</span></h3>
      ${body}
    </div>`;
  })}${truncated ? html`<p class="muted">More files changed than are shown.</p>` : ''}`;
}
