import { type TSchema, Type } from '@sinclair/typebox';

/** Shared schema pieces: one definition serves validation, serialization and OpenAPI. */

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC, milliseconds, Z' });
export const NullableTimestamp = Type.Unsafe<string | null>({
  type: ['string', 'null'],
  format: 'date-time',
  description: 'ISO 8601 UTC, or null',
});
export const NullableString = (opts: Record<string, unknown> = {}) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], ...opts });
export const NullableInteger = (opts: Record<string, unknown> = {}) =>
  Type.Unsafe<number | null>({ type: ['integer', 'null'], ...opts });

/**
 * A one-line name or title: no control characters (C0 including newlines and the ESC of ANSI
 * escapes, DEL, C1). Spread into a string schema; a value with one is 400.
 */
export const NoControl = {
  pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f]*$',
  description: 'no control characters (ANSI escapes, newlines, tabs, NUL)',
};

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'stable snake_case code' }),
    detail: Type.String({ description: 'human-readable sentence' }),
    conflict_paths: Type.Optional(Type.Unsafe<string[] | null>({ type: ['array', 'null'], items: { type: 'string' } })),
  },
  { additionalProperties: false, title: 'Error' },
);

export const Availability = Type.Object(
  { available: Type.Boolean(), suggestion: NullableString() },
  { additionalProperties: false },
);

export const PageQuery = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: '1-based page number; default 1' })),
  per_page: Type.Optional(Type.Integer({ minimum: 1, description: 'page size; default 30, larger values clamp to 100' })),
};

export const Page = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      results: Type.Array(item),
      next: NullableString({ description: 'URL of the next page, or null' }),
      previous: NullableString({ description: 'URL of the previous page, or null' }),
    },
    { additionalProperties: false },
  );

/** A body object that rejects unknown properties (docs/behaviour.md "Conventions"). */
export const StrictObject: typeof Type.Object = ((props: Parameters<typeof Type.Object>[0], opts = {}) =>
  Type.Object(props, { additionalProperties: false, ...opts })) as typeof Type.Object;

export const UserRef = Type.Object({ uuid: Type.String(), username: Type.String() }, { additionalProperties: false });
