import { type ObjectReaders, parseTree, type TreeEntry } from './objects.ts';

/**
 * Directory listings with the size of every file, cached by tree oid. A tree's oid names its
 * content (the entries and, through their oids, every file's size), so a cached listing is
 * never stale and may serve every repository that holds the tree. Reading 10,000 blob sizes
 * costs tens of milliseconds (deltified objects are partly inflated); a cached listing costs
 * nothing. Bounded by the number of entries kept (least recently used first out).
 */

export interface ListedEntry extends TreeEntry {
  /** bytes, files only */
  size: number | null;
}

const MAX_CACHED_ENTRIES = 200_000;
const cache = new Map<string, ListedEntry[]>();
let cachedEntries = 0;

function remember(oid: string, entries: ListedEntry[]): void {
  cache.set(oid, entries);
  cachedEntries += entries.length;
  for (const [key, value] of cache) {
    if (cachedEntries <= MAX_CACHED_ENTRIES) break;
    cache.delete(key);
    cachedEntries -= value.length;
  }
}

/** The entries of tree `oid` in byte order of their names, with file sizes; null when it is not a tree. */
export async function listTree(objects: ObjectReaders, dir: string, oid: string): Promise<ListedEntry[] | null> {
  const hit = cache.get(oid);
  if (hit) {
    // most recently used last
    cache.delete(oid);
    cache.set(oid, hit);
    return hit;
  }
  const tree = await objects.one(dir, oid);
  if (!tree || tree.type !== 'tree') return null;
  const entries = parseTree(tree.data);
  const files = entries.filter((e) => e.type === 'file');
  const infos = await objects.info(
    dir,
    files.map((f) => f.oid),
  );
  const sizes = new Map<string, number>();
  files.forEach((f, i) => sizes.set(f.oid, infos[i]?.size ?? 0));
  const listed = entries.map((e) => ({ ...e, size: e.type === 'file' ? (sizes.get(e.oid) ?? 0) : null }));
  if (listed.length <= MAX_CACHED_ENTRIES / 4) remember(oid, listed);
  return listed;
}
