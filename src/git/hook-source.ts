/**
 * The source of the pre-receive and post-receive hooks (CommonJS, run by this Node binary).
 * The server passes what they need in the environment of `git receive-pack`:
 * - `WEFT_PROTECTED`: JSON array of regular-expression sources of protected branches;
 * - `WEFT_QUOTA_LEFT`: bytes the repo may still grow by;
 * - `WEFT_READ_ONLY`: when set, why every push is refused (a pull mirror, an import in progress);
 * - `WEFT_PUSH_LOG`: the push's marker file (src/code/pushes.ts): once pre-receive accepts the
 *   push it appends the planned updates (`old new ref` lines) and syncs them, before any ref moves.
 * pre-receive runs before any ref moves, while the pushed objects still sit in git's quarantine
 * directory (`GIT_QUARANTINE_PATH`): a refusal drops them, so a refused push keeps nothing.
 * Its stderr reaches `git push` as `remote:` lines.
 */
export const HOOK_SOURCE = String.raw`'use strict';
const fs = require('fs');
const path = require('path');
const MAX_REFS = 1000;
const mode = path.basename(process.argv[1]);
const chunks = [];
process.stdin.on('data', (d) => chunks.push(d));
process.stdin.on('end', () => {
  const input = Buffer.concat(chunks).toString('utf8');
  if (mode === 'post-receive') return;
  const lines = input.split('\n').filter(Boolean).map((l) => l.split(' '));
  if (process.env.WEFT_READ_ONLY) {
    process.stderr.write(process.env.WEFT_READ_ONLY + '\n');
    process.exit(1);
  }
  const errors = [];
  if (lines.length > MAX_REFS) errors.push('a push may update at most ' + MAX_REFS + ' refs; this one updates ' + lines.length);
  let patterns = [];
  try {
    patterns = JSON.parse(process.env.WEFT_PROTECTED || '[]').map((s) => new RegExp(s, 'su'));
  } catch {
    errors.push('internal error reading the protection rules');
  }
  for (const [, , ref] of lines.slice(0, MAX_REFS)) {
    if (!ref.startsWith('refs/heads/') && !ref.startsWith('refs/tags/')) {
      errors.push(ref + ': only branches (refs/heads/) and tags (refs/tags/) can be pushed');
      continue;
    }
    if (ref.startsWith('refs/heads/')) {
      const branch = ref.slice('refs/heads/'.length);
      if (patterns.some((re) => re.test(branch))) {
        errors.push(branch + ': the branch is protected; changes reach it only by merging a pull request');
      }
    }
  }
  const left = Number(process.env.WEFT_QUOTA_LEFT);
  const quarantine = process.env.GIT_QUARANTINE_PATH;
  if (quarantine && Number.isFinite(left)) {
    const size = dirSize(quarantine);
    if (size > left) errors.push('the push needs ' + size + ' bytes but the repo quota leaves ' + left + ' bytes');
  }
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write('weft: ' + e + '\n');
    process.exit(1);
  }
  if (process.env.WEFT_PUSH_LOG) {
    const fd = fs.openSync(process.env.WEFT_PUSH_LOG, 'a');
    fs.writeSync(fd, lines.map((l) => l.join(' ') + '\n').join(''));
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
});
function dirSize(dir) {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += dirSize(p);
    else if (e.isFile()) total += fs.statSync(p).size;
  }
  return total;
}
`;
