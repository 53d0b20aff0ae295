import { type ObjectReaders, parseTree, type TreeEntry } from './objects.ts';

/**
 * Directory listings with the size of every file, cached by tree oid. A tree's oid names its
 * content (the entries and, through their oids, every file's size), so a cached listing is
 * never stale and may serve every repository that holds the tree. Reading 10,000 blob sizes
 * costs tens of milliseconds (deltified objects are partly inflated); a cached listing costs
 * nothing, and blob sizes are kept by oid across listings. Bounded by the number of entries kept (least recently used first out).
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

/**
 * Sizes of blobs by oid (an oid names the bytes, so a size never changes): two versions of a
 * directory share all but the files that changed, so listing the next version asks git only for
 * the new blobs. Bounded by count, oldest first out.
 */
const MAX_SIZES = 200_000;
const sizes = new Map<string, number>();

function rememberSize(oid: string, size: number): void {
  sizes.set(oid, size);
  if (sizes.size > MAX_SIZES) sizes.delete(sizes.keys().next().value!);
}

const pending = new Map<string, Promise<ListedEntry[] | null>>();

/** The entries of tree `oid` in byte order of their names, with file sizes; null when it is not a tree. */
export async function listTree(objects: ObjectReaders, dir: string, oid: string): Promise<ListedEntry[] | null> {
  const hit = cache.get(oid);
  if (hit) {
    // most recently used last
    cache.delete(oid);
    cache.set(oid, hit);
    return hit;
  }
  // concurrent misses of one tree share one read (the key is the content, whichever repo asks)
  const running = pending.get(oid);
  if (running) return running;
  const read = readTree(objects, dir, oid).finally(() => pending.delete(oid));
  pending.set(oid, read);
  return read;
}

async function readTree(objects: ObjectReaders, dir: string, oid: string): Promise<ListedEntry[] | null> {
  const tree = await objects.one(dir, oid);
  if (!tree || tree.type !== 'tree') return null;
  const entries = parseTree(tree.data);
  const unknown = [...new Set(entries.filter((e) => e.type === 'file' && !sizes.has(e.oid)).map((e) => e.oid))];
  const infos = await objects.info(dir, unknown);
  const found = new Map<string, number>();
  unknown.forEach((blob, i) => {
    const info = infos[i];
    if (info) found.set(blob, info.size);
  });
  const sizeOf = (blob: string) => found.get(blob) ?? sizes.get(blob) ?? 0;
  const listed = entries.map((e): ListedEntry => ({
    mode: e.mode,
    type: e.type,
    name: e.name,
    oid: e.oid,
    size: e.type === 'file' ? sizeOf(e.oid) : null,
  }));
  for (const [blob, size] of found) rememberSize(blob, size);
  if (listed.length <= MAX_CACHED_ENTRIES / 4) remember(oid, listed);
  return listed;
}
