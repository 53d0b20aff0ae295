/** Booleans as stored: 0/1 integers on both dialects (db/types.ts). */
export type Bool01 = 0 | 1;
