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

const HTTP_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * The per-request figures, by method, route pattern and status: plain numbers the request's
 * onResponse hook adds to (a counter increment and a bucket increment, no label hashing), handed
 * to prom-client when /metrics is read (the two metrics' `collect`).
 */
interface HttpTally {
  labels: { method: string; route: string; status: string };
  count: number;
  sum: number;
  /** per bucket of HTTP_BUCKETS, not cumulative; the last slot is over the largest bound */
  buckets: number[];
}
const httpTallies = new Map<string, HttpTally>();

export const httpRequests = new client.Counter({
  name: 'weft_http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const t of httpTallies.values()) this.inc(t.labels, t.count);
  },
});

/** prom-client's own record of one label set (its `hashMap` values), written at collection. */
interface HistogramEntry {
  labels: Record<string, string>;
  sum: number;
  count: number;
  bucketValues: Record<number, number>;
}

export const httpDuration = new client.Histogram({
  name: 'weft_http_request_duration_seconds',
  help: 'HTTP request latency, by method, route pattern and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: HTTP_BUCKETS,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    const map = (this as unknown as { hashMap: Record<string, HistogramEntry> }).hashMap;
    for (const t of httpTallies.values()) {
      // creates prom-client's entry for the label set, which then takes the tally's figures
      this.observe(t.labels, 0);
      const entry = Object.values(map).find(
        (e) => e.labels.method === t.labels.method && e.labels.route === t.labels.route && e.labels.status === t.labels.status,
      );
      if (!entry) continue;
      entry.sum = t.sum;
      entry.count = t.count;
      HTTP_BUCKETS.forEach((bound, i) => (entry.bucketValues[bound] = t.buckets[i]!));
    }
  },
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
  help: 'PostgreSQL pool connections by state (total, idle, waiting clients) and pool (main; hot: the compiled hot reads); absent on SQLite',
  labelNames: ['state', 'pool'] as const,
  registers: [metricsRegistry],
  collect() {
    this.reset();
    for (const database of pools) {
      for (const [name, pool] of [
        ['main', database.pool],
        ['hot', database.hotPool],
      ] as const) {
        if (!pool) continue;
        this.inc({ state: 'total', pool: name }, pool.totalCount);
        this.inc({ state: 'idle', pool: name }, pool.idleCount);
        this.inc({ state: 'waiting', pool: name }, pool.waitingCount);
      }
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
  // The label values are bounded (route patterns, methods, statuses). The hot path is a few
  // number increments; prom-client sees the tallies when /metrics is read.
  app.addHook('onResponse', (request, reply, done) => {
    const method = request.method;
    const route = request.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const key = `${method} ${status} ${route}`;
    let tally = httpTallies.get(key);
    if (!tally) {
      tally = {
        labels: { method, route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: new Array<number>(HTTP_BUCKETS.length + 1).fill(0),
      };
      httpTallies.set(key, tally);
    }
    const seconds = reply.elapsedTime / 1000;
    let i = 0;
    while (i < HTTP_BUCKETS.length && seconds > HTTP_BUCKETS[i]!) i++;
    tally.count++;
    tally.sum += seconds;
    tally.buckets[i]!++;
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
