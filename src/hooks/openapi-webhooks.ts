/**
 * The `webhooks` section of the OpenAPI document (OpenAPI 3.1; docs/webhooks.md "The request"):
 * one entry per event kind, and `ping`, each a POST whose body is the delivery `{hook_uuid, event}`
 * with that kind's payload schema (src/events/payload-schemas.ts) and whose parameters are the
 * headers every delivery carries. The payload fields an event privacy rule may clear
 * (src/events/kinds.ts `names`) are nullable here, since a delivery shows the event as the hook's
 * creator may see it.
 */
import { KIND_RULES, type EventKind } from '../events/kinds.ts';
import { EVENT_PAYLOADS, type PayloadSchema } from '../events/payload-schemas.ts';

type Json = Record<string, unknown>;

const pascal = (kind: string) =>
  kind
    .split('-')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

const camel = (kind: string) => {
  const p = pascal(kind);
  return p[0]!.toLowerCase() + p.slice(1);
};

/** The schema with the field at `path` (`a` or `a.b`) allowed to be null. */
function nullableAt(schema: PayloadSchema, path: string): PayloadSchema {
  const [head, tail] = path.split('.', 2) as [string, string | undefined];
  const properties = schema.properties as Record<string, PayloadSchema> | undefined;
  const field = properties?.[head];
  if (!field) return schema;
  let next: PayloadSchema;
  if (tail !== undefined) next = nullableAt(field, tail);
  else {
    const type = field.type;
    const types = Array.isArray(type) ? type : [type];
    next = types.includes('null') ? field : { ...field, type: [...types, 'null'] };
  }
  return { ...schema, properties: { ...properties, [head]: next } };
}

/** A kind's payload schema as a delivery may show it (privacy-cleared fields nullable). */
export function deliveredPayloadSchema(kind: EventKind): PayloadSchema {
  let schema = structuredClone(EVENT_PAYLOADS[kind]);
  for (const ref of KIND_RULES[kind].names) {
    if (ref.list) continue;
    for (const path of [ref.uuid, ...ref.names]) schema = nullableAt(schema, path);
  }
  return schema;
}

const PING_PAYLOAD: PayloadSchema = {
  type: 'object',
  required: ['hook', 'zen'],
  properties: {
    hook: {
      type: 'object',
      required: ['uuid', 'url', 'events', 'active'],
      properties: {
        uuid: { type: 'string', format: 'uuid' },
        url: { type: 'string' },
        events: { type: 'array', items: { type: 'string' } },
        active: { type: 'boolean' },
      },
    },
    zen: { type: 'string' },
  },
};

/** A header every delivery sends, as a parameter named `key` in components.parameters. */
const header = (key: string, name: string, description: string, schema: Json = { type: 'string' }) => ({
  key,
  name,
  in: 'header',
  required: true,
  description,
  schema,
});

const HEADERS = [
  header('WebhookId', 'webhook-id', "The delivery's uuid, the same on every attempt (deduplicate on it)"),
  header('WebhookTimestamp', 'webhook-timestamp', 'Seconds since the epoch when the attempt was signed', {
    type: 'string',
    pattern: '^[0-9]+$',
  }),
  header(
    'WebhookSignature',
    'webhook-signature',
    'Standard Webhooks 1.0: `v1,<base64 HMAC-SHA256 of id.timestamp.body>` keyed with the decoded secret; two, space-separated, within 24 hours of a rotation',
  ),
  header('WebhookEventKind', 'X-Weft-Event', 'The event kind'),
  header('WebhookHookUuid', 'X-Weft-Hook', "The hook's uuid", { type: 'string', format: 'uuid' }),
  header('WebhookAttempt', 'X-Weft-Attempt', 'The attempt number, from 1', { type: 'string', pattern: '^[0-9]+$' }),
  header(
    'WebhookHubSignature',
    'X-Hub-Signature-256',
    '`sha256=<hex HMAC-SHA256 of the body>` keyed with the whole newest secret string',
  ),
  header('WebhookUserAgent', 'User-Agent', '`Weft-Hookshot/<version>`'),
];

const RESPONSES = {
  '200': { description: 'Any 2xx answer within 10 s (WEBHOOK_TIMEOUT_MS) acknowledges the delivery; the body is ignored' },
  '410': { description: 'Gone: the hook is disabled at once (`disabled_reason: "gone"`); any other answer is retried' },
};

/** The webhooks and the component schemas they refer to, for src/http/openapi.ts to add to the document. */
export function webhooksDocument(): {
  webhooks: Json;
  schemas: Json;
  parameters: Json;
  tag: { name: string; description: string };
} {
  const schemas: Json = {};
  const parameters: Json = Object.fromEntries(HEADERS.map(({ key, ...parameter }) => [key, parameter]));
  const headerRefs = HEADERS.map(({ key }) => ({ $ref: `#/components/parameters/${key}` }));
  const webhooks: Json = {};
  const kinds: Array<[string, PayloadSchema, string]> = [
    ...(Object.keys(EVENT_PAYLOADS) as EventKind[]).map((kind): [string, PayloadSchema, string] => [
      kind,
      deliveredPayloadSchema(kind),
      `A \`${kind}\` event.`,
    ]),
    [
      'ping',
      PING_PAYLOAD,
      'Sent by `POST …/hooks/{hook_uuid}/pings`, whatever the events the hook takes; its event `id` is null.',
    ],
  ];
  for (const [kind, payload, summary] of kinds) {
    const name = pascal(kind);
    schemas[`${name}Payload`] = { ...payload, title: `${name}Payload` };
    schemas[`${name}Delivery`] = {
      title: `${name}Delivery`,
      type: 'object',
      required: ['hook_uuid', 'event'],
      properties: {
        hook_uuid: { type: 'string', format: 'uuid' },
        event: {
          type: 'object',
          description: 'The event as `GET /events/{id}` shows it to the hook creator when the attempt is made',
          required: ['id', 'kind', 'scopes', 'actor', 'payload', 'created_at'],
          properties: {
            id: { type: kind === 'ping' ? 'null' : 'string', description: 'decimal string, increases with every event' },
            kind: { type: 'string', enum: [kind] },
            scopes: { type: 'array', items: { type: 'string', description: 'KIND:UUID' } },
            actor: {
              oneOf: [
                {
                  type: 'object',
                  required: ['uuid', 'username'],
                  properties: { uuid: { type: 'string', format: 'uuid' }, username: { type: 'string' } },
                },
                { type: 'null' },
              ],
            },
            payload: { $ref: `#/components/schemas/${name}Payload` },
            created_at: { type: 'string', format: 'date-time' },
          },
        },
      },
    };
    webhooks[kind] = {
      post: {
        operationId: `${camel(kind)}Webhook`,
        summary: `${kind} delivery`,
        description: `${summary} POSTed to each active hook that takes this kind (docs/webhooks.md); retried on failure with the same \`webhook-id\`.`,
        tags: ['webhook-events'],
        security: [],
        parameters: headerRefs,
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}Delivery` } } },
        },
        responses: RESPONSES,
      },
    };
  }
  return {
    webhooks,
    schemas,
    parameters,
    tag: {
      name: 'webhook-events',
      description: 'What a hook receives: one POST per event, signed (Standard Webhooks 1.0), with the headers below',
    },
  };
}
