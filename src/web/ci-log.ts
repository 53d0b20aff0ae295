/**
 * A CI job's log as HTML (docs/ci.md "Pages"): ANSI colours rendered by `ansi_up` as classes
 * (the text escaped by it; any inline style it would write is dropped, as the CSP allows none),
 * each line linkable, the runner's `##[group]`/`##[endgroup]` markers made collapsible steps,
 * `[summary]` lines gathered as the step summary. Only a window of the log is rendered: the tail
 * of a large log first, earlier windows on demand, new lines while the job runs.
 */
import { AnsiUp } from 'ansi_up';
import { type Html, html, trusted } from './html.ts';

/** The bytes of log one page or one fragment shows at most. */
export const LOG_WINDOW = 256 * 1024;

/** Drops the inline styles ansi_up writes for bold, faint, italic, underline and 24-bit colours. */
function ansiHtml(text: string): string {
  const a = new AnsiUp();
  a.use_classes = true;
  a.escape_html = true;
  return a
    .ansi_to_html(text)
    .replace(/<span style="([^"]*)"(?: class="([^"]*)")?>/g, (_m, style: string, classes: string | undefined) => {
      const extra = [
        /font-weight:bold/.test(style) ? 'ansi-bold' : '',
        /font-style:italic/.test(style) ? 'ansi-italic' : '',
        /text-decoration:underline/.test(style) ? 'ansi-underline' : '',
      ].filter(Boolean);
      const all = [...(classes ? classes.split(' ') : []), ...extra];
      return all.length ? `<span class="${all.join(' ')}">` : '<span>';
    });
}

export interface LogLine {
  /** the line's byte offset in the log */
  offset: number;
  time: string;
  text: string;
}

/**
 * The whole lines of `data` (the log's bytes from `start`): a line cut by the window's start is
 * dropped unless `aligned` (the window starts at a line, as at 0 or where the last window stopped), one without its newline at the end is left for later. `next` is the
 * offset after the last whole line.
 */
export function logLines(data: Buffer, start: number, aligned = start === 0): { lines: LogLine[]; first: number; next: number } {
  let at = 0;
  if (!aligned) {
    const nl = data.indexOf(10);
    at = nl < 0 ? data.length : nl + 1;
  }
  const first = start + at;
  const lines: LogLine[] = [];
  while (at < data.length) {
    const nl = data.indexOf(10, at);
    if (nl < 0) break;
    const raw = data.subarray(at, nl).toString('utf8');
    const m = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) ?(.*)$/s.exec(raw);
    lines.push({ offset: start + at, time: m ? m[1]! : '', text: m ? m[2]! : raw });
    at = nl + 1;
  }
  return { lines, first, next: start + at };
}

/** The step summary (`[summary]` lines) of the lines shown, as Markdown text. */
export const summaryOf = (lines: LogLine[]): string =>
  lines
    .filter((l) => l.text.startsWith('[summary] ') || l.text === '[summary]')
    .map((l) => l.text.slice(10))
    .join('\n');

/** A line's anchor: `L{n}` when the window's line numbers are known (it starts at 0), else `B{byte offset}`. */
const anchor = (l: LogLine, n: number | null) => (n === null ? `B${l.offset}` : `L${n}`);

function lineHtml(l: LogLine, n: number | null): Html {
  const id = anchor(l, n);
  return html`<span class="log-line" id="${id}"
    ><a class="ln" href="#${id}" aria-label="Line ${n ?? `at byte ${l.offset}`}">${n ?? '·'}</a
    ><span class="lt">${trusted(ansiHtml(l.text))}</span></span
  >`;
}

/**
 * Lines as HTML, `##[group]` markers opening a collapsible step (open when its outcome is not
 * success, or while it runs). `firstNumber` is the first line's number, or null when unknown.
 */
export function logHtml(lines: LogLine[], firstNumber: number | null): Html {
  const out: Html[] = [];
  let group: { name: string; lines: Html[] } | null = null;
  const close = (outcome: string | null) => {
    if (!group) return;
    const failed = outcome !== 'success';
    out.push(
      html`<details class="log-step" ${failed ? html`open` : ''}${outcome === null ? html` data-open-group` : ''}>
        <summary>
          ${group.name}${outcome ? html` <span class="badge ${failed ? 'failure' : 'success'}">${outcome}</span>` : ''}
        </summary>
        <pre class="log">${group.lines}</pre>
      </details>`,
    );
    group = null;
  };
  let plain: Html[] = [];
  const flushPlain = () => {
    if (plain.length) out.push(html`<pre class="log">${plain}</pre>`);
    plain = [];
  };
  lines.forEach((l, i) => {
    const n = firstNumber === null ? null : firstNumber + i;
    if (l.text.startsWith('##[group]')) {
      flushPlain();
      close(null);
      group = { name: l.text.slice(9), lines: [lineHtml(l, n)] };
      return;
    }
    if (l.text.startsWith('##[endgroup]') && group) {
      (group as { lines: Html[] }).lines.push(lineHtml(l, n));
      close(l.text.slice(12).trim() || 'success');
      return;
    }
    if (group) (group as { lines: Html[] }).lines.push(lineHtml(l, n));
    else plain.push(lineHtml(l, n));
  });
  flushPlain();
  close(null);
  return html`${out}`;
}
