/**
 * Git branch-name rules, as `git check-ref-format --branch NAME` applies them (the name is
 * checked as `refs/heads/NAME`). Standalone on purpose: repos (default_branch), protections
 * (branch patterns) and pulls (source/target branches) all validate with it.
 */

/** Longest branch name or pattern we accept, in UTF-8 bytes (git has no limit; file systems do). */
export const MAX_BRANCH_NAME_LENGTH = 255;

// ASCII control characters, DEL, space and the characters git forbids anywhere in a ref name.
// eslint-disable-next-line no-control-regex -- control characters are what this rejects
const FORBIDDEN_CHARS = /[\u0000-\u0020\u007f~^:?*[\\]/;

/**
 * Whether `name` is a valid git branch name:
 * - no control characters, space, `~ ^ : ? * [ \`;
 * - no `..`, no `@{`, not `@` alone;
 * - does not begin with `-` or `/`, does not end with `/` or `.`, no `//`;
 * - no path component begins with `.` or ends with `.lock`;
 * - not `HEAD`;
 * - at most 255 characters.
 */
export function isValidBranchName(name: string): boolean {
  if (name.length === 0 || Buffer.byteLength(name, 'utf8') > MAX_BRANCH_NAME_LENGTH) return false;
  if (FORBIDDEN_CHARS.test(name)) return false;
  if (name.includes('..') || name.includes('@{') || name === '@') return false;
  if (name.startsWith('-') || name === 'HEAD') return false;
  if (name.endsWith('.')) return false;
  for (const component of name.split('/')) {
    // catches a leading or trailing slash and `//` too (empty components)
    if (component.length === 0) return false;
    if (component.startsWith('.') || component.endsWith('.lock')) return false;
  }
  return true;
}

/**
 * Whether `pattern` is a valid branch-protection pattern: an exact branch name, or a glob where
 * `*` and `?` stand for any characters (`release/*`, `hotfix-?`). Apart from the glob
 * characters it must follow the branch-name rules, so `[` classes and white space are refused.
 */
export function isValidBranchPattern(pattern: string): boolean {
  if (pattern.length === 0 || pattern.length > MAX_BRANCH_NAME_LENGTH) return false;
  // Each glob character stands in for an ordinary one; whatever else is there must be legal.
  const asName = pattern.replace(/[*?]/g, 'x');
  return isValidBranchName(asName);
}

export const isGlobPattern = (pattern: string): boolean => /[*?]/.test(pattern);

const globCache = new Map<string, RegExp>();

/** A protection glob as a regular expression (cached: patterns repeat on every pull check). */
export function globToRegExp(pattern: string): RegExp {
  let re = globCache.get(pattern);
  if (re) return re;
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      source += '.*';
      while (pattern[i + 1] === '*') i++;
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\/]/g, '\\$&');
  }
  re = new RegExp(`^${source}$`, 'su');
  if (globCache.size > 1000) globCache.clear();
  globCache.set(pattern, re);
  return re;
}

/**
 * Whether `branch` matches a protection pattern, with GitHub's fnmatch-style rules: `*` matches
 * any run of characters except `/`, `**` any run including `/`, `?` one character except `/`;
 * everything else literally. A pattern without glob characters matches only itself.
 */
export function branchMatchesPattern(pattern: string, branch: string): boolean {
  return isGlobPattern(pattern) ? globToRegExp(pattern).test(branch) : pattern === branch;
}
