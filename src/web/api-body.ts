import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Static, TSchema } from '@sinclair/typebox';
import { badRequest } from '../errors.ts';

/** Bodies are checked as the API checks them (src/http/validation.ts: strict, no coercion). */
const ajv = addFormats.default(new Ajv.default({ allErrors: false, strict: false, removeAdditional: false, coerceTypes: false }));
const compiled = new WeakMap<TSchema, ValidateFunction>();

/**
 * A form's input checked against the API route's own body schema (README "Web interface": a page
 * takes exactly what the API takes), or 400 with a detail that names the field first, so the form
 * shows it beside that field.
 */
export function apiBody<S extends TSchema>(schema: S, input: unknown): Static<S> {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  if (!validate(input)) {
    const e = validate.errors?.[0];
    const name = e?.instancePath.replace(/^\//, '').split('/')[0] || (e?.params as { missingProperty?: string })?.missingProperty;
    throw badRequest(`${name ?? 'The form'} ${e?.message ?? 'is not valid'}.`);
  }
  return input as Static<S>;
}
