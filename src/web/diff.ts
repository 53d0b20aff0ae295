import type { Deps } from '../deps.ts';
import type { PullJson } from '../pulls/service.ts';
import { type Html, html } from './html.ts';

/** The most diff text one page renders; beyond it the page says so. */
const MAX_PATCH_BYTES = 2 * 1024 * 1024;

interface FileDiff {
  path: string;
  lines: Array<{ kind: 'add' | 'del' | 'ctx' | 'hunk'; text: string; old: number | null; new: number | null }>;
  binary: boolean;
}

/** Splits `git diff-tree -p` output into files and numbered lines. */
export function parsePatch(text: string): FileDiff[] {
  const files: FileDiff[] = [];
  let file: FileDiff | null = null;
  let oldNo = 0;
  let newNo = 0;
  let inHunk = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      const m = / b\/(.*)$/.exec(line);
      file = { path: m?.[1] ?? line.slice(11), lines: [], binary: false };
      files.push(file);
      inHunk = false;
      continue;
    }
    if (!file) continue;
    if (!inHunk) {
      if (line.startsWith('+++ ')) {
        if (line !== '+++ /dev/null') file.path = line.slice(4).replace(/^b\//, '');
      } else if (line.startsWith('Binary files')) file.binary = true;
      else if (line.startsWith('rename to ')) file.path = line.slice(10);
    }
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      inHunk = true;
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      file.lines.push({ kind: 'hunk', text: line, old: null, new: null });
      continue;
    }
    if (!inHunk) continue;
    if (line.startsWith('+')) file.lines.push({ kind: 'add', text: line.slice(1), old: null, new: newNo++ });
    else if (line.startsWith('-')) file.lines.push({ kind: 'del', text: line.slice(1), old: oldNo++, new: null });
    else if (line.startsWith(' ')) file.lines.push({ kind: 'ctx', text: line.slice(1), old: oldNo++, new: newNo++ });
  }
  return files;
}

const SIGN = { add: '+', del: '-', ctx: ' ', hunk: '' } as const;

/** Files of a diff as tables (line numbers, +/- marks), each under its path. */
export function renderDiff(files: FileDiff[], truncated: boolean): Html {
  if (files.length === 0) return html`<p class="muted">No changes.</p>`;
  return html`${files.map(
    (f) =>
      html`<div class="diff" id="file-${f.path}">
        <h3>${f.path}</h3>
        ${
          f.binary
            ? html`<p class="muted">Binary file.</p>`
            : html`<table>
                <caption class="skip">
                  Changes to ${f.path}
                </caption>
                <tbody>
                  ${f.lines.map((l) =>
                    l.kind === 'hunk'
                      ? html`<tr class="hunk">
                          <td class="n"></td>
                          <td class="n"></td>
                          <td>${l.text}</td>
                        </tr>`
                      : html`<tr class="${l.kind}">
                          <td class="n">${l.old ?? ''}</td>
                          <td class="n">${l.new ?? ''}</td>
                          <td>${SIGN[l.kind]}${l.text}</td>
                        </tr>`,
                  )}
                </tbody>
              </table>`
        }
      </div>`,
  )}${truncated ? html`<p class="muted">The diff is too large to show in full.</p>` : ''}`;
}

/** The pull's diff: its source since the merge base with its target. */
export async function pullDiff(deps: Deps, repoUuid: string, pull: PullJson, files: unknown[]): Promise<Html> {
  if (files.length === 0) return html`<p class="muted">No changes.</p>`;
  const head = await deps.git.branchSha(repoUuid, pull.source_branch);
  if (head === null) return html`<p class="muted">The source branch no longer exists.</p>`;
  const base = await deps.git.branchSha(repoUuid, pull.target_branch);
  const patch = await deps.git.patchBetween(repoUuid, base, head, MAX_PATCH_BYTES);
  return renderDiff(parsePatch(patch.text), patch.truncated);
}
