import { Type } from '@sinclair/typebox';
import { NoControl, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const Protection = Type.Object(
  {
    uuid: Type.String(),
    branch: Type.String({ description: 'an exact branch name or a glob such as release/*' }),
    required_approvals: Type.Integer({ minimum: 0 }),
    required_status_contexts: Type.Array(Type.String(), {
      description: 'status contexts that must be `success` on the pull head before a merge (sorted); empty: none',
    }),
    require_conversation_resolution: Type.Boolean({
      description: 'merges need every review conversation resolved (409 conversations_unresolved)',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false, title: 'BranchProtection' },
);

export const Approver = Type.Object(
  { user_uuid: Type.String(), username: Type.String(), created_at: Timestamp },
  { additionalProperties: false, title: 'ProtectionApprover' },
);

const Branch = Type.String({
  minLength: 1,
  maxLength: 255,
  description:
    'an exact branch name or a glob: `*` matches within one path segment, `**` across segments, `?` one character; ' +
    'otherwise git branch-name rules (no white space or control characters, no `..`, `~^:[\\`)',
});
const RequiredApprovals = Type.Integer({
  minimum: 0,
  maximum: 100,
  description: 'integer 0-100; default 1; 0 requires no approval (only the required status contexts)',
});

const RequiredContexts = Type.Array(Type.String({ minLength: 1, maxLength: 255, ...NoControl }), {
  maxItems: 50,
  description:
    'status contexts (1-255 characters each, no control characters, at most 50; duplicates dropped) whose latest status on the pull head must be ' +
    '`success` for a merge (409 checks_unsatisfied otherwise); default []. On update, the whole list is replaced.',
});

const RequireResolution = Type.Boolean({
  description: 'merges need every review conversation resolved (409 conversations_unresolved); default false',
});

export const CreateProtectionBody = StrictObject({
  branch: Branch,
  required_approvals: Type.Optional(RequiredApprovals),
  required_status_contexts: Type.Optional(RequiredContexts),
  require_conversation_resolution: Type.Optional(RequireResolution),
});
export const UpdateProtectionBody = StrictObject({
  branch: Type.Optional(Branch),
  required_approvals: Type.Optional(RequiredApprovals),
  required_status_contexts: Type.Optional(RequiredContexts),
  require_conversation_resolution: Type.Optional(RequireResolution),
});
export const AddApproverBody = StrictObject({ username: Type.String({ minLength: 1, maxLength: 200 }) });

export const ListQuery = Type.Object({ ...PageQuery });
export const ProtectionParam = { protection_uuid: Type.String({ maxLength: 100 }) };
export const ApproverParam = { user_uuid: Type.String({ maxLength: 100 }) };
