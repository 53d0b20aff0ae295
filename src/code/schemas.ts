import { Type } from '@sinclair/typebox';
import { NullableString, PageQuery, StrictObject } from '../http/schemas.ts';

/** Schemas of the code-reading routes (README "Reading code"). */

const Sha = Type.String({ description: 'a full commit or object sha (40 hex digits)' });

export const Person = Type.Object(
  {
    name: Type.String(),
    email: Type.String(),
    date: Type.String({ description: 'ISO 8601 UTC' }),
  },
  { additionalProperties: false },
);

export const CodeCommit = Type.Object(
  {
    sha: Sha,
    message: Type.String({ description: 'the full message, trailing newlines removed' }),
    author: Person,
    committer: Person,
    parents: Type.Array(Sha),
  },
  { additionalProperties: false },
);

export const DiffFile = Type.Object(
  {
    path: Type.String({ description: 'the new path of a renamed file' }),
    previous_path: NullableString({ description: 'the old path of a renamed file, else null' }),
    status: Type.Union([Type.Literal('added'), Type.Literal('modified'), Type.Literal('deleted'), Type.Literal('renamed')]),
    additions: Type.Integer({ description: 'lines added (0 for binary files)' }),
    deletions: Type.Integer({ description: 'lines deleted (0 for binary files)' }),
    binary: Type.Boolean(),
    patch: NullableString({
      description: 'the unified diff hunks of this file; null for binary files, for mode-only changes, and past 256 KiB',
    }),
    patch_truncated: Type.Optional(Type.Boolean({ description: 'present and true when the patch was left out for its size' })),
  },
  { additionalProperties: false },
);

const Stats = Type.Object(
  { additions: Type.Integer(), deletions: Type.Integer(), total: Type.Integer() },
  { additionalProperties: false },
);

export const CommitDetail = Type.Object(
  {
    ...CodeCommit.properties,
    stats: Stats,
    files: Type.Array(DiffFile, {
      description: 'against the first parent (a root commit: the empty tree), by path; at most 3,000',
    }),
    files_truncated: Type.Boolean(),
  },
  { additionalProperties: false },
);

export const Comparison = Type.Object(
  {
    base_sha: Sha,
    head_sha: Sha,
    merge_base_sha: NullableString({ description: 'null when the two have no common ancestor' }),
    status: Type.Union([Type.Literal('identical'), Type.Literal('ahead'), Type.Literal('behind'), Type.Literal('diverged')]),
    ahead_by: Type.Integer({ description: 'commits of head not in base' }),
    behind_by: Type.Integer({ description: 'commits of base not in head' }),
    commits: Type.Array(CodeCommit, { description: 'commits of head not in base, oldest first; at most 250' }),
    commits_truncated: Type.Boolean(),
    files: Type.Array(DiffFile, { description: 'changes from the merge base to head, by path; at most 3,000' }),
    files_truncated: Type.Boolean(),
  },
  { additionalProperties: false },
);

const EntryType = Type.Union([Type.Literal('file'), Type.Literal('dir'), Type.Literal('symlink'), Type.Literal('submodule')]);

export const DirEntry = Type.Object(
  {
    type: EntryType,
    name: Type.String(),
    path: Type.String(),
    sha: Sha,
    size: Type.Unsafe<number | null>({ type: ['integer', 'null'], description: 'bytes, files only' }),
    mode: Type.String({ description: "git's file mode: 100644, 100755, 040000, 120000 or 160000" }),
  },
  { additionalProperties: false },
);

/** One object for the four kinds (a union would cost every response a slower serializer). */
export const Contents = Type.Object(
  {
    type: EntryType,
    name: Type.String({ description: '"" for the root' }),
    path: Type.String({ description: '"" for the root' }),
    sha: Type.String({ description: 'the blob, tree or (submodule) commit' }),
    size: Type.Optional(Type.Integer({ description: 'file: bytes' })),
    encoding: Type.Optional(Type.Literal('base64', { description: 'file' })),
    content: Type.Optional(NullableString({ description: 'file: base64 of the bytes; null above 1 MiB (use raw)' })),
    truncated: Type.Optional(Type.Boolean({ description: 'file: true when content is null for its size' })),
    entries: Type.Optional(Type.Array(DirEntry, { description: 'dir: every entry, sorted by name in byte order' })),
    target: Type.Optional(Type.String({ description: 'symlink: where it points' })),
  },
  { additionalProperties: false },
);

export const Tag = Type.Object(
  {
    name: Type.String(),
    commit_sha: Type.String({ description: 'the commit the tag points at (peeled)' }),
    message: NullableString({ description: 'an annotated tag’s message, else null' }),
    tagger: Type.Union([Person, Type.Null()], { description: 'an annotated tag’s tagger, else null' }),
  },
  { additionalProperties: false },
);

export const CommitsQuery = Type.Object({
  ...PageQuery,
  ref: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1024, description: 'branch, tag or sha; default the default branch' }),
  ),
  path: Type.Optional(Type.String({ maxLength: 4096, description: 'only commits that touched this path' })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'inclusive lower bound on the committer date' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'inclusive upper bound on the committer date' })),
});

export const RefQuery = Type.Object({
  ref: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1024, description: 'branch, tag or sha; default the default branch' }),
  ),
});

export const TagsQuery = Type.Object({ ...PageQuery });

export const CreateBranchBody = StrictObject({
  name: Type.String({ minLength: 1, maxLength: 255, description: 'a valid git branch name' }),
  from: Type.Optional(
    Type.String({ minLength: 1, maxLength: 1024, description: 'branch, tag or sha; default the default branch' }),
  ),
});

export const Wildcard = { '*': Type.String({ description: 'the rest of the path (may hold `/`)' }) };
