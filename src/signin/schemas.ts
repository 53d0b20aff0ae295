import { Type } from '@sinclair/typebox';
import { NoControl, StrictObject, Timestamp } from '../http/schemas.ts';

/** Sign-in sources and the second factor (docs/signin.md): one definition for validation and OpenAPI. */

const Line = (max: number, description?: string) =>
  Type.String({ maxLength: max, ...NoControl, ...(description ? { description } : {}) });

export const SOURCE_KINDS = ['oidc', 'ldap'] as const;
export const DEFAULT_OIDC_SCOPES = ['openid', 'profile', 'email', 'groups'];

export const OidcSettings = Type.Object(
  {
    issuer: Line(500, 'the issuer URL; discovery reads {issuer}/.well-known/openid-configuration'),
    client_id: Line(300),
    scopes: Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '^[\\x21-\\x7e]+$' }), {
      maxItems: 30,
      description: 'default ["openid","profile","email","groups"]',
    }),
    username_claim: Line(100, 'default "preferred_username"'),
    email_claim: Line(100, 'default "email"'),
    groups_claim: Line(100, 'default "groups"'),
    client_secret_set: Type.Boolean({ description: 'whether a client secret is stored (it is never returned)' }),
  },
  { additionalProperties: false, title: 'OidcSettings' },
);

export const LdapSettings = Type.Object(
  {
    url: Line(500, 'ldap:// or ldaps://'),
    start_tls: Type.Boolean(),
    bind_dn: Line(1000, 'the service account that searches; empty binds anonymously'),
    user_base: Line(1000),
    user_filter: Line(1000, 'an LDAP filter with "{username}", replaced by the escaped username (RFC 4515)'),
    username_attribute: Line(100, 'default "uid"'),
    email_attribute: Line(100, 'default "mail"'),
    group_base: Line(1000, 'empty: groups are not read'),
    group_filter: Line(1000, 'with "{dn}" and "{username}" (escaped), default "(member={dn})"'),
    group_name_attribute: Line(100, 'default "cn"'),
    bind_password_set: Type.Boolean({ description: 'whether a bind password is stored (it is never returned)' }),
  },
  { additionalProperties: false, title: 'LdapSettings' },
);

export const AuthSource = Type.Object(
  {
    uuid: Type.String(),
    kind: Type.Union(SOURCE_KINDS.map((k) => Type.Literal(k))),
    name: Type.String({ description: 'a slug: the address /login/oidc/{name} and the source of team sync rules' }),
    display_name: Type.String({ description: 'shown as "Sign in with {display_name}"' }),
    enabled: Type.Boolean(),
    auto_create_users: Type.Boolean(),
    satisfies_two_factor: Type.Boolean(),
    oidc: Type.Union([OidcSettings, Type.Null()]),
    ldap: Type.Union([LdapSettings, Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false, title: 'AuthSource' },
);

const OidcInput = StrictObject({
  issuer: Type.String({ minLength: 1, maxLength: 500, ...NoControl }),
  client_id: Type.String({ minLength: 1, maxLength: 300, ...NoControl }),
  client_secret: Type.Optional(Type.String({ maxLength: 1000, description: 'write-only; omitted on PUT keeps the stored one' })),
  scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: '^[\\x21-\\x7e]+$' }), { maxItems: 30 })),
  username_claim: Type.Optional(Line(100)),
  email_claim: Type.Optional(Line(100)),
  groups_claim: Type.Optional(Line(100)),
});

const LdapInput = StrictObject({
  url: Type.String({ minLength: 1, maxLength: 500, ...NoControl }),
  start_tls: Type.Optional(Type.Boolean()),
  bind_dn: Type.Optional(Line(1000)),
  bind_password: Type.Optional(Type.String({ maxLength: 1000, description: 'write-only; omitted on PUT keeps the stored one' })),
  user_base: Type.String({ minLength: 1, maxLength: 1000, ...NoControl }),
  user_filter: Type.Optional(Line(1000, 'default "(uid={username})"')),
  username_attribute: Type.Optional(Line(100)),
  email_attribute: Type.Optional(Line(100)),
  group_base: Type.Optional(Line(1000)),
  group_filter: Type.Optional(Line(1000)),
  group_name_attribute: Type.Optional(Line(100)),
});

const SourceName = Type.String({ minLength: 1, maxLength: 39, pattern: '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$' });

export const CreateAuthSourceBody = StrictObject({
  kind: Type.Union(SOURCE_KINDS.map((k) => Type.Literal(k))),
  name: SourceName,
  display_name: Type.String({ minLength: 1, maxLength: 100, ...NoControl }),
  enabled: Type.Optional(Type.Boolean()),
  auto_create_users: Type.Optional(Type.Boolean()),
  satisfies_two_factor: Type.Optional(Type.Boolean()),
  oidc: Type.Optional(Type.Union([OidcInput, Type.Null()])),
  ldap: Type.Optional(Type.Union([LdapInput, Type.Null()])),
});

export const UpdateAuthSourceBody = StrictObject({
  name: Type.Optional(SourceName),
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, ...NoControl })),
  enabled: Type.Optional(Type.Boolean()),
  auto_create_users: Type.Optional(Type.Boolean()),
  satisfies_two_factor: Type.Optional(Type.Boolean()),
  oidc: Type.Optional(OidcInput),
  ldap: Type.Optional(LdapInput),
});

export const AuthSourceParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });

export const AuthSourceTest = Type.Object(
  {
    ok: Type.Boolean(),
    detail: Type.String({ description: 'what was checked, or what failed' }),
  },
  { additionalProperties: false, title: 'AuthSourceTest' },
);

// ---- the second factor

export const TotpEnrolment = Type.Object(
  {
    secret: Type.String({ description: 'base32; type it into an authenticator app, or scan otpauth_url' }),
    otpauth_url: Type.String(),
  },
  { additionalProperties: false, title: 'TotpEnrolment' },
);
export const CodeBody = StrictObject({
  code: Type.String({ minLength: 1, maxLength: 40, description: 'a TOTP code, or a recovery code' }),
});
export const RecoveryCodes = Type.Object(
  { recovery_codes: Type.Array(Type.String(), { description: 'ten single-use codes, shown once' }) },
  { additionalProperties: false, title: 'RecoveryCodes' },
);
export const TwoFactorStatus = Type.Object(
  {
    totp: Type.Boolean({ description: 'an authenticator app is confirmed' }),
    passkeys: Type.Integer({ description: 'how many passkeys are registered' }),
    recovery_codes_left: Type.Integer(),
    required_by: Type.Array(Type.String(), { description: 'slugs of the teams that require a second factor' }),
  },
  { additionalProperties: false, title: 'TwoFactorStatus' },
);

export const TwoFactorRequirement = Type.Object(
  {
    enabled: Type.Boolean({ description: 'whether the requirement is on' }),
    affected: Type.Array(
      Type.Object(
        {
          username: Type.String(),
          display_name: Type.String(),
          role: Type.Union([Type.String(), Type.Null()], { description: 'the team role (null for the site)' }),
        },
        { additionalProperties: false },
      ),
      { description: 'who has no second factor (and is refused while the requirement is on), by username; at most 500' },
    ),
    affected_count: Type.Integer({ description: 'how many are affected in all' }),
  },
  { additionalProperties: false, title: 'TwoFactorRequirement' },
);
export const TwoFactorRequirementBody = StrictObject({ enabled: Type.Boolean() });
export const TeamSlugParams = Type.Object({ team_slug: Type.String({ minLength: 1, maxLength: 100 }) });
