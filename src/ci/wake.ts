/** Long polls of this instance waiting for work (src/ci/protocol.ts); woken when jobs may be queued. */
const waiters = new Set<() => void>();

export function addWaiter(fn: () => void): void {
  waiters.add(fn);
}

export function removeWaiter(fn: () => void): void {
  waiters.delete(fn);
}

export function wakePollers(): void {
  for (const w of [...waiters]) w();
}
