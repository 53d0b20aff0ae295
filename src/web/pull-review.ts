import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import type { DiffFile } from '../git/diff.ts';
import { applySuggestions, replyToComment, setResolution } from '../pulls/comments-service.ts';
import type { ReviewCommentJson } from '../pulls/comments-store.ts';
import { createReview } from '../pulls/reviews-service.ts';
import { getRepo } from '../repos/service.ts';
import type { PageCaller } from './context.ts';
import { requirePage, seeOther } from './context.ts';
import { repoHref } from './home-pages.ts';
import { escapeHtml, type Html, html, trusted, when } from './html.ts';
import { csrfField } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { NumberParam, pageRepoRef, repoRoute } from './repo-common.ts';

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
  canComment: boolean;
  canApply: boolean;
  /** whether the viewer may resolve a conversation started by this user */
  canResolve: (firstAuthorUuid: string) => boolean;
}

const SUGGESTION = /(^|\n)(`{3,})suggestion[^\n]*\n([\s\S]*?)\n?\2[ \t]*(?=\n|$)/;

function suggestionLines(body: string): string[] | null {
  const m = SUGGESTION.exec(body.replace(/\r\n/g, '\n'));
  if (!m) return null;
  return m[3] === '' ? [] : m[3]!.split('\n');
}

/** One comment; with `current` (the lines it comments on now) its suggestion shows as a diff with Apply. */
function commentHtml(v: ReviewView, cm: ReviewCommentJson, current: string[] | null): Html {
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
              ${csrfField(v.c)}<input type="hidden" name="comment_uuid" value="${cm.uuid}" />
              <button type="submit">Apply suggestion</button>
            </form>`
          : ''
      }
    </div>`;
  }
  return html`<div class="comment" id="c-${cm.uuid}">
    <p>
      <strong>${cm.author.username}</strong> ${when(cm.created_at)}${cm.pending ? html` <span class="badge">pending</span>` : ''}
    </p>
    ${text.trim() ? html`<div class="markdown">${markdownHtml(text)}</div>` : ''} ${suggestion}
  </div>`;
}

/** A conversation: its comments, a reply form and the resolve button, as the viewer may use them. */
export function threadHtml(v: ReviewView, t: Thread, current: string[] | null, showPlace: boolean): Html {
  const f = t.first;
  const place = `${f.path}:${f.start_line !== null ? `${f.start_line}-` : ''}${f.line}${f.side === 'LEFT' ? ' (old)' : ''}`;
  const open = !f.pending;
  return html`<div class="thread${f.resolved ? ' resolved' : ''}" id="t-${f.uuid}">
    ${
      showPlace || f.position_outdated || f.resolved
        ? html`<p class="muted">
            <code>${place}</code>${f.position_outdated ? html` <span class="badge">outdated</span>` : ''}${
              f.resolved ? html` <span class="badge approved">resolved by ${f.resolved_by?.username ?? ''}</span>` : ''
            }
          </p>`
        : ''
    }
    ${commentHtml(v, f, current)} ${t.replies.map((r) => commentHtml(v, r, current))}
    ${
      open && v.canComment
        ? html`<form method="post" action="${v.base}/comments/${f.uuid}/reply" class="stack">
            ${csrfField(v.c)}
            <label for="reply-${f.uuid}">Reply</label>
            <textarea id="reply-${f.uuid}" name="body" required></textarea>
            <div><button type="submit">Reply</button></div>
          </form>`
        : ''
    }
    ${
      open && v.canResolve(f.author.uuid)
        ? html`<form method="post" action="${v.base}/comments/${f.uuid}/resolution" class="row">
            ${csrfField(v.c)}<input type="hidden" name="resolved" value="${f.resolved ? 'false' : 'true'}" />
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

type Row = { kind: 'add' | 'del' | 'ctx' | 'hunk'; text: string; old: number | null; new: number | null };

function rowsOf(patch: string): Row[] {
  const out: Row[] = [];
  let o = 0;
  let n = 0;
  for (const line of patch.split('\n')) {
    const h = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (h) {
      o = Number(h[1]);
      n = Number(h[2]);
      out.push({ kind: 'hunk', text: line, old: null, new: null });
    } else if (line.startsWith('+')) out.push({ kind: 'add', text: line.slice(1), old: null, new: n++ });
    else if (line.startsWith('-')) out.push({ kind: 'del', text: line.slice(1), old: o++, new: null });
    else if (line.startsWith(' ')) out.push({ kind: 'ctx', text: line.slice(1), old: o++, new: n++ });
  }
  return out;
}

const SIGN = { add: '+', del: '-', ctx: ' ', hunk: '' } as const;

function newCommentForm(v: ReviewView, sel: Selected, pending: boolean): string {
  return html`<div class="thread" id="new-comment">
    <form method="post" action="${v.base}/comments" class="stack">
      ${csrfField(v.c)}<input type="hidden" name="path" value="${sel.path}" /><input
        type="hidden"
        name="side"
        value="${sel.side}"
      />
      <p class="muted">Comment on <code>${sel.path}</code>, ${sel.side === 'LEFT' ? 'old ' : ''}line ${sel.line}</p>
      <label for="nc-start">From line (a range; empty for one line)</label>
      <input id="nc-start" name="start_line" type="number" min="1" value="${sel.start_line ?? ''}" />
      <input type="hidden" name="line" value="${String(sel.line)}" />
      <label for="nc-body">Comment (Markdown; a <code>suggestion</code> block proposes new lines)</label>
      <textarea id="nc-body" name="body" required></textarea>
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
): string {
  if (files.length === 0) return html`<p class="muted">No changes.</p>`.text;
  const out: string[] = [];
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
      const rows = rowsOf(f.patch);
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
      out.push(`<table><caption class="skip">Changes to ${escapeHtml(f.path)}</caption><tbody>`);
      for (const r of rows) {
        if (r.kind === 'hunk') {
          out.push(`<tr class="hunk"><td class="n"></td><td class="n"></td><td>${escapeHtml(r.text)}</td></tr>`);
          continue;
        }
        const link = (side: 'LEFT' | 'RIGHT', n: number | null) => {
          if (n === null) return '';
          if (!v.canComment || !opts.inline) return String(n);
          const href = opts.href({ path: f.path, side, line: String(n) });
          return `<a href="${escapeHtml(href)}#new-comment" data-line="${n}" data-side="${side}" aria-label="Comment on ${side === 'LEFT' ? 'old' : 'new'} line ${n} of ${escapeHtml(f.path)}">${n}</a>`;
        };
        const leftSide = r.kind === 'del' ? 'LEFT' : 'RIGHT';
        out.push(
          `<tr class="${r.kind}"><td class="n">${link('LEFT', r.old)}</td><td class="n">${link('RIGHT', r.new)}</td><td>${SIGN[r.kind]}${escapeHtml(r.text)}</td></tr>`,
        );
        const here = [
          ...(r.old !== null && r.kind === 'del' ? (at.get(`LEFT:${r.old}`) ?? []) : []),
          ...(r.new !== null ? (at.get(`RIGHT:${r.new}`) ?? []) : []),
          ...(r.old !== null && r.kind === 'ctx' ? (at.get(`LEFT:${r.old}`) ?? []) : []),
        ];
        void leftSide;
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
        }
      }
      out.push('</tbody></table>');
    }
    out.push('</div>');
  }
  return out.join('');
}

// ------------------------------------------------------------------------------------ the forms

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const CommentUuid = Type.String({ minLength: 36, maxLength: 36, pattern: '^[0-9a-fA-F-]{36}$' });
const NewCommentForm = Type.Object(
  {
    _csrf: Csrf,
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    line: Type.String({ pattern: '^[0-9]{1,9}$' }),
    side: Type.Union([Type.Literal('LEFT'), Type.Literal('RIGHT')]),
    start_line: Type.Optional(Type.String({ pattern: '^[0-9]{0,9}$' })),
    body: Type.String({ minLength: 1, maxLength: 65_536 }),
    mode: Type.Union([Type.Literal('review'), Type.Literal('single')]),
  },
  { additionalProperties: false },
);
const BodyForm = Type.Object(
  { _csrf: Csrf, body: Type.String({ minLength: 1, maxLength: 65_536 }) },
  { additionalProperties: false },
);
const ResolveForm = Type.Object(
  { _csrf: Csrf, resolved: Type.Union([Type.Literal('true'), Type.Literal('false')]) },
  { additionalProperties: false },
);
const ApplyForm = Type.Object({ _csrf: Csrf, comment_uuid: CommentUuid }, { additionalProperties: false });

/** The review forms of the pull page: a new line comment, a reply, resolution, applying a suggestion. */
export function pullReviewForms(app: FastifyInstance, deps: Deps): void {
  const back = async (request: Parameters<typeof requirePage>[0], number: number, anchor: string, tab = 'files') => {
    const c = requirePage(request);
    const repo = await getRepo(deps, c.viewer, pageRepoRef(request));
    return `${repoHref(repo)}/pulls/${number}?tab=${tab}#${anchor}`;
  };
  const numberOf = (request: { params: unknown }) => (request.params as { number: number }).number;

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments',
    { params: { number: NumberParam }, body: NewCommentForm },
    async (request, reply) => {
      const c = requirePage(request);
      const f = request.body as {
        path: string;
        line: string;
        side: 'LEFT' | 'RIGHT';
        start_line?: string;
        body: string;
        mode: string;
      };
      const line = Number(f.line);
      const start = f.start_line ? Number(f.start_line) : undefined;
      const comment = {
        path: f.path,
        line,
        side: f.side,
        body: f.body,
        ...(start !== undefined && start !== line ? { start_line: start, start_side: f.side } : {}),
      };
      const review = await createReview(deps, c.viewer, pageRepoRef(request), numberOf(request), {
        ...(f.mode === 'single' ? { status: 'commented' as const } : {}),
        comments: [comment],
      });
      return seeOther(reply, await back(request, numberOf(request), `review-${review.uuid}`));
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments/:uuid/reply',
    { params: { number: NumberParam, uuid: CommentUuid }, body: BodyForm },
    async (request, reply) => {
      const c = requirePage(request);
      const uuid = (request.params as { uuid: string }).uuid;
      const made = await replyToComment(
        deps,
        c.viewer,
        pageRepoRef(request),
        numberOf(request),
        uuid,
        (request.body as { body: string }).body,
      );
      return seeOther(reply, await back(request, numberOf(request), `c-${made.uuid}`));
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments/:uuid/resolution',
    { params: { number: NumberParam, uuid: CommentUuid }, body: ResolveForm },
    async (request, reply) => {
      const c = requirePage(request);
      const uuid = (request.params as { uuid: string }).uuid;
      const resolved = (request.body as { resolved: string }).resolved === 'true';
      const first = await setResolution(deps, c.viewer, pageRepoRef(request), numberOf(request), uuid, resolved);
      return seeOther(reply, await back(request, numberOf(request), `t-${first.uuid}`));
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/suggestions/apply',
    { params: { number: NumberParam }, body: ApplyForm },
    async (request, reply) => {
      const c = requirePage(request);
      const uuid = (request.body as { comment_uuid: string }).comment_uuid;
      await applySuggestions(deps, c.viewer, pageRepoRef(request), numberOf(request), [uuid]);
      return seeOther(reply, await back(request, numberOf(request), `t-${uuid}`));
    },
  );
}
