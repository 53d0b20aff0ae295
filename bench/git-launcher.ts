/**
 * `npx tsx bench/git-launcher.ts`: what one buffered git command costs the server, started from
 * the launcher (src/git/launcher.ts) and from the server itself (`WEFT_GIT_LAUNCHER=off`), in the
 * same run. The server's memory is stood in for by `BENCH_BALLAST_MB` (default 0,300: each size in
 * turn) of touched buffers; each measure is `BENCH_COMMANDS` (200) `git --version`, one at a time,
 * after 20 to warm up. Printed per command: wall time, and this process's CPU (user and kernel).
 */
import { git } from '../src/git/run.ts';

const sizes = (process.env.BENCH_BALLAST_MB ?? '0,300').split(',').map(Number);
const commands = Number(process.env.BENCH_COMMANDS ?? 200);

async function measure(): Promise<{ wall: number; user: number; sys: number }> {
  for (let i = 0; i < 20; i++) await git(null, ['--version']);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (let i = 0; i < commands; i++) await git(null, ['--version']);
  const c = process.cpuUsage(c0);
  return { wall: (performance.now() - t0) / commands, user: c.user / 1000 / commands, sys: c.system / 1000 / commands };
}

const ballast: Buffer[] = [];
console.log('| server memory | git started from | wall per command | server CPU user | server CPU kernel |');
console.log('|---|---|---|---|---|');
for (const mb of sizes) {
  while (ballast.length < mb) ballast.push(Buffer.alloc(1 << 20, 1));
  for (const mode of ['launcher', 'off'] as const) {
    if (mode === 'off') process.env.WEFT_GIT_LAUNCHER = 'off';
    else delete process.env.WEFT_GIT_LAUNCHER;
    const m = await measure();
    const from = mode === 'off' ? 'the server' : 'the launcher';
    console.log(`| +${mb} MB | ${from} | ${m.wall.toFixed(1)} ms | ${m.user.toFixed(2)} ms | ${m.sys.toFixed(2)} ms |`);
  }
}
process.exit(0);
