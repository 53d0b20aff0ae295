import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';
import { DIALECTS, type DialectName } from './helpers.ts';

/**
 * Real Chromium for the web interface's tests (README "Web interface"): Debian's `chromium`
 * package (.ci/run installs it when missing), driven by playwright-core. One browser per test
 * file; a context per signed-in person.
 */
export const CHROMIUM = process.env.WEFT_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS, timeout: 60_000 });
}

/** A context whose page is `width` px wide (a phone's 375 by default for every page test). */
export async function newPage(browser: Browser, width = 375): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width, height: 800 } });
  context.setDefaultTimeout(30_000);
  const page = await context.newPage();
  watchCsp(page);
  return { context, page };
}

const cspReports = new WeakMap<Page, string[]>();
/** Collects the page's Content-Security-Policy violations (checkPage asserts there are none). */
export function watchCsp(page: Page): void {
  const seen: string[] = [];
  cspReports.set(page, seen);
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) seen.push(msg.text());
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core'), 'utf8');

/**
 * axe-core on the page as it is: no serious or critical violation. axe is evaluated through the
 * DevTools protocol: the pages' Content-Security-Policy refuses an injected inline script tag.
 */
export async function assertAccessible(page: Page, what: string): Promise<void> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run: (
            ctx: unknown,
            opts: unknown,
          ) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }>;
        };
      }
    ).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.slice(0, 3).map((n) => n.target))}`);
  });
  assert.deepEqual(violations, [], `axe on ${what}`);
}

/** Usable at the page's width: nothing makes the page itself scroll sideways. */
export async function assertFitsWidth(page: Page, what: string): Promise<void> {
  const { scroll, width } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    width: window.innerWidth,
  }));
  assert.ok(scroll <= width + 1, `${what}: the page is ${scroll}px wide in a ${width}px window`);
}

/** Both checks every page gets. */
export async function checkPage(page: Page, what: string): Promise<void> {
  assert.deepEqual(cspReports.get(page) ?? [], [], `${what}: no Content-Security-Policy violation`);
  await assertAccessible(page, what);
  await assertFitsWidth(page, what);
}

/** Signs in through the sign-in form. */
export async function signInPage(page: Page, base: string, username: string, password: string): Promise<void> {
  await page.goto(`${base}/login`);
  await page.fill('#username', username);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL(`${base}/`), page.click('button[type=submit].primary')]);
}

/**
 * The databases the Chromium tests run on: every one of DIALECTS, or only those named in
 * WEFT_BROWSER_DATABASES (comma-separated). `.ci/run` sets `sqlite`: the pages' data paths run
 * on PostgreSQL in the HTTP tests, and the browser half on PostgreSQL cost CI about 5 minutes of
 * its 45 on a 2-core machine (README "Tests").
 */
export const BROWSER_DIALECTS: DialectName[] = process.env.WEFT_BROWSER_DATABASES
  ? DIALECTS.filter((d) => process.env.WEFT_BROWSER_DATABASES!.split(',').includes(d))
  : DIALECTS;
