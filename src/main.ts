/**
 * The server's entry point (`npm start` runs dist/main.js): it sets the start-up's heap policy
 * (startup-heap.ts) before anything else loads, then loads and runs the server (serve.ts).
 */
import './startup-heap.ts';

await import('./serve.ts');
