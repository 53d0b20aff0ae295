import { Type } from '@sinclair/typebox';
import { PageQuery } from '../http/schemas.ts';

const RepoShort = Type.Object({ uuid: Type.String(), full_name: Type.String() }, { additionalProperties: false });

export const CodeQueryString = Type.Object(
  {
    q: Type.String({
      minLength: 1,
      maxLength: 1000,
      description:
        'A literal (3 characters or more) or `/regex/` (JavaScript syntax); may hold the qualifiers `repo:owner/slug`, ' +
        '`path:` (a prefix, or a glob with `*` and `?`) and `lang:`.',
    }),
    repo: Type.Optional(Type.String({ description: '`owner/slug`: only this repo (a fork too)' })),
    path: Type.Optional(Type.String({ description: 'a path prefix, or a glob (`*` matches any characters, `/` included)' })),
    lang: Type.Optional(Type.String({ description: 'a language as the results name it (`typescript`, `python`, ...)' })),
    case: Type.Optional(
      Type.Union([Type.Literal('sensitive'), Type.Literal('insensitive')], { description: 'default insensitive' }),
    ),
    forks: Type.Optional(Type.Boolean({ description: 'also search forks (without `repo:`, forks are left out)' })),
    after: Type.Optional(
      Type.String({
        maxLength: 4000,
        description:
          "a cursor from a page's `next` link: the page starts after the result it names (so a re-index between two " +
          'pages neither repeats nor skips a result); `page` then only numbers the page',
      }),
    ),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const CodeHit = Type.Object(
  {
    repo: RepoShort,
    path: Type.String(),
    language: Type.Union([Type.String(), Type.Null()]),
    commit_sha: Type.Union([Type.String(), Type.Null()], { description: 'the default-branch commit the index holds' }),
    blob_sha: Type.String(),
    matches: Type.Array(
      Type.Object(
        {
          line_number: Type.Integer({ description: '1-based' }),
          line: Type.String({ description: 'the line without its end of line, cut at 500 characters' }),
          ranges: Type.Array(Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 }), {
            description: '[start, end) of each match, in characters (code points) of `line`',
          }),
        },
        { additionalProperties: false },
      ),
      { description: 'the first 5 matching lines' },
    ),
    match_count: Type.Integer({ description: 'every match in the file' }),
  },
  { additionalProperties: false },
);

export const TextQueryString = Type.Object(
  { q: Type.String({ minLength: 1, maxLength: 1000 }), ...PageQuery },
  { additionalProperties: false },
);

export const CommitQueryString = Type.Object(
  {
    q: Type.String({ minLength: 1, maxLength: 1000 }),
    repo: Type.Optional(Type.String({ description: '`owner/slug`: only this repo' })),
    ...PageQuery,
  },
  { additionalProperties: false },
);

export const ThreadHit = Type.Object(
  {
    kind: Type.Union([Type.Literal('thread'), Type.Literal('pull')]),
    repo: RepoShort,
    number: Type.Integer(),
    title: Type.String(),
    state: Type.String({ description: 'open | closed (threads); open | closed | merged (pulls)' }),
    snippet: Type.String({ description: 'HTML: the best-matching text, escaped, the matched words in <mark>' }),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
);

export const CommitHit = Type.Object(
  {
    repo: RepoShort,
    sha: Type.String(),
    message: Type.String(),
    author_name: Type.String(),
    committed_at: Type.String(),
    snippet: Type.String({ description: 'HTML: the message, escaped, the matched words in <mark>' }),
  },
  { additionalProperties: false },
);

export const RepoHit = Type.Object(
  {
    uuid: Type.String(),
    full_name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    visibility: Type.String(),
    fork: Type.Boolean(),
    updated_at: Type.String(),
  },
  { additionalProperties: false },
);

export const SearchIndex = Type.Object(
  {
    commit_sha: Type.Union([Type.String(), Type.Null()]),
    state: Type.Union([Type.Literal('pending'), Type.Literal('indexing'), Type.Literal('ready'), Type.Literal('failed')]),
    files: Type.Integer(),
    bytes: Type.Integer(),
    updated_at: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);
