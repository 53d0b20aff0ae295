#!/usr/bin/env node
// `npx weft …`: runs the TypeScript CLI through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
