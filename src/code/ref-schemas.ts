import { Type } from '@sinclair/typebox';
import { PageQuery } from '../http/schemas.ts';

export const Branch = Type.Object(
  {
    name: Type.String(),
    commit_sha: Type.String({ description: 'the tip commit' }),
    protected: Type.Boolean({ description: 'whether a branch protection matches the name (exact or glob)' }),
  },
  { additionalProperties: false },
);

export const Commit = Type.Object(
  {
    sha: Type.String(),
    message: Type.String({ description: 'the full message, trailing newlines removed' }),
    author_name: Type.String(),
    author_email: Type.String(),
    authored_at: Type.String({ description: 'ISO 8601 UTC' }),
  },
  { additionalProperties: false },
);

export const FileChange = Type.Object(
  {
    path: Type.String({ description: 'the new path of a renamed file' }),
    status: Type.Union([Type.Literal('added'), Type.Literal('modified'), Type.Literal('deleted'), Type.Literal('renamed')]),
    additions: Type.Integer({ description: 'lines added (0 for binary files)' }),
    deletions: Type.Integer({ description: 'lines deleted (0 for binary files)' }),
  },
  { additionalProperties: false },
);

export const ListQuery = Type.Object({ ...PageQuery });
