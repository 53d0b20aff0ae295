/**
 * What the tracker's pages share (docs/tracker.md "Pages"): label chips, the list filters as a
 * query box, and the links of the Issues tab.
 */
import type { ThreadFilters } from '../../threads/service.ts';
import { type Html, html, seg } from '../html.ts';

export interface ChipLabel {
  name: string;
  color: string;
  description?: string;
}

/**
 * A label as a chip: a swatch of its colour (an SVG fill, which the pages' CSP allows where an
 * inline style is not) beside its name in the page's own text colour, so the name keeps its
 * contrast whatever the label's colour.
 */
export function labelChip(label: ChipLabel, href?: string): Html {
  const inner = html`<svg class="swatch" width="12" height="12" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
      <rect width="12" height="12" rx="3" fill="#${label.color}" stroke="#57606a" stroke-width="1" /></svg
    >${label.name}`;
  const title = label.description ? html` title="${label.description}"` : '';
  return href
    ? html`<a class="label-chip" href="${href}" ${title}>${inner}</a>`
    : html`<span class="label-chip" ${title}>${inner}</span>`;
}

/** The relative luminance of a colour `rrggbb` (WCAG 2). */
export function luminance(color: string): number {
  const ch = [0, 2, 4].map((i) => parseInt(color.slice(i, i + 2), 16) / 255);
  const lin = ch.map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * lin[0]! + 0.7152 * lin[1]! + 0.0722 * lin[2]!;
}

/** The contrast ratio of two colours `rrggbb` (WCAG 2: 1 to 21). */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** The list filters a page address carries, as the API's GET {repo}/threads takes them. */
export type IssueQuery = ThreadFilters & { page?: number };

const QUALIFIERS = ['is', 'state', 'label', 'assignee', 'milestone', 'author', 'mentioned', 'sort'] as const;

/**
 * The query box (`is:closed label:bug author:ann words`) merged over the address's filters: a
 * qualifier sets its filter (`label:` adds one), the other words are `q`. A value with spaces is
 * quoted (`label:"good first issue"`).
 */
export function parseQueryBox(box: string, base: ThreadFilters = {}): ThreadFilters {
  const out: ThreadFilters = { ...base, q: undefined };
  const words: string[] = [];
  const labels = base.labels ? base.labels.split(',') : [];
  for (const m of box.matchAll(/(\w+):(?:"([^"]*)"|(\S+))|"([^"]*)"|(\S+)/g)) {
    const key = m[1]?.toLowerCase();
    const value = (m[2] ?? m[3] ?? '').trim();
    if (key && (QUALIFIERS as readonly string[]).includes(key)) {
      if (key === 'is' || key === 'state') {
        if (value === 'open' || value === 'closed' || value === 'all') out.state = value;
      } else if (key === 'label') labels.push(value);
      else if (key === 'sort') {
        const [sort, dir] = value.split('-');
        if (sort === 'created' || sort === 'updated' || sort === 'replies') out.sort = sort;
        if (dir === 'asc' || dir === 'desc') out.direction = dir;
      } else out[key as 'assignee' | 'milestone' | 'author' | 'mentioned'] = value;
    } else words.push(m[4] ?? m[0]);
  }
  if (labels.length) out.labels = [...new Set(labels.filter(Boolean))].join(',');
  if (words.length) out.q = words.join(' ');
  return out;
}

const quote = (v: string) => (/\s/.test(v) ? `"${v}"` : v);

/** The filters as the query box shows them. */
export function queryBoxText(f: ThreadFilters): string {
  const parts = [`is:${f.state ?? 'open'}`];
  for (const l of f.labels ? f.labels.split(',') : []) parts.push(`label:${quote(l)}`);
  if (f.assignee) parts.push(`assignee:${f.assignee}`);
  if (f.milestone) parts.push(`milestone:${f.milestone}`);
  if (f.author) parts.push(`author:${f.author}`);
  if (f.mentioned) parts.push(`mentioned:${f.mentioned}`);
  if (f.q) parts.push(f.q);
  return parts.join(' ');
}

/** The address's query values of some filters (empty ones left out). */
export function filterQuery(f: IssueQuery): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['state', 'labels', 'assignee', 'milestone', 'author', 'mentioned', 'q', 'sort', 'direction'] as const) {
    const v = f[k];
    if (v !== undefined && v !== '') out[k] = String(v);
  }
  return out;
}

/** The Issues tab's address with these filters. */
export function issuesHref(base: string, f: IssueQuery): string {
  const qs = new URLSearchParams(filterQuery(f)).toString();
  return qs ? `${base}/threads?${qs}` : `${base}/threads`;
}

/** A label's page address (`/labels/{name}/edit`). */
export const labelHref = (base: string, name: string): string => `${base}/labels/${seg(name)}`;
