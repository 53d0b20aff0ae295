import { Type } from '@sinclair/typebox';
import { NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

const LabelName = Type.String({
  minLength: 1,
  maxLength: 50,
  description: '1-50 characters, no comma, unique case-insensitively',
});
const Color = Type.String({ pattern: '^[0-9a-fA-F]{6}$', description: '6 hex digits, no #' });
const Description = Type.String({ maxLength: 200 });

export const Label = Type.Object(
  {
    uuid: Type.String(),
    name: Type.String(),
    color: Type.String(),
    description: Type.String(),
    scope: Type.Union([Type.Literal('repo'), Type.Literal('team')]),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'Label' },
);
export const CreateLabelBody = StrictObject({ name: LabelName, color: Color, description: Type.Optional(Description) });
export const UpdateLabelBody = StrictObject({
  name: Type.Optional(LabelName),
  color: Type.Optional(Color),
  description: Type.Optional(Description),
});
export const LabelParam = { name: Type.String({ minLength: 1, maxLength: 50 }) };

const DueOn = Type.Union([Type.String({ maxLength: 10, description: 'a date, YYYY-MM-DD' }), Type.Null()]);
const MilestoneState = Type.Union([Type.Literal('open'), Type.Literal('closed')]);
export const Milestone = Type.Object(
  {
    uuid: Type.String(),
    number: Type.Integer(),
    title: Type.String(),
    description: Type.String(),
    due_on: Type.Union([Type.String(), Type.Null()]),
    state: MilestoneState,
    open_threads: Type.Integer(),
    closed_threads: Type.Integer(),
    open_pulls: Type.Integer(),
    closed_pulls: Type.Integer(),
    created_at: Timestamp,
    closed_at: NullableTimestamp,
  },
  { additionalProperties: false, title: 'Milestone' },
);
const MilestoneTitle = Type.String({ minLength: 1, maxLength: 256 });
export const CreateMilestoneBody = StrictObject({
  title: MilestoneTitle,
  description: Type.Optional(Type.String({ maxLength: 65_536 })),
  due_on: Type.Optional(DueOn),
  state: Type.Optional(MilestoneState),
});
export const UpdateMilestoneBody = StrictObject({
  title: Type.Optional(MilestoneTitle),
  description: Type.Optional(Type.String({ maxLength: 65_536 })),
  due_on: Type.Optional(DueOn),
  state: Type.Optional(MilestoneState),
});
export const MilestoneParam = { number: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }) };
export const MilestoneListQuery = Type.Object({
  ...PageQuery,
  state: Type.Optional(
    Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('all')], { description: 'default open' }),
  ),
  sort: Type.Optional(Type.Union([Type.Literal('due_on'), Type.Literal('title')], { description: 'default: by number' })),
});
export const LabelListQuery = Type.Object({ ...PageQuery });
