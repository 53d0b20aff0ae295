import { type Static, Type } from '@sinclair/typebox';
import { NoControl, NullableString, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const FILENAME_MAX = 255;

export const Upload = Type.Object(
  {
    uuid: Type.String(),
    repo_uuid: Type.String(),
    filename: Type.String(),
    content_type: Type.String(),
    size_bytes: Type.Integer(),
    sha256: Type.String({ description: 'SHA-256 of the content, lowercase hex' }),
    status: Type.Union([Type.Literal('active'), Type.Literal('removed')]),
    group_uuid: NullableString(),
    created_at: Timestamp,
    created_by_username: Type.String(),
    removed_at: NullableTimestamp,
  },
  { additionalProperties: false, title: 'FileUpload' },
);
export type UploadJson = Static<typeof Upload>;

export const UploadList = Type.Object(
  { uploads: Type.Array(Upload) },
  { additionalProperties: false, title: 'FileUploads', description: 'the uploads of a multipart request, in part order' },
);

export const UploadGroup = Type.Object(
  {
    uuid: Type.String(),
    repo_uuid: Type.String(),
    name: NullableString(),
    created_at: Timestamp,
    created_by_username: Type.String(),
    uploads: Type.Array(Upload, { description: 'the active members, oldest first' }),
  },
  { additionalProperties: false, title: 'UploadGroup' },
);
export type UploadGroupJson = Static<typeof UploadGroup>;

export const CreateGroupBody = StrictObject({
  name: Type.Optional(
    NullableString({
      minLength: 1,
      maxLength: 200,
      ...NoControl,
      description: 'optional label, 1-200 characters, no control characters',
    }),
  ),
});

export const UploadQuery = Type.Object({
  filename: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1000,
      description:
        'required for a raw-body upload; sanitised: the part after the last / or \\, control characters dropped, trimmed; ' +
        `empty, "." or ".." is 400, longer than ${FILENAME_MAX} characters is 400`,
    }),
  ),
  group_uuid: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'join this upload group of the repo' })),
});

export const ListQuery = Type.Object({ ...PageQuery });
export const UploadParam = { upload_uuid: Type.String({ minLength: 1, maxLength: 100 }) };
export const GroupParam = { group_uuid: Type.String({ minLength: 1, maxLength: 100 }) };
