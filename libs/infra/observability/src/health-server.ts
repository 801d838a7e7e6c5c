import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GranuleError } from '@granule/core';
import type { GranuleMetrics } from './granule-metrics';
import { DEFAULT_CHECK_TIMEOUT_MS, runReadinessChecks, type ReadinessCheck } from './readiness-checks';

/** The health port of every service when GRANULE_HEALTH_PORT is not set (0 turns the server off). */
export const DEFAULT_HEALTH_PORTS = Object.freeze({
  'config-store': 8411,
  'graph-planner': 8412,
  orchestrator: 8413,
  'node-agent': 8414,
});

export interface HealthEndpointsOptions {
  /** Dependencies `/readyz` checks, e.g. `[natsCheck(nc), postgresCheck(dataSource)]`. */
  checks: readonly ReadinessCheck[];
  /** Served on `/metrics`; without it `/metrics` answers 404. */
  metrics?: Pick<GranuleMetrics, 'render' | 'contentType'>;
  /** Time each check may take; default 2000 ms. */
  checkTimeoutMs?: number;
}

/** A plain node:http handler (an Express app can mount it too); answers false when the path is not its own. */
export type HealthHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/**
 * The three endpoints, as one handler:
 * - `GET /healthz`: the process is alive → 200 `{"status":"ok"}` (never checks dependencies,
 *   so a broker outage does not get every pod restarted).
 * - `GET /readyz`: runs every check → 200 `{"status":"ready","checks":{...},"failing":[]}` or
 *   503 `{"status":"unready",...,"failing":["postgres"]}` with each check's error.
 * - `GET /metrics`: the registry in Prometheus text format (`text/plain; version=0.0.4`).
 */
export function createHealthHandler(options: HealthEndpointsOptions): HealthHandler {
  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/readyz' && path !== '/metrics') return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(
        res,
        405,
        'application/json',
        JSON.stringify({ status: 'error', error: `${req.method} not allowed: use GET` }),
        { allow: 'GET, HEAD' },
      );
      return true;
    }
    try {
      if (path === '/healthz') {
        send(res, 200, 'application/json', JSON.stringify({ status: 'ok' }));
      } else if (path === '/readyz') {
        const report = await runReadinessChecks(options.checks, options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS);
        send(res, report.status === 'ready' ? 200 : 503, 'application/json', JSON.stringify(report));
      } else if (options.metrics) {
        send(res, 200, options.metrics.contentType, await options.metrics.render());
      } else {
        send(res, 404, 'application/json', JSON.stringify({ status: 'error', error: 'no metrics in this process' }));
      }
    } catch (err) {
      send(
        res,
        500,
        'application/json',
        JSON.stringify({ status: 'error', error: err instanceof Error ? err.message : String(err) }),
      );
    }
    return true;
  };
}

function send(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store', ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** The health server could not listen; the message names the address and what to do. */
export class HealthServerError extends GranuleError<'HEALTH_PORT_UNAVAILABLE'> {}

export interface HealthServerOptions extends HealthEndpointsOptions {
  /** Port to listen on; 0 picks a free one (tests). Services skip the server when GRANULE_HEALTH_PORT=0. */
  port: number;
  /** Default: every interface (probes and Prometheus come from outside the pod). */
  host?: string;
}

/** A running health server. */
export interface HealthServer {
  /** The port it listens on (the chosen one when started with 0). */
  port: number;
  close(): Promise<void>;
}

/**
 * Starts `/healthz`, `/readyz` and `/metrics` on a small node:http server (no framework); any
 * other path answers 404. Throws `HealthServerError` (`HEALTH_PORT_UNAVAILABLE`) when the
 * port is taken or not allowed.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const handle = createHealthHandler(options);
  const server: Server = createServer((req, res) => {
    void handle(req, res).then((handled) => {
      if (!handled)
        send(
          res,
          404,
          'application/json',
          JSON.stringify({ status: 'error', error: 'not found: try /healthz, /readyz or /metrics' }),
        );
    });
  });
  // Probes are short requests; don't let idle keep-alive sockets hold a stopping process.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const where = `${options.host ?? '*'}:${options.port}`;
      const reason =
        err.code === 'EADDRINUSE' ? 'the port is in use' : err.code === 'EACCES' ? 'permission denied' : err.message;
      reject(
        new HealthServerError(
          'HEALTH_PORT_UNAVAILABLE',
          `cannot serve health checks on ${where}: ${reason} — set GRANULE_HEALTH_PORT (0 turns it off)`,
          { cause: err },
        ),
      );
    });
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * What a service's main calls: no server when `port` is 0; when the port cannot be used the
 * reason goes to `warn` and the service carries on without it (a taken probe port must not stop
 * a node agent; in Kubernetes the failing probes make it visible).
 */
export async function serveHealthChecks(
  options: HealthServerOptions,
  warn: (message: string) => void,
): Promise<HealthServer | undefined> {
  if (options.port === 0) return undefined;
  try {
    return await startHealthServer(options);
  } catch (err) {
    if (!(err instanceof HealthServerError)) throw err;
    warn(`${err.message}; running without /healthz, /readyz and /metrics`);
    return undefined;
  }
}
