/**
 * The passkey API (docs/signin.md "Passkeys"): registration options, registering the browser's
 * answer, listing and removing. The same service as Security settings' passkey forms
 * (src/signin/passkeys.ts): challenges stored server-side, single use, 5 minutes.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { errors } from '../http/route-schemas.ts';
import { deletePasskey, listPasskeys, passkeyRegistrationOptions, registerPasskey } from './passkeys.ts';

const Passkey = Type.Object(
  {
    uuid: Type.String({ format: 'uuid' }),
    name: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false, title: 'Passkey' },
);
const PasskeyList = Type.Array(Passkey, { title: 'PasskeyList' });
const RegistrationOptions = Type.Object({}, { additionalProperties: true, title: 'PasskeyRegistrationOptions' });
const RegisterBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    response: Type.Object({}, { additionalProperties: true, description: "the browser's RegistrationResponseJSON" }),
  },
  { additionalProperties: false },
);
const PasskeyParams = Type.Object({ uuid: Type.String({ format: 'uuid' }) });

export async function passkeyRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['sign-in'];
  r.post(
    '/user/passkeys/options',
    {
      config: { rateLimit: 'api:login', twoFactorExempt: true },
      schema: {
        tags,
        summary: "Registration options for a new passkey (pass them to the browser's navigator.credentials.create())",
        description:
          'Takes no body. A discoverable credential, no attestation; the challenge is single use and expires in 5 minutes.',
        response: { 200: RegistrationOptions, ...errors(429) },
      },
    },
    async (request) => passkeyRegistrationOptions(deps, requireViewer(request)),
  );
  r.post(
    '/user/passkeys',
    {
      config: { rateLimit: 'api:login', twoFactorExempt: true },
      schema: {
        tags,
        summary: 'Register a passkey from the browser’s answer to the options; it is a second factor from now on',
        description:
          '400 when the answer does not verify (another origin, a used or expired challenge, a passkey registered already); ' +
          'every refusal says the same thing whatever the reason.',
        body: RegisterBody,
        response: { 201: Passkey, ...errors(429) },
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send(await registerPasskey(deps, requireViewer(request), JSON.stringify(request.body.response), request.body.name)),
  );
  r.get(
    '/user/passkeys',
    {
      config: { twoFactorExempt: true },
      schema: { tags, summary: "The caller's passkeys", response: { 200: PasskeyList } },
    },
    async (request) => listPasskeys(deps, requireViewer(request)),
  );
  r.delete(
    '/user/passkeys/:uuid',
    {
      schema: {
        tags,
        summary: 'Remove a passkey of the caller; the account keeps a second factor while TOTP or another passkey is left',
        params: PasskeyParams,
        response: { 204: { type: 'null' }, ...errors(404) },
      },
    },
    async (request, reply) => {
      await deletePasskey(deps, requireViewer(request), request.params.uuid);
      return reply.status(204).send();
    },
  );
}
