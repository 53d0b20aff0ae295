/**
 * What an event says, as the pages show it (README "Live event stream", `html=true`): a short
 * sentence after the actor's name, with links to what it names ("pushed tag v1.0 to core/proj",
 * "opened pull #3 Fix"). Links to a repo go through `/repos/{uuid}/…`, which leads to the repo's
 * page for a reader who may read it (404 otherwise), so a fragment never needs the owner's kind.
 * A kind without a sentence, or a payload without the fields (redacted for the reader), reads as
 * its kind. Every value is escaped; the caller sanitises the whole fragment too.
 */

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const seg = (text: string | number) => encodeURIComponent(String(text));
const segPath = (text: string) => text.split('/').map(seg).join('/');

type Payload = Record<string, unknown>;

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) ? v : null);
const obj = (v: unknown): Payload | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Payload) : null);

const ZERO = /^0+$/;

const link = (href: string, text: string) => `<a href="${escape(href)}">${escape(text)}</a>`;
const repoPath = (uuid: string, rest = '') => `/repos/${seg(uuid)}${rest}`;

/** " in core/proj" (a link to the repo), when the payload names it. */
function inRepo(p: Payload, word = 'in'): string {
  const uuid = str(p.repo_uuid) ?? str(obj(p.repo)?.uuid);
  const name = str(obj(p.repo)?.full_name) ?? str(p.full_name);
  if (!uuid || !name) return '';
  return ` ${word} ${link(repoPath(uuid), name)}`;
}

function push(p: Payload): string | null {
  const ref = str(p.ref);
  const uuid = str(p.repo_uuid);
  if (!ref || !uuid) return null;
  const created = ZERO.test(String(p.before ?? ''));
  const deleted = ZERO.test(String(p.after ?? ''));
  if (ref.startsWith('refs/tags/')) {
    const tag = ref.slice('refs/tags/'.length);
    if (deleted) return `deleted tag <code>${escape(tag)}</code>${inRepo(p, 'from')}`;
    const tagLink = link(repoPath(uuid, `/tree/${segPath(tag)}`), tag);
    return `${created ? 'pushed tag' : 'moved tag'} ${tagLink}${inRepo(p, 'to')}`;
  }
  if (ref.startsWith('refs/heads/')) {
    const branch = ref.slice('refs/heads/'.length);
    if (deleted) return `deleted branch <code>${escape(branch)}</code>${inRepo(p, 'from')}`;
    const branchLink = link(repoPath(uuid, `/commits/${segPath(branch)}`), branch);
    if (created) return `created branch ${branchLink}${inRepo(p)}`;
    return `${p.forced === true ? 'force-pushed to' : 'pushed to'} ${branchLink}${inRepo(p)}`;
  }
  return null;
}

/** "#3 Title" linking to the pull or the issue. */
function numbered(p: Payload, kind: 'pulls' | 'threads', numberKey = 'number', titleKey = 'title'): string | null {
  const uuid = str(p.repo_uuid);
  const n = num(p[numberKey]);
  if (!uuid || n === null) return null;
  const title = str(p[titleKey]);
  return link(repoPath(uuid, `/${kind}/${n}`), `#${n}${title ? ` ${title}` : ''}`);
}

const PULL_ACTIONS: Record<string, string> = {
  closed: 'closed pull',
  reopened: 'reopened pull',
  edited: 'edited pull',
  synchronized: 'updated pull',
};

const REVIEWS: Record<string, string> = {
  approved: 'approved pull',
  changes_requested: 'requested changes on pull',
  commented: 'reviewed pull',
};

const THREADS: Record<string, string> = {
  'thread-created': 'opened issue',
  'thread-closed': 'closed issue',
  'thread-reopened': 'reopened issue',
  'thread-updated': 'edited issue',
  'thread-locked': 'locked issue',
  'thread-unlocked': 'unlocked issue',
};

function sentenceOf(kind: string, p: Payload): string | null {
  if (kind === 'branch-pushed') return push(p);
  if (kind === 'pull-opened' || kind === 'pull-merged') {
    const pull = numbered(p, 'pulls');
    return pull ? `${kind === 'pull-opened' ? 'opened' : 'merged'} pull ${pull}${inRepo(p)}` : null;
  }
  if (kind === 'pull-updated') {
    const pull = numbered(p, 'pulls');
    const action = PULL_ACTIONS[str(p.action) ?? ''];
    return pull && action ? `${action} ${pull}` : null;
  }
  if (kind === 'review-submitted') {
    const pull = numbered(p, 'pulls', 'pull_number', '');
    const what = REVIEWS[str(p.status) ?? ''];
    return pull && what ? `${what} ${pull}` : null;
  }
  if (THREADS[kind]) {
    const thread = numbered(p, 'threads');
    return thread ? `${THREADS[kind]} ${thread}` : null;
  }
  if (kind === 'reply-created') {
    const thread = numbered(p, 'threads', 'thread_number', '');
    return thread ? `replied on ${thread}` : null;
  }
  if (kind === 'repo-created') {
    const uuid = str(p.repo_uuid);
    const name = str(p.full_name);
    return uuid && name ? `created repo ${link(repoPath(uuid), name)}` : null;
  }
  if (kind === 'fork-created') {
    const uuid = str(p.repo_uuid);
    const name = str(p.full_name);
    const source = str(p.source_repo_uuid);
    const sourceName = str(p.source_full_name);
    if (!uuid || !name) return null;
    const from = source && sourceName ? ` from ${link(repoPath(source), sourceName)}` : '';
    return `forked ${link(repoPath(uuid), name)}${from}`;
  }
  if (kind === 'release-published') {
    const uuid = str(p.repo_uuid);
    const release = obj(p.release);
    const tag = str(release?.tag_name);
    if (!uuid || !tag) return null;
    return `published release ${link(repoPath(uuid, `/releases/tag/${seg(tag)}`), str(release?.name) ?? tag)}${inRepo(p)}`;
  }
  if (kind === 'team-created') {
    const slug = str(p.slug);
    return slug ? `created team ${link(`/teams/${seg(slug)}`, str(p.name) ?? slug)}` : null;
  }
  if (kind === 'member-added') {
    const slug = str(p.team_slug);
    const user = str(p.username);
    return slug && user ? `added ${link(`/users/${seg(user)}`, user)} to ${link(`/teams/${seg(slug)}`, slug)}` : null;
  }
  return null;
}

/** The sentence of an event (HTML, escaped), or its kind in words. */
export function sentence(kind: string, payload: Payload): string {
  return sentenceOf(kind, payload) ?? `<span class="kind">${escape(kind)}</span>`;
}
