import { Type } from '@sinclair/typebox';
export { checkBody } from './api-body.ts';
import { type FormState, emptyForm } from './forms.ts';
import { type Html, html } from './html.ts';

/**
 * What the settings pages share (README "Web interface"): a form post's body (any fields, as
 * text), the API's own body check with the API's wording, the settings tabs, confirmations.
 */

/** A settings form's body: text fields (checkbox groups may repeat a name); each form reads its own. */
export const FormBody = Type.Object(
  {},
  {
    additionalProperties: Type.Union([
      Type.String({ maxLength: 70_000 }),
      Type.Array(Type.String({ maxLength: 70_000 }), { maxItems: 100 }),
    ]),
  },
);
export type FormFields = Record<string, string | string[] | undefined>;

/** One posted value as text ('' when absent; the first of a repeated name). */
export const text = (body: FormFields, name: string): string => {
  const v = body[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
};

/** A checkbox group's values (a name posted zero, one or many times). */
export const many = (body: FormFields, name: string): string[] => {
  const v = body[name];
  return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x) => x !== '' && x !== 'off');
};

/** A textarea's non-blank lines (commas also separate). */
export const lines = (value: string): string[] =>
  value
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter(Boolean);

/** Form states of one page, by form name (absent: the form as loaded). */
export type States = Record<string, FormState | undefined>;
export const stateOf = (states: States, name: string): FormState => states[name] ?? emptyForm();
/** The status a page answers with: the refused form's, else 200. */
export const statusOf = (states: States): number => Object.values(states).find((s) => s && s.status !== 200)?.status ?? 200;

/** A settings area's tabs. */
export function tabs(label: string, items: ReadonlyArray<readonly [string, string]>, current: string): Html {
  return html`<nav class="tabs" aria-label="${label}">
    ${items.map(([href, name]) => html`<a href="${href}" ${href === current ? html` aria-current="page"` : ''}>${name}</a>`)}
  </nav>`;
}

/**
 * A destructive action that asks first, without JavaScript: the button opens a disclosure with
 * the confirming button in it (two clicks; a typed confirmation is dangerForm's).
 */
export function confirmButton(o: { action: string; csrf: string; label: string; question: string; fields?: Html }): Html {
  return html`<details class="confirm">
    <summary>${o.label}&hellip;</summary>
    <form method="post" action="${o.action}" class="row">
      <input type="hidden" name="_csrf" value="${o.csrf}" />${o.fields ?? ''} <span>${o.question}</span>
      <button type="submit" class="danger">${o.label}</button>
    </form>
  </details>`;
}
