import type { AddressInfo } from 'node:net';
import { type TestApp, startApp } from '../test/helpers.ts';

export { startApp };
export type { DialectName } from '../test/helpers.ts';

export async function listenTestApp(t: TestApp): Promise<string> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}
