/**
 * References in rendered Markdown, for one reader (README "Issue tracker"): the renderer marks
 * each `#N`, `!N`, `owner/slug#N` and `owner/slug!N` as `<span class="ref">` (src/markdown);
 * here each mark whose target exists and the reader can read becomes a link to its page with the
 * target's title as its `title`; any other stays the text as written, so an unreadable target's
 * title never reaches the reader. A text with no mark costs no statement.
 */
import type { Kysely } from 'kysely';
import { checkAccess, type RepoRow } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import { REF_MARK_CLOSE, REF_MARK_OPEN } from '../markdown/references.ts';
import type { Viewer } from '../viewer.ts';

const MARK_RE = new RegExp(`${REF_MARK_OPEN}([^<]*)${REF_MARK_CLOSE}`, 'g');
const PARTS_RE = /^(?:([a-z0-9][a-z0-9_-]*)\/([a-z0-9][a-z0-9_-]*))?([#!])([0-9]{1,10})$/i;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
const unescape = (s: string) =>
  s
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');

export interface RepoPlace {
  uuid: string;
  /** the page address: /teams/{t}/{slug} or /users/{u}/{slug} */
  path: string;
}

/** The page address of a repo row (its owner's slug or username read once). */
async function placeOf(db: Kysely<DB>, repo: RepoRow): Promise<RepoPlace> {
  const owner =
    repo.owner_kind === 'team'
      ? await db.selectFrom('teams').select('slug as name').where('uuid', '=', repo.owner_uuid).executeTakeFirst()
      : await db.selectFrom('users').select('username as name').where('uuid', '=', repo.owner_uuid).executeTakeFirst();
  const name = encodeURIComponent(owner?.name ?? '-');
  return { uuid: repo.uuid, path: `/${repo.owner_kind === 'team' ? 'teams' : 'users'}/${name}/${encodeURIComponent(repo.slug)}` };
}

/** The repo `owner/slug` names (a team slug, else a username), or null. */
async function namedRepo(db: Kysely<DB>, owner: string, slug: string): Promise<RepoPlace | null> {
  const team = await db.selectFrom('teams').select('uuid').where('slug', '=', owner).executeTakeFirst();
  const user = team ? null : await db.selectFrom('users').select('uuid').where('username', '=', owner).executeTakeFirst();
  const ownerUuid = team?.uuid ?? user?.uuid;
  if (!ownerUuid) return null;
  const repo = await db
    .selectFrom('repos')
    .select('uuid')
    .where('owner_kind', '=', team ? 'team' : 'user')
    .where('owner_uuid', '=', ownerUuid)
    .where('slug', '=', slug)
    .executeTakeFirst();
  if (!repo) return null;
  return { uuid: repo.uuid, path: `/${team ? 'teams' : 'users'}/${encodeURIComponent(owner)}/${encodeURIComponent(slug)}` };
}

/**
 * The HTML texts with their reference marks linked for `viewer` (from `repo`, the repo the texts
 * belong to, which `#N` and `!N` name) or left as text.
 */
export async function linkReferences(
  db: Kysely<DB>,
  viewer: Viewer | null,
  repo: RepoRow | RepoPlace,
  htmls: string[],
): Promise<string[]> {
  if (!htmls.some((h) => h.includes(REF_MARK_OPEN))) return htmls;
  type Want = { repoKey: string; kind: 'thread' | 'pull'; number: number };
  const wants = new Map<string, Want>();
  const parse = (text: string): (Want & { key: string }) | null => {
    const m = PARTS_RE.exec(unescape(text));
    if (!m) return null;
    const repoKey = m[1] ? `${m[1].toLowerCase()}/${m[2]!.toLowerCase()}` : '';
    const want: Want = { repoKey, kind: m[3] === '#' ? 'thread' : 'pull', number: Number(m[4]) };
    if (want.number < 1 || want.number > 2 ** 31 - 1) return null;
    const key = `${repoKey}${m[3]}${want.number}`;
    wants.set(key, want);
    return { ...want, key };
  };
  for (const h of htmls) for (const m of h.matchAll(MARK_RE)) parse(m[1]!);
  // the repos named, then their threads and pulls with those numbers
  const places = new Map<string, RepoPlace | null>([['', 'path' in repo ? repo : await placeOf(db, repo)]]);
  for (const w of wants.values()) {
    if (!places.has(w.repoKey)) {
      const [owner, slug] = w.repoKey.split('/') as [string, string];
      places.set(w.repoKey, await namedRepo(db, owner, slug));
    }
  }
  const found = new Map<string, { uuid: string; title: string; href: string }>();
  for (const kind of ['thread', 'pull'] as const) {
    const byRepo = new Map<string, { place: RepoPlace; numbers: number[] }>();
    for (const w of wants.values()) {
      const place = places.get(w.repoKey);
      if (w.kind !== kind || !place) continue;
      const entry = byRepo.get(place.uuid) ?? { place, numbers: [] };
      entry.numbers.push(w.number);
      byRepo.set(place.uuid, entry);
    }
    if (byRepo.size === 0) continue;
    const rows = await db
      .selectFrom(kind === 'thread' ? 'threads' : 'pulls')
      .select(['uuid', 'repo_uuid', 'number', 'title'])
      .where((eb) =>
        eb.or([...byRepo.values()].map((e) => eb.and([eb('repo_uuid', '=', e.place.uuid), eb('number', 'in', e.numbers)]))),
      )
      .execute();
    const readable = await checkAccess(
      db,
      viewer,
      kind === 'thread' ? 'thread.read' : 'pull.read',
      rows.map((r) => r.uuid),
    );
    for (const r of rows) {
      if (!readable.has(r.uuid)) continue;
      const place = byRepo.get(r.repo_uuid)!.place;
      const href = `${place.path}/${kind === 'thread' ? 'threads' : 'pulls'}/${r.number}`;
      for (const [key, w] of wants) {
        if (w.kind === kind && places.get(w.repoKey)?.uuid === r.repo_uuid && w.number === r.number) {
          found.set(key, { uuid: r.uuid, title: r.title, href });
        }
      }
    }
  }
  return htmls.map((h) =>
    h.replace(MARK_RE, (_all, text: string) => {
      const want = parse(text);
      const target = want ? found.get(want.key) : undefined;
      return target ? `<a href="${escapeHtml(target.href)}" class="ref" title="${escapeHtml(target.title)}">${text}</a>` : text;
    }),
  );
}
