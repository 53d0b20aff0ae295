/**
 * Markdown rendering that never holds the event loop for long (README "Markdown"). markdown-it
 * is quadratic or worse on some inputs (`'*a'.repeat(32768)` took 0.3-2.9 s), so:
 * - short texts (at most `inlineMaxChars`) render in place: they are cheap whatever they hold;
 * - longer ones go to one worker thread; the caller waits for it at most `waitMs` (a synchronous
 *   `Atomics.wait`, so the API stays synchronous; no wait when the worker is busy with other
 *   texts) and otherwise gets the text as escaped plain paragraphs (`plainHtml`) for now; the
 *   worker's HTML is kept once it arrives;
 * - a text the worker is still on after `limitMs` is given up: the worker is ended and started
 *   again, and that text stays plain text for good (it is never tried again);
 * - every result is kept in a cache by text (least recently used out past `cacheChars`), so a
 *   body is rendered once, not on every read.
 */
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { createMarkdownRenderer } from './render.ts';

export interface BoundedOptions {
  inlineMaxChars: number;
  waitMs: number;
  limitMs: number;
  cacheChars: number;
}

export const BOUNDED_DEFAULTS: BoundedOptions = {
  inlineMaxChars: 2000,
  waitMs: 30,
  limitMs: 2000,
  cacheChars: 32 * 1024 * 1024,
};

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** A text as escaped paragraphs (blank lines split them, single newlines become `<br />`). */
export function plainHtml(text: string): string {
  return text
    .split(/\n[ \t]*\n+/)
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br />\n')}</p>\n`)
    .join('');
}

interface Job {
  id: number;
  text: string;
}

export class BoundedMarkdown {
  private readonly inline = createMarkdownRenderer();
  private readonly cache = new Map<string, string>();
  private cachedChars = 0;
  private worker: Worker | null = null;
  private port: MessagePort | null = null;
  private signal: Int32Array | null = null;
  /** texts sent to the worker, in the order it takes them; the first started at `startedAt` */
  private queue: Job[] = [];
  private queued = new Set<string>();
  private startedAt = 0;
  private nextId = 1;
  private watchdog: NodeJS.Timeout | null = null;
  /** renders given up (for tests and logs) */
  gaveUp = 0;

  constructor(private readonly opts: BoundedOptions = BOUNDED_DEFAULTS) {}

  render(text: string): string {
    const hit = this.cache.get(text);
    if (hit !== undefined) {
      this.cache.delete(text);
      this.cache.set(text, hit);
      return hit;
    }
    if (text.length <= this.opts.inlineMaxChars) {
      const html = this.inline.render(text);
      this.keep(text, html);
      return html;
    }
    this.drain();
    // a worker busy with other texts cannot answer within the wait: do not wait at all then
    const idle = this.queue.length === 0;
    const id = this.send(text);
    if (!idle) return plainHtml(text);
    const deadline = performance.now() + this.opts.waitMs;
    for (;;) {
      const html = this.cache.get(text);
      if (html !== undefined) return html;
      const left = deadline - performance.now();
      if (left <= 0 || !this.signal) break;
      const seen = Atomics.load(this.signal, 0);
      if (!this.drain()) Atomics.wait(this.signal, 0, seen, left);
      if (id === null) break;
    }
    return plainHtml(text);
  }

  /** Ends the worker (tests; the process exits without it: the worker is unref'd). */
  async close(): Promise<void> {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    const worker = this.worker;
    this.worker = null;
    this.port?.close();
    this.port = null;
    this.queue = [];
    this.queued.clear();
    await worker?.terminate();
  }

  private keep(text: string, html: string): void {
    if (text.length + html.length > this.opts.cacheChars / 16) return;
    this.cache.set(text, html);
    this.cachedChars += text.length + html.length;
    for (const [k, v] of this.cache) {
      if (this.cachedChars <= this.opts.cacheChars) break;
      this.cache.delete(k);
      this.cachedChars -= k.length + v.length;
    }
  }

  /** Sends a text to the worker (once while it is queued); its id, or null when none could start. */
  private send(text: string): number | null {
    if (this.queued.has(text)) return this.queue.find((j) => j.text === text)?.id ?? null;
    const port = this.start();
    const job = { id: this.nextId++, text };
    if (this.queue.length === 0) this.startedAt = performance.now();
    this.queue.push(job);
    this.queued.add(text);
    port.postMessage(job);
    return job.id;
  }

  /** Takes every answer waiting on the port; whether there was one. */
  private drain(): boolean {
    let any = false;
    for (let m = this.port && receiveMessageOnPort(this.port); m; m = this.port && receiveMessageOnPort(this.port)) {
      this.accept(m.message as { id: number; html: string | null });
      any = true;
    }
    return any;
  }

  private accept(answer: { id: number; html: string | null }): void {
    const at = this.queue.findIndex((j) => j.id === answer.id);
    if (at < 0) return;
    const [job] = this.queue.splice(at, 1);
    this.queued.delete(job!.text);
    this.startedAt = performance.now();
    this.keep(job!.text, answer.html ?? plainHtml(job!.text));
  }

  private start(): MessagePort {
    if (this.worker && this.port) return this.port;
    const { port1, port2 } = new MessageChannel();
    const signal = new Int32Array(new SharedArrayBuffer(4));
    const own = import.meta.url;
    // from src/ (tests, `tsx`): the worker registers tsx itself; from dist/ it is a plain module
    const worker = own.endsWith('.ts')
      ? new Worker(
          `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(new URL('./render-worker.ts', own).href)}); })`,
          { eval: true, workerData: { port: port2, signal }, transferList: [port2] },
        )
      : new Worker(new URL('./markdown/render-worker.js', own), { workerData: { port: port2, signal }, transferList: [port2] });
    worker.unref();
    worker.on('error', () => this.restart(false));
    port1.on('message', (m: { id: number; html: string | null }) => this.accept(m));
    port1.unref();
    this.worker = worker;
    this.port = port1;
    this.signal = signal;
    this.watchdog ??= setInterval(() => this.check(), Math.max(50, this.opts.limitMs / 4));
    this.watchdog.unref();
    return port1;
  }

  /** The worker has been on one text past `limitMs`: give that text up, start again for the rest. */
  private check(): void {
    this.drain();
    if (this.queue.length === 0 || performance.now() - this.startedAt < this.opts.limitMs) return;
    this.restart(true);
  }

  private restart(giveUpFirst: boolean): void {
    const rest = this.queue;
    const worker = this.worker;
    this.worker = null;
    this.port?.close();
    this.port = null;
    this.signal = null;
    this.queue = [];
    this.queued.clear();
    void worker?.terminate();
    const first = rest.shift();
    if (first && giveUpFirst) {
      // given up for good: the same text would only hold the worker again
      this.gaveUp++;
      this.keep(first.text, plainHtml(first.text));
    }
    for (const job of rest) this.send(job.text);
  }
}

let shared: BoundedMarkdown | null = null;

/** The process's bounded renderer (threads, replies, event HTML, pages, pings). */
export function boundedMarkdown(): BoundedMarkdown {
  return (shared ??= new BoundedMarkdown());
}
