import { type ChildProcess, spawn } from 'node:child_process';
import { gitTimeout } from './limits.ts';
import { gitEnv } from './run.ts';

/**
 * The git object reader: long-lived `git cat-file --batch-command --buffer` processes, a small
 * pool per repository with an idle timeout, instead of one process per object. A request sends
 * its commands in one write (`info NAME` / `contents NAME`, then `flush`) and reads the answers
 * in order. Names are validated by the caller (src/git/resolve.ts): no control character reaches
 * a command line, so a name cannot add a command.
 */

export type ObjectType = 'blob' | 'tree' | 'commit' | 'tag';

export interface ObjectInfo {
  oid: string;
  type: ObjectType;
  size: number;
}

export interface GitObject extends ObjectInfo {
  data: Buffer;
}

export interface ObjectReaderOptions {
  /** processes per repository (default 2) */
  perRepo: number;
  /** processes across all repositories; idle ones are closed first to make room (default 32) */
  total: number;
  /** a process idle this long exits (default 30 s) */
  idleMs: number;
  /** one batch may take this long before its process is killed (503 git_timeout) */
  timeoutMs: number;
}

type Command = { kind: 'info' | 'contents'; name: string };
type Answer = ObjectInfo | GitObject | null;

interface Batch {
  commands: Command[];
  answers: Answer[];
  resolve: (answers: Answer[]) => void;
  reject: (err: Error) => void;
}

/** One `git cat-file --batch-command` process and the batches waiting for it, answered in order. */
class BatchProcess {
  private readonly child: ChildProcess;
  private readonly queue: Batch[] = [];
  private chunks: Buffer[] = [];
  private buffered = 0;
  private timer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  dead = false;
  lastUsed = Date.now();

  constructor(
    readonly dir: string,
    private readonly options: ObjectReaderOptions,
    private readonly onExit: (p: BatchProcess) => void,
  ) {
    this.child = spawn('git', [`--git-dir=${dir}`, 'cat-file', '--batch-command', '--buffer'], {
      env: gitEnv(),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stdin!.on('error', () => this.fail(new Error('git cat-file stopped')));
    this.child.on('error', (err) => this.fail(err));
    this.child.on('close', () => this.fail(new Error('git cat-file exited')));
    this.armIdle();
  }

  get pending(): number {
    return this.queue.length;
  }

  run(commands: Command[]): Promise<Answer[]> {
    if (this.dead) return Promise.reject(new Error('git cat-file is closed'));
    if (commands.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.queue.push({ commands, answers: [], resolve, reject });
      if (this.idleTimer) clearTimeout(this.idleTimer);
      this.idleTimer = null;
      if (!this.timer) this.armTimeout();
      const text = commands.map((c) => `${c.kind} ${c.name}\n`).join('') + 'flush\n';
      this.child.stdin!.write(text);
    });
  }

  private armTimeout(): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.fail(gitTimeout());
    }, this.options.timeoutMs);
  }

  private armIdle(): void {
    this.lastUsed = Date.now();
    this.idleTimer = setTimeout(() => this.close(), this.options.idleMs);
    this.idleTimer.unref();
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    let pos = 0;
    while (this.queue.length > 0) {
      const batch = this.queue[0]!;
      const command = batch.commands[batch.answers.length]!;
      const nl = buf.indexOf(10, pos);
      if (nl < 0) break;
      const header = buf.toString('utf8', pos, nl);
      const parts = header.split(' ');
      if (parts.length !== 3 || !/^[0-9a-f]{40,64}$/.test(parts[0]!)) {
        // "<name> missing", "<name> ambiguous" (the name may hold spaces): no object
        batch.answers.push(null);
        pos = nl + 1;
      } else {
        const info: ObjectInfo = { oid: parts[0]!, type: parts[1] as ObjectType, size: Number(parts[2]) };
        if (command.kind === 'info') {
          batch.answers.push(info);
          pos = nl + 1;
        } else {
          const end = nl + 1 + info.size;
          if (buf.length < end + 1) break;
          batch.answers.push({ ...info, data: Buffer.from(buf.subarray(nl + 1, end)) });
          pos = end + 1;
        }
      }
      if (batch.answers.length === batch.commands.length) {
        this.queue.shift();
        if (this.timer) clearTimeout(this.timer);
        this.timer = null;
        if (this.queue.length > 0) this.armTimeout();
        else this.armIdle();
        batch.resolve(batch.answers);
      }
    }
    const rest = pos === 0 ? buf : buf.subarray(pos);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
  }

  private fail(err: Error): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.timer = null;
    this.idleTimer = null;
    const wasDead = this.dead;
    this.dead = true;
    for (const batch of this.queue.splice(0)) batch.reject(err);
    if (!wasDead) {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
      this.onExit(this);
    }
  }

  close(): void {
    this.fail(new Error('git cat-file closed'));
  }
}

/**
 * The pool of object readers of one instance. `read(dir, commands)` runs one batch on the
 * least busy process of that repository, starting one while the repository has fewer than
 * `perRepo` and the instance fewer than `total` (closing the longest-idle process elsewhere to
 * make room).
 */
export class ObjectReaders {
  private readonly byDir = new Map<string, BatchProcess[]>();
  private count = 0;
  private closed = false;

  constructor(readonly options: ObjectReaderOptions) {}

  get processCount(): number {
    return this.count;
  }

  private pick(dir: string): BatchProcess {
    const list = this.byDir.get(dir) ?? [];
    let best: BatchProcess | null = null;
    for (const p of list) if (!best || p.pending < best.pending) best = p;
    if (best && (best.pending === 0 || list.length >= this.options.perRepo)) return best;
    if (this.count >= this.options.total) this.evictIdle();
    if (this.count >= this.options.total && best) return best;
    // At the total with nothing idle to close and no process here: start one anyway (the total
    // is a target kept by closing idle processes; each batch still has its timeout).
    const p = new BatchProcess(dir, this.options, (gone) => this.forget(gone));
    this.count++;
    list.push(p);
    this.byDir.set(dir, list);
    return p;
  }

  private evictIdle(): void {
    let oldest: BatchProcess | null = null;
    for (const list of this.byDir.values()) {
      for (const p of list) if (p.pending === 0 && (!oldest || p.lastUsed < oldest.lastUsed)) oldest = p;
    }
    oldest?.close();
  }

  private forget(p: BatchProcess): void {
    const list = this.byDir.get(p.dir);
    if (!list) return;
    const i = list.indexOf(p);
    if (i < 0) return;
    list.splice(i, 1);
    this.count--;
    if (list.length === 0) this.byDir.delete(p.dir);
  }

  private run(dir: string, commands: Command[]): Promise<Answer[]> {
    if (this.closed) return Promise.reject(new Error('object readers are closed'));
    return this.pick(dir).run(commands);
  }

  /** Type, size and oid of each name (null for a missing or ambiguous one). */
  async info(dir: string, names: string[]): Promise<(ObjectInfo | null)[]> {
    return (await this.run(
      dir,
      names.map((name) => ({ kind: 'info' as const, name })),
    )) as (ObjectInfo | null)[];
  }

  /** Each object's content (null for a missing or ambiguous one). */
  async contents(dir: string, names: string[]): Promise<(GitObject | null)[]> {
    return (await this.run(
      dir,
      names.map((name) => ({ kind: 'contents' as const, name })),
    )) as (GitObject | null)[];
  }

  async one(dir: string, name: string): Promise<GitObject | null> {
    return (await this.contents(dir, [name]))[0] ?? null;
  }

  /** Closes every process (the app is closing). */
  close(): void {
    this.closed = true;
    for (const list of [...this.byDir.values()]) for (const p of [...list]) p.close();
  }
}

export interface TreeEntry {
  mode: string;
  type: 'file' | 'dir' | 'symlink' | 'submodule';
  name: string;
  oid: string;
}

/** Entries of a raw tree object (`MODE SP NAME NUL 20-byte-oid`), in byte order of their names. */
export function parseTree(data: Buffer, oidBytes = 20): TreeEntry[] {
  const entries: TreeEntry[] = [];
  // where each name is, to sort by its bytes if git's order is not byte order
  const starts: number[] = [];
  const ends: number[] = [];
  let dirs = false;
  let pos = 0;
  while (pos < data.length) {
    const sp = data.indexOf(32, pos);
    const nul = data.indexOf(0, sp + 1);
    if (sp < 0 || nul < 0) break;
    // modes are 40000, 100644, 100755, 120000, 160000 (and old 100664): read from their bytes
    const len = sp - pos;
    const c0 = data[pos];
    const c1 = data[pos + 1];
    let type: TreeEntry['type'];
    let mode: string;
    if (len === 5 && c0 === 0x34) {
      type = 'dir';
      mode = '040000';
      dirs = true;
    } else if (len === 6 && c0 === 0x31 && c1 === 0x30) {
      type = 'file';
      mode =
        data[pos + 3] === 0x36 && data[pos + 4] === 0x34 && data[pos + 5] === 0x34 ? '100644' : data.toString('latin1', pos, sp);
    } else {
      mode = data.toString('latin1', pos, sp).padStart(6, '0');
      type = mode === '040000' ? 'dir' : mode === '120000' ? 'symlink' : mode === '160000' ? 'submodule' : 'file';
      if (type === 'dir') dirs = true;
    }
    entries.push({
      mode,
      type,
      name: data.toString('utf8', sp + 1, nul),
      oid: data.toString('hex', nul + 1, nul + 1 + oidBytes),
    });
    starts.push(sp + 1);
    ends.push(nul);
    pos = nul + 1 + oidBytes;
  }
  // git orders a tree as if each directory's name ended in "/": without directories that is byte order
  if (!dirs) return entries;
  // each name's bytes as a latin1 string: one char per byte, so `<` on them is byte order
  const keys = starts.map((start, i) => data.toString('latin1', start, ends[i]));
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) if (keys[i - 1]! > keys[i]!) sorted = false;
  if (sorted) return entries;
  const order = entries.map((_, i) => i);
  order.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0));
  return order.map((i) => entries[i]!);
}

export interface Signature {
  name: string;
  email: string;
  date: string;
}

export interface ParsedCommit {
  sha: string;
  tree: string;
  parents: string[];
  author: Signature;
  committer: Signature;
  message: string;
}

/** `Name <email> 1700000000 +0100` as `{name, email, date}` (ISO 8601 UTC). */
export function parseSignature(text: string): Signature {
  const m = /^(.*?) ?<([^>]*)> (-?\d+) ([+-]\d{4})$/.exec(text);
  if (!m) return { name: text, email: '', date: new Date(0).toISOString() };
  return { name: m[1]!, email: m[2]!, date: new Date(Number(m[3]) * 1000).toISOString() };
}

/** A raw commit object: headers (continuation lines skipped), a blank line, the message. */
export function parseCommit(sha: string, data: Buffer): ParsedCommit {
  const text = data.toString('utf8');
  const split = text.indexOf('\n\n');
  const head = split < 0 ? text : text.slice(0, split);
  const message = split < 0 ? '' : text.slice(split + 2);
  const commit: ParsedCommit = {
    sha,
    tree: '',
    parents: [],
    author: parseSignature(''),
    committer: parseSignature(''),
    message: message.replace(/\n+$/, ''),
  };
  for (const line of head.split('\n')) {
    if (line.startsWith(' ')) continue;
    const sp = line.indexOf(' ');
    const key = line.slice(0, sp);
    const value = line.slice(sp + 1);
    if (key === 'tree') commit.tree = value;
    else if (key === 'parent') commit.parents.push(value);
    else if (key === 'author') commit.author = parseSignature(value);
    else if (key === 'committer') commit.committer = parseSignature(value);
  }
  return commit;
}
