import Ajv, { type Options } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

/**
 * Two validators: bodies are checked strictly (no type coercion, unknown properties rejected,
 * never stripped), while path, query and headers coerce text to the declared types, as they
 * can only be text on the wire.
 */
export function installValidators(app: FastifyInstance): void {
  const common: Options = { allErrors: false, strict: false, removeAdditional: false, useDefaults: true };
  const bodyAjv = addFormats.default(new Ajv.default({ ...common, coerceTypes: false }));
  const textAjv = addFormats.default(new Ajv.default({ ...common, coerceTypes: 'array' }));
  app.setValidatorCompiler(({ schema, httpPart }) =>
    httpPart === 'body' ? bodyAjv.compile(schema) : textAjv.compile(schema),
  );
}
