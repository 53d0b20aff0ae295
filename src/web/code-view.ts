import type { BlameGroup } from '../code/blame.ts';
import type { Deps } from '../deps.ts';
import type { RepoJson } from '../repos/view.ts';
import { type Html, html, seg, trusted, when } from './html.ts';
import { repoHref } from './home-pages.ts';

/**
 * Parts of the code pages (docs/web.md "Reading code"): addresses of a ref and a path, the branch
 * and tag switcher, line numbers that are links, and the blame table.
 */

export const segPath = (path: string): string => path.split('/').map(seg).join('/');

export type CodeKind = 'tree' | 'blob' | 'raw' | 'blame' | 'commits';

/** Where a ref and a path inside it are: `/tree/{ref}/{path}`, `/blob/…`, `/raw/…`, `/blame/…` (commits: `?path=`). */
export function codeHref(repo: RepoJson, kind: CodeKind, ref: string, path: string): string {
  if (kind === 'commits') {
    const q = path ? `?${new URLSearchParams({ path }).toString()}` : '';
    return `${repoHref(repo)}/commits/${segPath(ref)}${q}`;
  }
  return `${repoHref(repo)}/${kind}/${segPath(ref)}${path ? `/${segPath(path)}` : ''}`;
}

/** The archive of a ref: `{repo}/archive/{ref}.zip` or `.tar.gz` (the API's route, also served to pages). */
export const archiveHref = (repo: RepoJson, ref: string, suffix: '.zip' | '.tar.gz'): string =>
  `${repoHref(repo)}/archive/${segPath(ref)}${suffix}`;

/** Download links of a ref's archive. */
export function archiveLinks(repo: RepoJson, ref: string): Html {
  return html`<span class="row archive-links"
    ><span class="muted">Download</span> <a href="${archiveHref(repo, ref, '.zip')}" download>zip</a>
    <a href="${archiveHref(repo, ref, '.tar.gz')}" download>tar.gz</a></span
  >`;
}

/** How many branches and how many tags the switcher lists (more: the refs page, filtered and paged). */
export const SWITCHER_REFS = 20;

/** A repo's branch and tag names, sorted (byte order, as git lists them). */
export async function refNames(deps: Deps, repoUuid: string): Promise<{ branches: string[]; tags: string[] }> {
  const [heads, tags] = await Promise.all([deps.git.refs(repoUuid, 'refs/heads/'), deps.git.refs(repoUuid, 'refs/tags/')]);
  return {
    branches: heads.map((r) => r.ref.slice('refs/heads/'.length)),
    tags: tags.map((r) => r.ref.slice('refs/tags/'.length)),
  };
}

export interface SwitcherOptions {
  repo: RepoJson;
  /** the ref shown (a branch, a tag or a sha) and what it is */
  current: { name: string; kind: 'branch' | 'tag' | 'sha' };
  /** the page a chosen ref leads to, with the path kept */
  to: Exclude<CodeKind, 'raw'>;
  path: string;
  refs: { branches: string[]; tags: string[] };
  /** the viewer may open a pull here */
  canPull: boolean;
}

/**
 * The branch and tag switcher: a `<details>` menu of links (it works without script), each to the
 * same page and path at another ref; "New pull" beside each branch but the default one, where the
 * viewer may open one; a filter (a form to the refs page, which filters and pages every ref; with
 * script it also narrows the menu as one types); the ref's archive.
 */
export function refSwitcher(o: SwitcherOptions): Html {
  const { repo, current } = o;
  const label = current.kind === 'sha' ? 'Commit' : current.kind === 'tag' ? 'Tag' : 'Branch';
  const shown = current.kind === 'sha' ? current.name.slice(0, 10) : current.name;
  const base = repoHref(repo);
  const branches = o.refs.branches.slice(0, SWITCHER_REFS);
  const tags = o.refs.tags.slice(0, SWITCHER_REFS);
  const more = o.refs.branches.length > SWITCHER_REFS || o.refs.tags.length > SWITCHER_REFS;
  const all = `${base}/refs?${new URLSearchParams({ to: o.to, ...(o.path ? { path: o.path } : {}) }).toString()}`;
  const item = (name: string, kind: 'branch' | 'tag') =>
    html`<li data-ref="${name}">
      <a
        href="${codeHref(repo, o.to, name, o.path)}"
        ${name === current.name && kind === current.kind ? html` aria-current="true"` : ''}
        >${name}</a
      >${
        kind === 'branch' && o.canPull && name !== repo.default_branch
          ? html` <a class="small" href="${base}/pulls/new?source=${seg(name)}">New pull</a>`
          : ''
      }
    </li>`;
  return html`<details class="switcher" id="ref-switcher">
    <summary>${label}: <strong>${shown}</strong></summary>
    <div class="switcher-menu">
      <form method="get" action="${base}/refs" role="search" class="row">
        <label for="ref-filter" class="visually-hidden">Filter branches and tags</label>
        <input id="ref-filter" name="q" type="search" placeholder="Filter branches and tags" data-ref-filter />
        <input type="hidden" name="to" value="${o.to}" />
        ${o.path ? html`<input type="hidden" name="path" value="${o.path}" />` : ''}
        <button type="submit">Filter</button>
      </form>
      <h3>Branches</h3>
      ${
        branches.length
          ? html`<ul class="plain refs">
              ${branches.map((b) => item(b, 'branch'))}
            </ul>`
          : html`<p class="muted">No branches.</p>`
      }
      <h3>Tags</h3>
      ${
        tags.length
          ? html`<ul class="plain refs">
              ${tags.map((t) => item(t, 'tag'))}
            </ul>`
          : html`<p class="muted">No tags.</p>`
      }
      <p><a href="${all}">${more ? 'All branches and tags' : 'Browse branches and tags'}</a></p>
      <p>${archiveLinks(repo, current.name)}</p>
    </div>
  </details>`;
}

/**
 * Line numbers, each a link to its line (`#L12`) and the target of one (tabindex -1: the gutter is
 * not in the tab order). Blocks, one a line (styles: `.code.lines td.n a`), so no newline between them.
 */
export function lineNumbers(start: number, count: number): Html {
  return trusted(
    Array.from({ length: count }, (_, i) => {
      const n = start + i;
      return `<a id="L${n}" href="#L${n}" data-ln="${n}" tabindex="-1">${n}</a>`;
    }).join(''),
  );
}

/** The lines of a file beside their numbers, in a scrolling region (focusable: axe scrollable-region-focusable). */
export function codeTable(code: Html, count: number): Html {
  // cells built apart: whitespace inside them would show (pre)
  const gutter = html`<pre aria-hidden="true">${lineNumbers(1, count)}</pre>`;
  const source = html`<pre><code class="hljs">${code}</code></pre>`;
  return html`<div class="code lines" tabindex="0" role="region" aria-label="File content" data-lines>
    <table>
      <tbody>
        <tr>
          ${html`<td class="n">${gutter}</td>`}${html`<td class="src">${source}</td>`}
        </tr>
      </tbody>
    </table>
  </div>`;
}

/** A file's blame: each group of lines beside the commit that last changed them (its message links to the commit). */
export function blameTable(repo: RepoJson, groups: BlameGroup[]): Html {
  const rows = groups.map((g) => {
    const c = g.commit;
    const gutter = html`<pre aria-hidden="true">${lineNumbers(g.start, g.lines.length)}</pre>`;
    const source = html`<pre><code>${g.lines.join('\n')}</code></pre>`;
    return html`<tr>
      <td class="blame-commit">
        <a href="${repoHref(repo)}/commit/${c.sha}" title="${c.summary}">${c.summary || c.sha.slice(0, 10)}</a>
        <span class="muted small">${c.author} ${when(c.date)} <code>${c.sha.slice(0, 7)}</code></span>
      </td>
      ${html`<td class="n">${gutter}</td>`}${html`<td class="src">${source}</td>`}
    </tr>`;
  });
  return html`<div class="code lines blame" tabindex="0" role="region" aria-label="Blame" data-lines>
    <table>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}
