import type Ajv from 'ajv';
import type { ErrorObject, Options, ValidateFunction } from 'ajv';
import type addFormats from 'ajv-formats';
import type { FastifyInstance, FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import { lazyRequire } from '../lazy-require.ts';

// Ajv loads with the first validator compiled (the first request with a schema).
const ajvModule = lazyRequire<typeof Ajv>('ajv');
const ajvFormats = lazyRequire<typeof addFormats>('ajv-formats');

/** How an integer must look on the wire (query string, path): decimal digits, maybe a minus. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

function declaresInteger(schema: unknown): boolean {
  const type = (schema as { type?: unknown } | null)?.type;
  return type === 'integer' || (Array.isArray(type) && type.includes('integer'));
}

/**
 * Ajv's type coercion turns any text JavaScript reads as a number into one: "0x10" is 16,
 * "1e2" is 100, " 1" and "+1" are 1, "Infinity" passes as an integer. Text parameters declared
 * as integers must be plain decimal integers (docs/behaviour.md "Conventions": not an integer is 400), so they are
 * checked as text before Ajv coerces them.
 */
function withDecimalIntegers(schema: unknown, validate: ValidateFunction): ValidateFunction {
  const properties = (schema as { properties?: Record<string, unknown> } | null)?.properties ?? {};
  const integers = Object.keys(properties).filter((name) => declaresInteger(properties[name]));
  if (integers.length === 0) return validate;
  const wrapped = ((data: unknown, ...rest: unknown[]) => {
    if (data !== null && typeof data === 'object') {
      for (const name of integers) {
        const raw = (data as Record<string, unknown>)[name];
        for (const value of Array.isArray(raw) ? raw : [raw]) {
          if (typeof value === 'string' && !DECIMAL_INTEGER.test(value)) {
            const error: ErrorObject = {
              instancePath: `/${name}`,
              schemaPath: `#/properties/${name}/type`,
              keyword: 'type',
              params: { type: 'integer' },
              message: 'must be a decimal integer',
            };
            wrapped.errors = [error];
            return false;
          }
        }
      }
    }
    const ok = (validate as (...args: unknown[]) => boolean)(data, ...rest);
    wrapped.errors = validate.errors;
    return ok;
  }) as ValidateFunction;
  // Fastify passes the parent object (so Ajv may coerce the root) only to Ajv functions.
  Object.assign(wrapped, { schema: validate.schema, schemaEnv: validate.schemaEnv });
  return wrapped;
}

/**
 * A validator that compiles its schema on its first call (Ajv's compilation of every route's
 * schemas was a large part of the server's start-up). It carries `schemaEnv` so that Fastify
 * passes it the parent object, as it does to Ajv's own functions, and its `errors` are those of
 * the compiled function's last call.
 */
function lazyValidator(compile: () => ValidateFunction): ValidateFunction {
  let validate: ValidateFunction | null = null;
  const lazy = ((...args: unknown[]) => {
    validate ??= compile();
    const ok = (validate as (...a: unknown[]) => boolean)(...args);
    lazy.errors = validate.errors;
    return ok;
  }) as ValidateFunction;
  Object.assign(lazy, { schemaEnv: true });
  return lazy;
}

/**
 * Two validators: bodies are checked strictly (no type coercion, unknown properties rejected,
 * never stripped), while path, query and headers coerce text to the declared types, as they
 * can only be text on the wire (integers only from plain decimal digits). Each route's
 * validators compile on first use; Ajv itself is set up on the first compilation.
 */
const common: Options = { allErrors: false, strict: false, removeAdditional: false, useDefaults: true };
let bodyAjv: InstanceType<typeof Ajv.default> | null = null;
let textAjv: InstanceType<typeof Ajv.default> | null = null;
const newAjv = (options: Options) => ajvFormats().default(new (ajvModule().default)({ ...common, ...options }));

/** Weft's validator compiler (installValidators sets it; app.ts also hands it to Fastify's schema controller). */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) =>
  httpPart === 'body'
    ? lazyValidator(() => (bodyAjv ??= newAjv({ coerceTypes: false })).compile(schema as object))
    : lazyValidator(() => withDecimalIntegers(schema, (textAjv ??= newAjv({ coerceTypes: 'array' })).compile(schema as object)));

type ValidatorFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator'];

/**
 * For Fastify's schema controller: without it Fastify loads its own Ajv compiler (and Ajv) when
 * the server starts, although installValidators replaces it.
 */
export const validatorFactory = (() => validatorCompiler) as unknown as ValidatorFactory;

export function installValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler);
}
