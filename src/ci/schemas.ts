/** The response bodies of the runs API (docs/ci.md "API"). */
import { Type } from '@sinclair/typebox';

const Time = Type.String({ format: 'date-time' });
const NullableTime = Type.Union([Time, Type.Null()]);
const NullableString = Type.Union([Type.String(), Type.Null()]);
const Matrix = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
  description: 'the matrix values of this job instance, or null',
});

export const RunStatus = Type.Union(['waiting', 'queued', 'in_progress', 'completed'].map((s) => Type.Literal(s)));
const Conclusion = Type.Union([
  ...['success', 'failure', 'cancelled', 'skipped', 'timed_out', 'startup_failure'].map((s) => Type.Literal(s)),
  Type.Null(),
]);

export const JobSummary = Type.Object({
  uuid: Type.String({ format: 'uuid' }),
  name: Type.String(),
  matrix: Matrix,
  status: Type.String({ description: 'waiting, queued, in_progress or completed' }),
  conclusion: Conclusion,
  runner_name: NullableString,
  started_at: NullableTime,
  completed_at: NullableTime,
});

export const Step = Type.Object({
  number: Type.Integer(),
  name: Type.String(),
  status: Type.String({ description: 'queued, in_progress or completed' }),
  conclusion: NullableString,
  started_at: NullableTime,
  completed_at: NullableTime,
});

export const Job = Type.Object({
  ...JobSummary.properties,
  attempt: Type.Integer({ minimum: 1 }),
  log_bytes: Type.Integer({ minimum: 0, description: 'the length of its log now' }),
  steps: Type.Array(Step),
});

export const RunBase = {
  uuid: Type.String({ format: 'uuid' }),
  number: Type.Integer({ description: 'per repo, from 1' }),
  workflow: Type.Object({ path: Type.String(), name: Type.String() }),
  event: Type.String({ description: 'push, pull_request, workflow_dispatch or schedule' }),
  head_sha: Type.String(),
  head_branch: NullableString,
  pull_number: Type.Union([Type.Integer(), Type.Null()]),
  actor: Type.Object({ uuid: Type.String(), username: Type.String() }),
  status: RunStatus,
  conclusion: Conclusion,
  attempt: Type.Integer({ minimum: 1 }),
  created_at: Time,
  started_at: NullableTime,
  completed_at: NullableTime,
};

export const RunItem = Type.Object(RunBase);

export const Run = Type.Object({
  ...RunBase,
  error: Type.Union([Type.String(), Type.Null()], {
    description: 'why the run failed to start (its workflow file refused: file, line, key, reason), or null',
  }),
  jobs: Type.Array(JobSummary, { description: 'the jobs of its latest attempt' }),
});

export const RunsQuery = Type.Object({
  workflow: Type.Optional(Type.String({ maxLength: 500, description: 'the workflow file: its name or path' })),
  branch: Type.Optional(Type.String({ maxLength: 500 })),
  event: Type.Optional(Type.String({ maxLength: 50 })),
  status: Type.Optional(Type.String({ maxLength: 50, description: 'a status or a conclusion' })),
  head_sha: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{40}$' })),
  actor: Type.Optional(Type.String({ maxLength: 100, description: 'a username' })),
});
