import type { DiffFile } from '../git/diff.ts';
import type { ReviewCommentJson } from '../pulls/comments-store.ts';
import type { PageCaller } from './context.ts';
import { escapeHtml, type Html, html, trusted, when } from './html.ts';
import { csrfField } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { parseHunks } from './diff.ts';
import { REF_MARK_OPEN } from '../markdown/references.ts';

/**
 * Code review on the pull page (README "Code review"): the Files tab's diff with line links, the
 * conversations inline under their lines (replies, resolve, suggestions as a diff with Apply),
 * a new comment's form under the line it names, and the forms' routes. Every form posts and
 * redirects: nothing needs JavaScript (weft.js only turns a shift-click into a range).
 */

/** Files rendered in full on one screen of the Files tab; the others are listed and shown on demand. */
export const FILES_PER_SCREEN = 25;

export interface Thread {
  first: ReviewCommentJson;
  replies: ReviewCommentJson[];
}

/** Comments grouped into conversations, in the order of their first comments. */
export function threadsOf(comments: ReviewCommentJson[]): Thread[] {
  const byUuid = new Map<string, Thread>();
  const out: Thread[] = [];
  for (const c of comments) {
    if (c.in_reply_to === null) {
      const t = { first: c, replies: [] };
      byUuid.set(c.uuid, t);
      out.push(t);
    }
  }
  const later = comments.filter((c) => c.in_reply_to !== null).sort((a, b) => a.created_at.localeCompare(b.created_at));
  for (const c of later) byUuid.get(c.in_reply_to!)?.replies.push(c);
  return out;
}

export interface ReviewView {
  c: PageCaller;
  /** the pull page's address */
  base: string;
  /** the tab the forms are on (and go back to), and its first file on the Files tab */
  tab: 'files' | 'conversation';
  from: number;
  canComment: boolean;
  canApply: boolean;
  /** whether the viewer may resolve a conversation started by this user */
  canResolve: (firstAuthorUuid: string) => boolean;
  /** whether the viewer may edit / delete a comment of this user (the API's rules: its author; or maintain level) */
  canEdit: (authorUuid: string) => boolean;
  canDelete: (authorUuid: string) => boolean;
  /** a refused review action, shown beside its form with what was typed */
  refused: ReviewRefusal | null;
  /** comments' rendered Markdown with references (`#N`, `!N`) linked for the reader, by the rendered text (`commentMarks`) */
  linked: Map<string, string>;
}

/**
 * A review action the service refused, for the page that shows its form again: `comment` is a
 * new line comment (`selected` its place), the others act on the comment `target` (a reply, an
 * edit, a deletion, a resolution, applying its suggestion).
 */
export interface ReviewRefusal {
  action: 'comment' | 'reply' | 'edit' | 'delete' | 'resolve' | 'apply';
  message: string;
  target?: string;
  body?: string;
  selected?: Selected;
}

/** The hidden fields that bring a form's answer back to the tab (and the Files tab's screen) it was sent from. */
function backFields(v: ReviewView): Html {
  return html`<input type="hidden" name="tab" value="${v.tab}" />${
      v.from ? html`<input type="hidden" name="from" value="${String(v.from)}" />` : ''
    }`;
}

/** The htmx attributes of a conversation's forms: post, then swap the conversation's part of the answer in. */
const swapThread = (uuid: string, action: string) =>
  html`hx-post="${action}" hx-target="#t-${uuid}" hx-select="#t-${uuid}" hx-swap="outerHTML" data-refusals="inline"`;

function refusalOf(v: ReviewView, action: ReviewRefusal['action'], target: string): ReviewRefusal | null {
  const r = v.refused;
  return r && r.action === action && r.target === target ? r : null;
}

const SUGGESTION = /(^|\n)(`{3,})suggestion[^\n]*\n([\s\S]*?)\n?\2[ \t]*(?=\n|$)/;

/**
 * The rendered Markdown of these comments, with and without their suggestion block, that marks
 * references: what the page links for its reader (src/references/render.ts) into `ReviewView.linked`.
 */
export function commentMarks(comments: ReviewCommentJson[]): string[] {
  const out = new Set<string>();
  for (const cm of comments) {
    for (const text of [cm.body, cm.body.replace(SUGGESTION, '$1')]) {
      const rendered = markdownHtml(text).text;
      if (rendered.includes(REF_MARK_OPEN)) out.add(rendered);
    }
  }
  return [...out];
}

function suggestionLines(body: string): string[] | null {
  const m = SUGGESTION.exec(body.replace(/\r\n/g, '\n'));
  if (!m) return null;
  return m[3] === '' ? [] : m[3]!.split('\n');
}

/**
 * One comment; with `current` (the lines it comments on now) its suggestion shows as a diff with
 * Apply (a plain post: the commit changes the whole diff, so the page is shown again whole).
 */
function commentHtml(v: ReviewView, cm: ReviewCommentJson, current: string[] | null, thread: string): Html {
  const suggested = suggestionLines(cm.body);
  let suggestion: Html | string = '';
  let text = cm.body;
  if (suggested && current) {
    text = cm.body.replace(SUGGESTION, '$1');
    const rows =
      current.map((l) => `<tr class="del"><td>-${escapeHtml(l)}</td></tr>`).join('') +
      suggested.map((l) => `<tr class="add"><td>+${escapeHtml(l)}</td></tr>`).join('');
    suggestion = html`<div class="diff suggestion">
      <h3>Suggested change</h3>
      <table>
        <caption class="skip">
          Suggested change
        </caption>
        <tbody>
          ${trusted(rows)}
        </tbody>
      </table>
      ${
        v.canApply && !cm.position_outdated
          ? html`<form method="post" action="${v.base}/suggestions/apply" class="row">
              ${csrfField(v.c)}${backFields(v)}<input type="hidden" name="comment_uuid" value="${cm.uuid}" />
              <button type="submit">Apply suggestion</button>
            </form>`
          : ''
      }
    </div>`;
  }
  const editing = refusalOf(v, 'edit', cm.uuid);
  const edit = v.canEdit(cm.author.uuid)
    ? html`<details ${editing ? html`open` : ''}>
        <summary>Edit comment</summary>
        <form
          method="post"
          action="${v.base}/comments/${cm.uuid}/edit"
          class="stack"
          ${swapThread(thread, `${v.base}/comments/${cm.uuid}/edit`)}
        >
          ${csrfField(v.c)}${backFields(v)}
          <label for="edit-${cm.uuid}">Comment (Markdown)</label>
          <textarea id="edit-${cm.uuid}" name="body" required>${editing?.body ?? cm.body}</textarea>
          <div><button type="submit">Save comment</button></div>
        </form>
      </details>`
    : '';
  const remove = v.canDelete(cm.author.uuid)
    ? html`<form
        method="post"
        action="${v.base}/comments/${cm.uuid}/delete"
        class="row"
        ${swapThread(thread, `${v.base}/comments/${cm.uuid}/delete`)}
      >
        ${csrfField(v.c)}${backFields(v)}
        <button
          type="submit"
          aria-label="Delete comment by ${cm.author.username}${cm.in_reply_to === null ? ' and its replies' : ''}"
        >
          Delete comment
        </button>
      </form>`
    : '';
  return html`<div class="comment" id="c-${cm.uuid}">
    <p>
      <strong>${cm.author.username}</strong>
      ${when(cm.created_at)}${cm.pending ? html` <span class="badge">pending</span>` : ''}${
        cm.updated_at !== cm.created_at ? html` <span class="muted">(edited)</span>` : ''
      }
    </p>
    ${text.trim() ? html`<div class="markdown">${linkedMarkdown(v, text)}</div>` : ''} ${suggestion}
    ${edit || remove ? html`<div class="row">${edit} ${remove}</div>` : ''}
  </div>`;
}

function linkedMarkdown(v: ReviewView, text: string): Html {
  const rendered = markdownHtml(text).text;
  return trusted(v.linked.get(rendered) ?? rendered);
}

/** A conversation: its comments, a reply form and the resolve button, as the viewer may use them. */
export function threadHtml(v: ReviewView, t: Thread, current: string[] | null, showPlace: boolean): Html {
  const f = t.first;
  const place = `${f.path}:${f.start_line !== null ? `${f.start_line}-` : ''}${f.line}${f.side === 'LEFT' ? ' (old)' : ''}`;
  const open = !f.pending;
  const uuids = [f.uuid, ...t.replies.map((r) => r.uuid)];
  const refused = v.refused && v.refused.action !== 'comment' && uuids.includes(v.refused.target ?? '') ? v.refused : null;
  const replying = refusalOf(v, 'reply', f.uuid);
  return html`<div class="thread${f.resolved ? ' resolved' : ''}" id="t-${f.uuid}">
    ${refused ? html`<p class="error" role="alert" id="error-${f.uuid}">${refused.message}</p>` : ''}
    ${
      showPlace || f.position_outdated || f.resolved
        ? html`<p class="muted">
            <code>${place}</code>${f.position_outdated ? html` <span class="badge">outdated</span>` : ''}${
              f.resolved ? html` <span class="badge approved">resolved by ${f.resolved_by?.username ?? ''}</span>` : ''
            }
          </p>`
        : ''
    }
    ${commentHtml(v, f, current, f.uuid)} ${t.replies.map((r) => commentHtml(v, r, current, f.uuid))}
    ${
      open && v.canComment
        ? html`<form
            method="post"
            action="${v.base}/comments/${f.uuid}/reply"
            class="stack"
            ${swapThread(f.uuid, `${v.base}/comments/${f.uuid}/reply`)}
          >
            ${csrfField(v.c)}${backFields(v)}
            <label for="reply-${f.uuid}">Reply</label>
            <textarea id="reply-${f.uuid}" name="body" required>${replying?.body ?? ''}</textarea>
            <div><button type="submit">Reply</button></div>
          </form>`
        : ''
    }
    ${
      open && v.canResolve(f.author.uuid)
        ? html`<form
            method="post"
            action="${v.base}/comments/${f.uuid}/resolution"
            class="row"
            ${swapThread(f.uuid, `${v.base}/comments/${f.uuid}/resolution`)}
          >
            ${csrfField(v.c)}${backFields(v)}<input type="hidden" name="resolved" value="${f.resolved ? 'false' : 'true'}" />
            <button type="submit">${f.resolved ? 'Unresolve conversation' : 'Resolve conversation'}</button>
          </form>`
        : ''
    }
  </div>`;
}

/** Where the viewer asked for a new comment (a line link of the Files tab). */
export interface Selected {
  path: string;
  line: number;
  side: 'LEFT' | 'RIGHT';
  start_line?: number;
}

const SIGN = { add: '+', del: '-', ctx: ' ', hunk: '' } as const;

/** The form of a new comment on the line (or range) `sel`; after a refusal, its error and what was typed. */
export function newCommentForm(v: ReviewView, sel: Selected, pending: boolean): string {
  const refused = v.refused?.action === 'comment' ? v.refused : null;
  return html`<div class="thread" id="new-comment">
    ${refused ? html`<p class="error" role="alert" id="new-comment-error">${refused.message}</p>` : ''}
    <form method="post" action="${v.base}/comments" class="stack">
      ${csrfField(v.c)}${backFields(v)}<input type="hidden" name="path" value="${sel.path}" /><input
        type="hidden"
        name="side"
        value="${sel.side}"
      />
      <p class="muted">Comment on <code>${sel.path}</code>, ${sel.side === 'LEFT' ? 'old ' : ''}line ${sel.line}</p>
      <label for="nc-start">From line (a range; empty for one line)</label>
      <input id="nc-start" name="start_line" type="number" min="1" value="${sel.start_line ?? ''}" />
      <input type="hidden" name="line" value="${String(sel.line)}" />
      <label for="nc-body">Comment (Markdown; a <code>suggestion</code> block proposes new lines)</label>
      <textarea id="nc-body" name="body" required ${refused ? html`aria-describedby="new-comment-error"` : ''}>
${refused?.body ?? ''}</textarea>
      <div class="row">
        <button type="submit" name="mode" value="review" class="primary">${pending ? 'Add to review' : 'Start a review'}</button>
        <button type="submit" name="mode" value="single">Add single comment</button>
      </div>
    </form>
  </div>`.text;
}

/**
 * The Files tab's diff: each file's rows with line links (a new comment under the line clicked),
 * its conversations under their lines, and those whose lines changed since (outdated) above the
 * file. `threads` are the conversations at their places on this diff.
 */
export function reviewDiff(
  v: ReviewView,
  files: DiffFile[],
  threads: Thread[],
  opts: { selected: Selected | null; pending: boolean; inline: boolean; href: (q: Record<string, string>) => string },
): { html: string; placed: boolean } {
  if (files.length === 0) return { html: html`<p class="muted">No changes.</p>`.text, placed: false };
  const out: string[] = [];
  let placed = false;
  for (const f of files) {
    const mine = opts.inline ? threads.filter((t) => t.first.path === f.path) : [];
    const title = f.previous_path && f.previous_path !== f.path ? `${f.previous_path} → ${f.path}` : f.path;
    out.push(
      `<div class="diff" id="f-${escapeHtml(encodeURIComponent(f.path))}"><h3>${escapeHtml(title)} <span class="muted">(${f.status}, +${f.additions} &minus;${f.deletions})</span></h3>`,
    );
    const outdated = mine.filter((t) => t.first.position_outdated);
    for (const t of outdated) out.push(threadHtml(v, t, null, true).text);
    if (f.binary) out.push('<p class="muted">Binary file.</p>');
    else if (f.patch === null)
      out.push(`<p class="muted">${f.patch_truncated ? 'The change is too large to show.' : 'No text changes.'}</p>`);
    else {
      const rows = parseHunks(f.patch);
      const at = new Map<string, Thread[]>();
      for (const t of mine) {
        if (t.first.position_outdated) continue;
        const key = `${t.first.side}:${t.first.line}`;
        at.set(key, [...(at.get(key) ?? []), t]);
      }
      const linesOn = (side: 'LEFT' | 'RIGHT', from: number, to: number) =>
        rows
          .filter((r) => r.kind !== 'hunk' && r.kind !== (side === 'RIGHT' ? 'del' : 'add'))
          .filter((r) => {
            const n = side === 'RIGHT' ? r.new : r.old;
            return n !== null && n >= from && n <= to;
          })
          .map((r) => r.text);
      // one address a file, each line's link adds its side and number (no URLSearchParams per row)
      const fileHref = escapeHtml(opts.href({ path: f.path }));
      const fileLabel = escapeHtml(f.path);
      out.push(`<table><caption class="skip">Changes to ${fileLabel}</caption><tbody>`);
      for (const r of rows) {
        if (r.kind === 'hunk') {
          out.push(`<tr class="hunk"><td class="n"></td><td class="n"></td><td>${escapeHtml(r.text)}</td></tr>`);
          continue;
        }
        const link = (side: 'LEFT' | 'RIGHT', n: number | null) => {
          if (n === null) return '';
          if (!v.canComment || !opts.inline) return String(n);
          return `<a href="${fileHref}&amp;side=${side}&amp;line=${n}#new-comment" data-line="${n}" data-side="${side}" aria-label="Comment on ${side === 'LEFT' ? 'old' : 'new'} line ${n} of ${fileLabel}">${n}</a>`;
        };
        out.push(
          `<tr class="${r.kind}"><td class="n">${link('LEFT', r.old)}</td><td class="n">${link('RIGHT', r.new)}</td><td>${SIGN[r.kind]}${escapeHtml(r.text)}</td></tr>`,
        );
        const here = [
          ...(r.old !== null && r.kind === 'del' ? (at.get(`LEFT:${r.old}`) ?? []) : []),
          ...(r.new !== null ? (at.get(`RIGHT:${r.new}`) ?? []) : []),
          ...(r.old !== null && r.kind === 'ctx' ? (at.get(`LEFT:${r.old}`) ?? []) : []),
        ];
        for (const t of here) {
          const start = t.first.start_line ?? t.first.line;
          const current = t.first.side === 'RIGHT' ? linesOn('RIGHT', start, t.first.line) : null;
          out.push(
            `<tr class="comments"><td colspan="3">${threadHtml(v, t, current, t.first.start_line !== null).text}</td></tr>`,
          );
        }
        const sel = opts.selected;
        if (
          sel &&
          sel.path === f.path &&
          ((sel.side === 'RIGHT' && r.new === sel.line) || (sel.side === 'LEFT' && r.old === sel.line && r.kind !== 'add'))
        ) {
          out.push(`<tr class="comments"><td colspan="3">${newCommentForm(v, sel, opts.pending)}</td></tr>`);
          placed = true;
        }
      }
      out.push('</tbody></table>');
    }
    out.push('</div>');
  }
  return { html: out.join(''), placed };
}
