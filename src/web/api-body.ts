import type { Static, TSchema } from '@sinclair/typebox';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyError } from 'fastify';
import { AppError } from '../errors.ts';
import { validationDetail } from '../http/error-handler.ts';

/** Bodies are checked as the API checks them (src/http/validation.ts: strict, no coercion). */
const ajv = addFormats.default(
  new Ajv.default({ allErrors: false, strict: false, removeAdditional: false, useDefaults: false, coerceTypes: false }),
);
const compiled = new WeakMap<TSchema, ValidateFunction>();

/**
 * A form's input checked against the API route's own body schema, as the API does before it calls
 * the service (README "Web interface": a page takes exactly what the API takes): refused with the
 * API's 400 and its detail ("body.email must match format …"), so the page shows the same words
 * beside the field (forms.ts finds the field named in the detail).
 */
export function checkBody(schema: TSchema, input: unknown): void {
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = ajv.compile(schema)));
  if (validate(input)) return;
  const detail = validationDetail({
    validation: validate.errors as FastifyError['validation'],
    validationContext: 'body',
    message: 'The form is not valid.',
  });
  throw new AppError(400, 'invalid_request', detail);
}

/** `checkBody`, then the input typed as the schema's. */
export function apiBody<S extends TSchema>(schema: S, input: unknown): Static<S> {
  checkBody(schema, input);
  return input as Static<S>;
}
