/**
 * Git LFS pointer files (docs/lfs.md): what git stores in place of a large file's content,
 * `version https://git-lfs.github.com/spec/v1`, `oid sha256:<hex>`, `size <bytes>`.
 */

/** The longest a pointer file is (the spec's own limit is 1024 bytes). */
export const MAX_POINTER_BYTES = 1024;

export const OID_RE = /^[0-9a-f]{64}$/;

export interface LfsPointer {
  oid: string;
  size: number;
}

/** The object a pointer file names, or null when the bytes are no pointer. */
export function parsePointer(bytes: Buffer): LfsPointer | null {
  if (bytes.length > MAX_POINTER_BYTES || bytes.includes(0)) return null;
  const text = bytes.toString('utf8');
  if (
    !text.startsWith('version https://git-lfs.github.com/spec/v1\n') &&
    !text.startsWith('version https://hawser.github.com/spec/v1\n')
  )
    return null;
  const oid = /^oid sha256:([0-9a-f]{64})$/m.exec(text)?.[1];
  const size = /^size (0|[1-9][0-9]{0,15})$/m.exec(text)?.[1];
  if (!oid || size === undefined) return null;
  return { oid, size: Number(size) };
}
