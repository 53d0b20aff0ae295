import { AppError } from '../errors.ts';
import { type Html, html } from './html.ts';
import { inWords } from './words.ts';

/**
 * Forms of the settings and staff pages (README "Web interface"): each field renders with its
 * label, the value the user typed, and — when the service refused the form — the API's error
 * `detail` beside the field it concerns (`aria-invalid`, `aria-describedby`), or above the form
 * when it concerns no single field. Every form works without JavaScript: a refused post answers
 * the same page again with the status of the API's error, the typed values kept.
 */
export interface FormState {
  /** what the user typed, by field name (passwords and secrets are never echoed back) */
  values: Record<string, string>;
  /** the error detail beside a field, by field name */
  errors: Record<string, string>;
  /** an error that concerns the whole form */
  message?: string;
  /** the API error code of the refusal, shown with the message */
  code?: string;
  /** the HTTP status the page answers with */
  status: number;
}

export const emptyForm = (values: Record<string, string> = {}): FormState => ({ values, errors: {}, status: 200 });

/** Strings of a parsed urlencoded body (arrays and other values dropped; secrets dropped by `secret`). */
export function typedValues(
  body: unknown,
  secret: string[] = ['password', 'current_password', 'new_password', 'secret'],
): Record<string, string> {
  const out: Record<string, string> = {};
  if (body && typeof body === 'object') {
    for (const [k, v] of Object.entries(body)) {
      if (k === '_csrf' || secret.includes(k)) continue;
      if (typeof v === 'string') out[k] = v;
    }
  }
  return out;
}

/**
 * The field an API error concerns: the first of `fields` named in its detail as a whole word
 * (the API's details name the field: "username must be…", "Email … is taken"), else none.
 */
export function fieldOf(err: AppError, fields: readonly string[]): string | undefined {
  const detail = err.detail.toLowerCase();
  for (const f of fields) {
    const words = [f, f.replace(/_/g, ' ')];
    if (words.some((w) => new RegExp(`(^|[^a-z_])${w.toLowerCase()}([^a-z_]|$)`).test(detail))) return f;
  }
  return undefined;
}

/** A refused form as state: the error beside its field or above the form, the typed values kept. */
export function refused(err: AppError, values: Record<string, string>, fields: readonly string[]): FormState {
  const f = fieldOf(err, fields);
  return {
    values,
    errors: f ? { [f]: err.detail } : {},
    message: f ? undefined : err.detail,
    code: err.code,
    status: err.status,
  };
}

/**
 * Runs a form's service call: its result, or (an AppError of status 4xx) the form state to render
 * again. Anything else is thrown on to the error page.
 */
export async function attempt<T>(
  values: Record<string, string>,
  fields: readonly string[],
  run: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; state: FormState }> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (err instanceof AppError && err.status >= 400 && err.status < 500 && err.status !== 404 && err.status !== 401) {
      return { ok: false, state: refused(err, values, fields) };
    }
    throw err;
  }
}

/** The message of a form-level refusal, announced to screen readers. */
export function formMessage(state: FormState | undefined): Html {
  if (!state?.message) return html``;
  return html`<p class="error" role="alert">${inWords(state.message)}</p>`;
}

export interface FieldOptions {
  name: string;
  label: string;
  type?: 'text' | 'email' | 'password' | 'number' | 'url' | 'textarea' | 'select' | 'checkbox';
  /** the value when the form was not posted yet */
  value?: string | number | boolean | null;
  required?: boolean;
  hint?: string;
  autocomplete?: string;
  /** for selects: value → label */
  options?: ReadonlyArray<readonly [string, string]>;
  maxlength?: number;
  /** extra id prefix when a page shows the same form more than once */
  idPrefix?: string;
  /** a Markdown text area not named `body`: gets the Preview button too (docs/web.md "Markdown") */
  markdown?: boolean;
}

/** One labelled field: the typed value kept, the error (if any) beside it. */
export function field(state: FormState | undefined, o: FieldOptions): Html {
  const id = `${o.idPrefix ?? 'f'}-${o.name}`;
  const error = state?.errors[o.name];
  const typed = state?.values[o.name];
  const value = o.type === 'password' ? '' : (typed ?? (o.value === null || o.value === undefined ? '' : String(o.value)));
  const described = [error ? `${id}-error` : '', o.hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  const aria = html`${error ? html` aria-invalid="true"` : ''}${described ? html` aria-describedby="${described}"` : ''}`;
  const req = o.required ? html` required` : '';
  const max = o.maxlength ? html` maxlength="${o.maxlength}"` : '';
  const auto = o.autocomplete ? html` autocomplete="${o.autocomplete}"` : '';
  let control: Html;
  if (o.type === 'textarea') {
    const md = o.markdown ? html` data-markdown` : '';
    control = html`<textarea id="${id}" name="${o.name}" ${req}${max}${aria}${md}>${value}</textarea>`;
  } else if (o.type === 'select') {
    control = html`<select id="${id}" name="${o.name}" ${req}${aria}>
      ${(o.options ?? []).map(([v, l]) => html`<option value="${v}" ${v === value ? html` selected` : ''}>${l}</option>`)}
    </select>`;
  } else if (o.type === 'checkbox') {
    // A checkbox posts "on" when ticked; the hidden field before it posts "off" otherwise.
    const checked = typed !== undefined ? typed === 'on' || typed === 'true' : o.value === true || o.value === 'true';
    return html`<div class="check">
      <input type="hidden" name="${o.name}" value="off" />
      <input id="${id}" name="${o.name}" type="checkbox" value="on" ${checked ? html` checked` : ''}${aria} />
      <label for="${id}">${o.label}</label>
      ${o.hint ? html`<small id="${id}-hint" class="muted">${o.hint}</small>` : ''}
      ${error ? html`<p id="${id}-error" class="field-error" role="alert">${inWords(error)}</p>` : ''}
    </div>`;
  } else {
    control = html`<input id="${id}" name="${o.name}" type="${o.type ?? 'text'}" value="${value}" ${req}${max}${auto}${aria} />`;
  }
  return html`<label for="${id}">${o.label}</label> ${control}
    ${o.hint ? html`<small id="${id}-hint" class="muted">${o.hint}</small>` : ''}
    ${error ? html`<p id="${id}-error" class="field-error" role="alert">${inWords(error)}</p>` : ''}`;
}

/** A checkbox's posted value as a boolean ("on"/"true" → true, "off"/absent → false). */
export const checked = (v: unknown): boolean => v === 'on' || v === 'true' || (Array.isArray(v) && v.includes('on'));

/**
 * A destructive action's button: the form asks the user to type `confirmWith` (a repo's or
 * team's name) before it is sent; the server checks the typed value again (no JavaScript needed).
 */
export function dangerForm(o: {
  action: string;
  csrf: string;
  label: string;
  confirmWith?: string;
  state?: FormState;
  idPrefix?: string;
}): Html {
  return html`<form method="post" action="${o.action}" class="stack danger">
    <input type="hidden" name="_csrf" value="${o.csrf}" />
    ${
      o.confirmWith
        ? field(o.state, {
            name: 'confirm',
            label: `Type ${o.confirmWith} to confirm`,
            required: true,
            idPrefix: o.idPrefix ?? 'danger',
            autocomplete: 'off',
          })
        : ''
    }
    <div><button type="submit" class="danger">${o.label}</button></div>
  </form>`;
}

/**
 * The hidden `tz` field of a form with an expiry: the browser's time zone (weft.js fills it in;
 * without JavaScript it stays empty and a plain date is read in UTC).
 */
export const tzField = (): Html => html`<input type="hidden" name="tz" value="" data-tz />`;

/** The hint of an expiry field. */
export const EXPIRY_HINT = 'A date such as 2030-01-31 (the end of that day in your time zone) or an ISO 8601 time.';
