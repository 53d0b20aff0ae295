import { type Html, html, seg } from './html.ts';
import { type PageCaller, isSignedOut } from './context.ts';

/** htmx's settings for these pages: no inline styles or eval, so the CSP needs no 'unsafe-*'. */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  historyCacheSize: 0,
  selfRequestsOnly: true,
});

/**
 * Content-Security-Policy of every page (README "Web interface"): scripts and styles from this
 * origin only, no inline script, no eval; the live stream is a same-origin connection.
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; " +
  "font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export interface LayoutOptions {
  title: string;
  caller: PageCaller | null;
  /** extra stylesheets (highlight.js's theme on code pages) */
  styles?: string[];
  /** on a repo's pages, its `full_name`: the header's search box searches that repo (docs/search.md) */
  repo?: string;
}

/** The header's search box (docs/search.md): scoped to the repo on a repo's pages. */
function searchBox(repo: string | undefined): Html {
  return html`<form class="search" role="search" method="get" action="/search">
    ${repo ? html`<input type="hidden" name="repo" value="${repo}" />` : ''}
    <label for="top-search" class="sr-only">${repo ? `Search ${repo}` : 'Search'}</label>
    <input type="search" id="top-search" name="q" placeholder="${repo ? 'Search this repo' : 'Search'}" />
    <button type="submit">Search</button>
  </form>`;
}

/** The staff pages' link in the header, for staff only. */
const staffLink = (c: PageCaller): Html => (c.viewer.isStaff ? html`<a href="/admin">Admin</a>` : html``);

/** The page shell: header with navigation and sign-out, the main content, the scripts. */
export function layout(opts: LayoutOptions, body: Html): Html {
  // the signed-out reader of a public repo's pages (context.ts readerPage) sees the signed-out header
  const c = opts.caller && !isSignedOut(opts.caller) ? opts.caller : null;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${opts.title} · Weft</title>
<link rel="stylesheet" href="/static/weft.css">
${(opts.styles ?? []).map((s) => html`<link rel="stylesheet" href="/static/${s}" />`)}
<script src="/static/htmx.min.js" defer></script>
<script src="/static/sse.js" defer></script>
<script src="/static/weft.js" defer></script>
</head>
<body${c ? html` hx-headers="${JSON.stringify({ 'X-CSRF-Token': c.csrf })}"` : ''}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/">Weft</a>
${c ? searchBox(opts.repo) : ''}
<nav aria-label="Account">
${
  c
    ? html`<a href="/notifications" id="inbox-link" data-user="${c.viewer.uuid}"
          >Inbox <span class="badge" id="inbox-count" hidden></span
        ></a>
        <a href="/explore">Explore</a> <a href="/new">New repo</a> <a href="/teams/new">New team</a> ${staffLink(c)}
        <a href="/users/${seg(c.viewer.username)}">${c.viewer.username}</a>
        <a href="/settings">Settings</a>
        <form method="post" action="/logout">
          <input type="hidden" name="_csrf" value="${c.csrf}" /><button type="submit" class="link">Sign out</button>
        </form>`
    : html`<a href="/login">Sign in</a>`
}
</nav>
</header>
<main id="main">
${body}
</main>
</body>
</html>`;
}

/** The hidden CSRF field every state-changing form carries. */
export const csrfField = (c: PageCaller): Html => html`<input type="hidden" name="_csrf" value="${c.csrf}" />`;
