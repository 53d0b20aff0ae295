/** A workflow file as the validator accepts it (docs/ci.md "Supported syntax"). */

export interface RefFilters {
  branches?: string[];
  branchesIgnore?: string[];
  tags?: string[];
  tagsIgnore?: string[];
  paths?: string[];
  pathsIgnore?: string[];
}

export type PullType = 'opened' | 'synchronize' | 'reopened';
export const PULL_TYPES: PullType[] = ['opened', 'synchronize', 'reopened'];

export interface DispatchInput {
  type: 'string' | 'boolean' | 'choice';
  description?: string;
  required: boolean;
  default?: string | boolean;
  options?: string[];
}

export interface Triggers {
  push?: RefFilters;
  pull_request?: RefFilters & { types: PullType[] };
  workflow_dispatch?: { inputs: Record<string, DispatchInput> };
  schedule?: Array<{ cron: string }>;
}

export interface Concurrency {
  group: string;
  /** A boolean, or an expression text evaluated with the group. */
  cancelInProgress: boolean | string;
}

export interface Step {
  /** 1-based position in the job. */
  number: number;
  line: number;
  id?: string;
  name?: string;
  run?: string;
  uses?: string;
  with: Record<string, string>;
  shell: 'bash' | 'sh';
  workingDirectory?: string;
  env: Record<string, string>;
  if?: string;
  continueOnError: boolean | string;
  timeoutMinutes?: number;
}

export type MatrixValue = string | number | boolean;
export type MatrixRow = Record<string, MatrixValue>;

export interface Strategy {
  /** Each key's values, in file order. */
  axes: Record<string, MatrixValue[]>;
  include: MatrixRow[];
  exclude: MatrixRow[];
  failFast: boolean;
  maxParallel?: number;
}

export interface Job {
  id: string;
  line: number;
  name?: string;
  runsOn: string[];
  needs: string[];
  if?: string;
  env: Record<string, string>;
  timeoutMinutes: number;
  continueOnError: boolean | string;
  strategy?: Strategy;
  outputs: Record<string, string>;
  concurrency?: Concurrency;
  steps: Step[];
}

export interface Workflow {
  path: string;
  name: string;
  on: Triggers;
  env: Record<string, string>;
  concurrency?: Concurrency;
  jobs: Job[];
}

/** One reason a file is refused: the file, the line (1-based), the key path and the reason. */
export interface WorkflowError {
  file: string;
  line: number;
  key: string;
  message: string;
}

export const formatError = (e: WorkflowError) => `${e.file}:${e.line}: ${e.key ? `${e.key}: ` : ''}${e.message}`;

export const DEFAULT_TIMEOUT_MINUTES = 360;
export const MAX_MATRIX = 256;
