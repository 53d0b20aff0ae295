/**
 * Git LFS streaming (docs/bring-in.md "Git LFS"; bench/README.md "Git LFS streaming"): one
 * BENCH_LFS_MIB (1024) MiB object goes up (`PUT {clone_url}/info/lfs/objects/{oid}`) and comes
 * back down (`GET` of the same), through the built server in a child process on SQLite, while
 * this process samples the server's resident set size (`VmRSS` of /proc/PID/status) every 50 ms.
 * Prints the RSS before, the peak growth during each transfer, and each transfer's rate.
 *
 *   npm run build && npx tsx bench/lfs-stream.ts
 *
 * The content is AES-128-CTR of zeros (incompressible, made as it is sent, never held whole);
 * its SHA-256 is computed by a first pass over the same stream. The download is hashed as it
 * arrives and checked. Everything lives in a temp dir removed at the end.
 */
import { spawn } from 'node:child_process';
import { createCipheriv, createHash } from 'node:crypto';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOKEN = 'weft_bench_lfs_token_0123456789abcdefghijk';
const MIB = Number(process.env.BENCH_LFS_MIB ?? 1024);
const SIZE = MIB * 1024 * 1024;
const CHUNK = 1024 * 1024;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** The content: SIZE bytes of AES-CTR keystream, made chunk by chunk. */
function content(): Readable {
  const cipher = createCipheriv('aes-128-ctr', Buffer.alloc(16, 7), Buffer.alloc(16, 0));
  const zeros = Buffer.alloc(CHUNK);
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= SIZE) return void this.push(null);
      const n = Math.min(CHUNK, SIZE - sent);
      sent += n;
      this.push(cipher.update(zeros.subarray(0, n)));
    },
  });
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Samples the server's RSS while `fn` runs: the peak, in MB. */
async function peakWhile(pid: number, fn: () => Promise<void>): Promise<{ peak: number; seconds: number }> {
  let peak = rssMb(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50);
  const started = performance.now();
  try {
    await fn();
  } finally {
    clearInterval(timer);
  }
  return { peak: Math.max(peak, rssMb(pid)), seconds: (performance.now() - started) / 1000 };
}

function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: Readable,
): Promise<{ status: number; hash: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const hash = createHash('sha256');
      let text = '';
      res.on('data', (c: Buffer) => {
        hash.update(c);
        if (text.length < 2000) text += c.toString('utf8', 0, Math.min(c.length, 2000));
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, hash: hash.digest('hex'), text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body) body.pipe(req);
    else req.end();
  });
}

async function main(): Promise<void> {
  const top = mkdtempSync(join(tmpdir(), 'weft-lfs-bench-'));
  const port = await freePort();
  const server = spawn(process.execPath, ['dist/main.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      DATA_DIR: join(top, 'data'),
      SSH_PORT: '0',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      PORT: String(port),
      BOOTSTRAP_ADMIN_TOKEN: TOKEN,
      DEFAULT_MAX_DISK_BYTES: String(SIZE * 2),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    for (
      let i = 0;
      !(await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      if (i > 600) throw new Error('the server did not become ready');
      await sleep(100);
    }
    const auth = { authorization: `Bearer ${TOKEN}` };
    const me = (await (await fetch(`${base}/api/v1/user`, { headers: auth })).json()) as { username: string };
    const created = await fetch(`${base}/api/v1/users/${me.username}/repos`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'big', slug: 'big' }),
    });
    if (created.status !== 201) throw new Error(`repo: ${created.status} ${await created.text()}`);

    const hashing = createHash('sha256');
    for await (const c of content()) hashing.update(c as Buffer);
    const oid = hashing.digest('hex');
    const lfs = `${base}/git/users/${me.username}/big.git/info/lfs/objects`;
    const lfsJson = { 'content-type': 'application/vnd.git-lfs+json', accept: 'application/vnd.git-lfs+json' };
    const batch = await fetch(`${lfs}/batch`, {
      method: 'POST',
      headers: { ...auth, ...lfsJson },
      body: JSON.stringify({ operation: 'upload', transfers: ['basic'], objects: [{ oid, size: SIZE }] }),
    });
    const upload = ((await batch.json()) as { objects: Array<{ actions: { upload: { header: Record<string, string> } } }> })
      .objects[0]!.actions.upload;
    const lfsToken = upload.header['X-Weft-LFS-Token']!;

    // settle, then the baseline
    await sleep(2000);
    const before = rssMb(server.pid!);
    let status = 0;
    const up = await peakWhile(server.pid!, async () => {
      const res = await send(
        `${lfs}/${oid}`,
        'PUT',
        { 'x-weft-lfs-token': lfsToken, 'content-type': 'application/octet-stream', 'content-length': String(SIZE) },
        content(),
      );
      status = res.status;
      if (res.status !== 200) throw new Error(`upload: ${res.status} ${res.text}`);
    });
    let got = '';
    const down = await peakWhile(server.pid!, async () => {
      const res = await send(`${lfs}/${oid}`, 'GET', { 'x-weft-lfs-token': lfsToken, accept: 'application/octet-stream' });
      if (res.status !== 200) throw new Error(`download: ${res.status} ${res.text}`);
      got = res.hash;
    });
    if (got !== oid) throw new Error('the download differs from the upload');
    const mbps = (s: number) => (MIB / s).toFixed(0);
    console.log(`LFS object: ${MIB} MiB (upload status ${status}); server RSS before: ${before.toFixed(1)} MB`);
    console.log(
      `upload:   ${up.seconds.toFixed(1)} s (${mbps(up.seconds)} MiB/s), RSS peak ${up.peak.toFixed(1)} MB, growth ${(up.peak - before).toFixed(1)} MB`,
    );
    console.log(
      `download: ${down.seconds.toFixed(1)} s (${mbps(down.seconds)} MiB/s), RSS peak ${down.peak.toFixed(1)} MB, growth ${(down.peak - before).toFixed(1)} MB`,
    );
    const growth = Math.max(up.peak, down.peak) - before;
    console.log(`largest growth: ${growth.toFixed(1)} MB (${growth < 50 ? 'under' : 'OVER'} the 50 MB bound)`);
    if (growth >= 50) process.exitCode = 1;
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(top, { recursive: true, force: true });
  }
}

await main();
