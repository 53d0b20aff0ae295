import { Type } from '@sinclair/typebox';
import { NullableTimestamp, StrictObject, Timestamp, UserRef } from '../http/schemas.ts';

export const Asset = Type.Object(
  {
    uuid: Type.String(),
    name: Type.String(),
    size: Type.Integer({ description: 'bytes' }),
    content_type: Type.String(),
    download_count: Type.Integer(),
    created_at: Timestamp,
    url: Type.String({ description: 'GET it to download the bytes (counted)' }),
  },
  { additionalProperties: false, title: 'ReleaseAsset' },
);

export const Release = Type.Object(
  {
    uuid: Type.String(),
    tag_name: Type.String(),
    target_commitish: Type.String({ description: 'the branch, tag or sha the tag was (or will be) created at' }),
    name: Type.String(),
    body: Type.String({ description: 'Markdown notes' }),
    draft: Type.Boolean(),
    prerelease: Type.Boolean(),
    author: UserRef,
    created_at: Timestamp,
    published_at: NullableTimestamp,
    assets: Type.Array(Asset),
  },
  { additionalProperties: false, title: 'Release' },
);

const TagName = Type.String({ minLength: 1, maxLength: 255, description: 'a valid git tag name' });
const fields = {
  target_commitish: Type.Optional(
    Type.String({ minLength: 1, maxLength: 255, description: 'branch, tag or sha for a new tag; default the default branch' }),
  ),
  name: Type.Optional(Type.String({ maxLength: 255, description: 'default: the tag name' })),
  body: Type.Optional(Type.String({ maxLength: 125_000, description: 'Markdown notes' })),
  draft: Type.Optional(Type.Boolean({ description: 'a draft is seen by write access only; publishing creates the tag' })),
  prerelease: Type.Optional(Type.Boolean()),
};

export const CreateReleaseBody = StrictObject({ tag_name: TagName, ...fields });
export const UpdateReleaseBody = StrictObject({ tag_name: Type.Optional(TagName), ...fields });

export const TagParam = {
  tag: Type.String({ minLength: 1, maxLength: 255, description: 'the tag name (percent-encode a "/")' }),
};
export const AssetParam = { ...TagParam, asset_uuid: Type.String({ maxLength: 64 }) };
export const AssetQuery = Type.Object({ name: Type.String({ minLength: 1, maxLength: 255, description: 'the file name' }) });
