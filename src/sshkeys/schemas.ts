import { Type } from '@sinclair/typebox';
import { NoControl, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const SshKey = Type.Object(
  {
    uuid: Type.String(),
    title: Type.String(),
    key_type: Type.String({ description: 'the OpenSSH type name: ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, ...' }),
    fingerprint: Type.String({ description: 'SHA256:… as `ssh-keygen -lf` prints it' }),
    key: Type.String({ description: 'the public key as `TYPE BASE64`, without its comment' }),
    created_at: Timestamp,
    last_used_at: { ...NullableTimestamp, description: 'last successful SSH sign-in with the key, kept to the minute' },
  },
  { additionalProperties: false, title: 'SshKey' },
);

export const CreateSshKeyBody = StrictObject({
  title: Type.String({ minLength: 1, maxLength: 100, ...NoControl }),
  key: Type.String({
    minLength: 1,
    maxLength: 16384,
    description: 'one OpenSSH public key line (`ssh-ed25519 AAAA… comment`, the content of id_ed25519.pub)',
  }),
});

export const SshKeyParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });
export const ListSshKeysQuery = Type.Object({ ...PageQuery });

export const DeployKey = Type.Object(
  {
    uuid: Type.String(),
    title: Type.String(),
    key_type: Type.String({ description: 'the OpenSSH type name: ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, ...' }),
    fingerprint: Type.String({ description: 'SHA256:… as `ssh-keygen -lf` prints it' }),
    key: Type.String({ description: 'the public key as `TYPE BASE64`, without its comment' }),
    read_only: Type.Boolean({ description: 'true: fetch only; false: push too' }),
    created_at: Timestamp,
    created_by_username: Type.String({ description: 'the maintainer who added it; pushes with the key are recorded as theirs' }),
    last_used_at: { ...NullableTimestamp, description: 'last successful SSH sign-in with the key, kept to the minute' },
  },
  { additionalProperties: false, title: 'DeployKey' },
);

export const CreateDeployKeyBody = StrictObject({
  title: Type.String({ minLength: 1, maxLength: 100 }),
  key: Type.String({
    minLength: 1,
    maxLength: 16384,
    description: 'one OpenSSH public key line (`ssh-ed25519 AAAA… comment`)',
  }),
  read_only: Type.Optional(Type.Boolean({ default: true, description: 'false lets the key push (default true)' })),
});

export const DeployKeyParam = { key_uuid: Type.String({ maxLength: 100 }) };
