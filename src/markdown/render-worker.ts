/**
 * The Markdown worker thread (src/markdown/bounded.ts): renders the texts it is sent, one at a
 * time, and answers each on the result port, then bumps the shared counter so a main thread
 * waiting with `Atomics.wait` wakes up.
 */
import { type MessagePort, workerData } from 'node:worker_threads';
import { createMarkdownRenderer } from './render.ts';

const { port, signal } = workerData as { port: MessagePort; signal: Int32Array };
const renderer = createMarkdownRenderer();

port.on('message', (job: { id: number; text: string }) => {
  let html: string | null;
  try {
    html = renderer.render(job.text);
  } catch {
    html = null;
  }
  port.postMessage({ id: job.id, html });
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
});
