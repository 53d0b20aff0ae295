import { Type } from '@sinclair/typebox';
import { type Html, html } from './html.ts';
import type { PageCaller } from './context.ts';
import { layout } from './layout.ts';
import { checked, typedValues } from './forms.ts';

export type AdminTab = 'users' | 'invites' | 'rate-limits' | 'settings' | 'hooks' | 'sources' | 'two-factor' | 'runners';

const TABS: ReadonlyArray<readonly [AdminTab, string, string]> = [
  ['users', 'Users', '/admin/users'],
  ['invites', 'Signup invites', '/admin/invites'],
  ['rate-limits', 'Rate limits', '/admin/rate-limits'],
  ['settings', 'Site settings', '/admin/settings'],
  ['hooks', 'Site hooks', '/admin/hooks'],
  ['sources', 'Sign-in sources', '/admin/auth-sources'],
  ['two-factor', 'Two-factor', '/admin/two-factor'],
  ['runners', 'Site runners', '/admin/runners'],
];

/**
 * A staff page (README "Web interface"): the staff tabs above its content. Who may see each page
 * is decided by the service it reads (staff only, 403 to others, as the API's staff routes).
 */
export function adminPage(c: PageCaller, tab: AdminTab, title: string, body: Html): Html {
  return layout(
    { title: `${title} · Staff`, caller: c },
    html`<p class="crumbs"><a href="/admin">Staff</a> /</p>
      <h1>${title}</h1>
      <nav class="tabs" aria-label="Staff pages">
        ${TABS.map(([name, label, href]) => html`<a href="${href}" ${name === tab ? html` aria-current="page"` : ''}>${label}</a>`)}
      </nav>
      ${body}`,
  );
}

export const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
export const Text = (max: number) => Type.Optional(Type.String({ maxLength: max }));
export const Check = Type.Optional(
  Type.Union([Type.String({ maxLength: 5 }), Type.Array(Type.String({ maxLength: 5 }), { maxItems: 2 })]),
);
export const PageNumber = Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 }));
export const UsernameParam = Type.Object({ username: Type.String({ minLength: 1, maxLength: 100 }) });
export const UuidParams = Type.Object({ uuid: Type.String({ minLength: 1, maxLength: 100 }) });

/** What the user typed, a checkbox (posted as ["off", "on"] when ticked) as "on" or "off". */
export function typedForm(body: unknown): Record<string, string> {
  const values = typedValues(body);
  for (const [k, v] of Object.entries((body ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(v)) values[k] = checked(v) ? 'on' : 'off';
  }
  return values;
}
