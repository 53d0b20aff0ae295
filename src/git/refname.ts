/**
 * Branch-name validation following `git check-ref-format --branch` (git-check-ref-format(1)),
 * so a name accepted here is one git itself would accept for `refs/heads/<name>`.
 */
const MAX_BRANCH_BYTES = 255;

// ASCII control characters (incl. DEL), space and the characters git reserves for revision
// syntax or globbing: ~ ^ : ? * [ \
// eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
const FORBIDDEN_CHARS = /[\u0000-\u0020\u007f~^:?*[\\]/;

export function isValidBranchName(name: string): boolean {
  if (name.length === 0 || Buffer.byteLength(name, 'utf8') > MAX_BRANCH_BYTES) return false;
  if (name === '@' || name === 'HEAD') return false;
  if (name.startsWith('-') || name.startsWith('/') || name.endsWith('/') || name.endsWith('.')) return false;
  if (name.includes('..') || name.includes('//') || name.includes('@{')) return false;
  if (FORBIDDEN_CHARS.test(name)) return false;
  for (const component of name.split('/')) {
    if (component.startsWith('.') || component.endsWith('.lock')) return false;
  }
  return true;
}
