import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import client from 'prom-client';
import type { Database } from '../db/index.ts';
import type { QueryObserver } from '../db/query-timing.ts';

/**
 * Prometheus metrics (README "Deploying": METRICS). One registry per process; other modules
 * update the metrics exported here (the live-events stream sets `eventStreamSubscribers`).
 */
export const metricsRegistry = new client.Registry();
client.collectDefaultMetrics({ register: metricsRegistry, prefix: 'weft_' });

export const httpRequests = new client.Counter({
  name: 'weft_http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
});

export const httpDuration = new client.Histogram({
  name: 'weft_http_request_duration_seconds',
  help: 'HTTP request latency, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

/** Open live event streams; the event-stream route increments and decrements it. */
export const eventStreamSubscribers = new client.Gauge({
  name: 'weft_event_stream_subscribers',
  help: 'Open live event-stream connections',
  registers: [metricsRegistry],
});

const pools = new Set<Database>();

new client.Gauge({
  name: 'weft_db_pool_connections',
  help: 'PostgreSQL pool connections by state (total, idle, waiting clients); absent on SQLite',
  labelNames: ['state'] as const,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const { pool } of pools) {
      if (!pool) continue;
      this.inc({ state: 'total' }, pool.totalCount);
      this.inc({ state: 'idle' }, pool.idleCount);
      this.inc({ state: 'waiting' }, pool.waitingCount);
    }
  },
});

export const dbQueryDuration = new client.Histogram({
  name: 'weft_db_query_duration_seconds',
  help: 'Database query time, by statement kind (select, insert, update, delete, transaction, other)',
  labelNames: ['kind'] as const,
  buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  registers: [metricsRegistry],
});

export const dbQueryErrors = new client.Counter({
  name: 'weft_db_query_errors_total',
  help: 'Database queries that failed (constraint violations included), by statement kind',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});

/** How late each timer occurrence fired: the scheduler observes now minus its due time. */
export const timerLag = new client.Histogram({
  name: 'weft_timer_lag_seconds',
  help: 'Seconds between a timer occurrence falling due and its firing',
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

const observeQuery: QueryObserver = (kind, seconds, failed) => {
  dbQueryDuration.observe({ kind }, seconds);
  if (failed) dbQueryErrors.inc({ kind });
};

/**
 * Counts every answered request by route pattern (never the raw URL: bounded label values);
 * with `timeQueries` (metrics on) also times every database query by statement kind.
 */
export function installMetrics(app: FastifyInstance, database: Database, timeQueries: boolean): void {
  pools.add(database);
  if (timeQueries) database.queryObservers.add(observeQuery);
  app.addHook('onClose', async () => {
    pools.delete(database);
    database.queryObservers.delete(observeQuery);
  });
  // The label values are bounded (route patterns, methods, statuses): each combination's
  // children are looked up once, not hashed from a labels object on every request.
  const children = new Map<
    string,
    { count: ReturnType<typeof httpRequests.labels>; duration: ReturnType<typeof httpDuration.labels> }
  >();
  app.addHook('onResponse', (request, reply, done) => {
    const method = request.method;
    const route = request.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const key = `${method} ${status} ${route}`;
    let child = children.get(key);
    if (!child) {
      const labels = { method, route, status: String(status) };
      child = { count: httpRequests.labels(labels), duration: httpDuration.labels(labels) };
      children.set(key, child);
    }
    child.count.inc();
    child.duration.observe(reply.elapsedTime / 1000);
    done();
  });
}

export async function metricsText(): Promise<string> {
  return metricsRegistry.metrics();
}

/** METRICS=<port>: /metrics on its own listener (keep it off the public network). */
export async function startMetricsServer(host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.url?.split('?')[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    metricsText().then(
      (body) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
