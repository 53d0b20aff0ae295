/**
 * Start-up allocates a lot of short-lived objects (modules, route tables), and V8 doubles its
 * young generation each time a collection finds much of it alive: the server came out of
 * start-up with 32 MB of young generation it would keep while idle. main.ts imports this module
 * first, so the young generation keeps its initial size while the server starts; once the
 * server listens, `startupDone()` gives V8 back its default growth, so under load the young
 * generation grows as before.
 */
import v8 from 'node:v8';

v8.setFlagsFromString('--semi-space-growth-factor=1');

export function startupDone(): void {
  v8.setFlagsFromString('--semi-space-growth-factor=2');
}
