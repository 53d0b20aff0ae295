import { boundedMarkdown } from '../markdown/bounded.ts';
import { type Html, trusted } from './html.ts';

/**
 * Rendered HTML kept for text that renders the same every time (README "Web interface", page
 * speed): Markdown by its source text, an event by its record as the reader sees it, a diff by
 * its two commit shas. Least recently used entries go first once a cache holds `maxChars`.
 */
export class RenderCache {
  private readonly entries = new Map<string, string>();
  private chars = 0;

  constructor(
    private readonly maxChars: number,
    /** keys and values longer than this are rendered every time, never kept */
    private readonly maxEntryChars = maxChars / 16,
  ) {}

  get(key: string, render: () => string): string {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const value = render();
    this.set(key, value);
    return value;
  }

  peek(key: string): string | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, value: string): void {
    const size = key.length + value.length;
    if (size > this.maxEntryChars) return;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.chars -= key.length + old.length;
    }
    this.entries.set(key, value);
    this.chars += size;
    for (const [k, v] of this.entries) {
      if (this.chars <= this.maxChars) break;
      this.entries.delete(k);
      this.chars -= k.length + v.length;
    }
  }
}

const renderer = { render: (text: string) => boundedMarkdown().render(text) };
const markdownCache = new RenderCache(8 * 1024 * 1024);

/** Markdown rendered and sanitised by the API's renderer, kept by its source text. */
export const markdownHtml = (text: string): Html => trusted(markdownCache.get(text, () => renderer.render(text)));
