import { type Static, Type } from '@sinclair/typebox';
import { NullableString, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';
import { Upload } from '../uploads/schemas.ts';

export const TARGET_KINDS = ['thread', 'reply', 'pull', 'review'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

export const Attachment = Type.Object(
  {
    uuid: Type.String(),
    upload_uuid: Type.String(),
    group_uuid: NullableString({ description: 'the group it was attached through, or null' }),
    target_kind: Type.Union(TARGET_KINDS.map((k) => Type.Literal(k))),
    target_uuid: Type.String(),
    created_at: Timestamp,
    created_by_username: Type.String(),
    upload: Upload,
  },
  { additionalProperties: false, title: 'Attachment' },
);
export type AttachmentJson = Static<typeof Attachment>;

export const GroupAttachment = Type.Object(
  { group_uuid: Type.String(), attachments: Type.Array(Attachment, { description: 'the attachments this request created' }) },
  { additionalProperties: false, title: 'GroupAttachment' },
);
export type GroupAttachmentJson = Static<typeof GroupAttachment>;

export const AttachBody = StrictObject(
  {
    upload_uuid: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    group_uuid: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { description: 'exactly one of upload_uuid and group_uuid (400 otherwise)' },
);
export type AttachInput = Static<typeof AttachBody>;

export const ListQuery = Type.Object({ ...PageQuery });
