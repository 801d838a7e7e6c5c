import type { IncomingMessage, ServerResponse } from 'node:http';
import { outcomeOfStatus, type RequestMetrics } from '@granule/observability';
import type { HttpCallerCarrier } from '../audit/caller-context';

type Next = (err?: unknown) => void;

type RoutedRequest = IncomingMessage & { route?: { path?: unknown }; baseUrl?: string };

/** Express's pattern of the route that answered (`GET /nodes/:uid`), `unmatched` when none did. */
function routeOf(req: RoutedRequest): string {
  const pattern = typeof req.route?.path === 'string' ? `${req.baseUrl ?? ''}${req.route.path}` : undefined;
  return pattern === undefined ? 'unmatched' : `${req.method ?? 'GET'} ${pattern}`;
}

/**
 * What the request log line of an answered HTTP call adds (nestjs-pino's `customProps`): the
 * route and the caller the token guard named (`anonymous` when it refused). Before the answer
 * (pino-http asks at the start too) nothing: the route and caller are not known yet.
 */
export function httpCallProps(req: RoutedRequest & HttpCallerCarrier, res: ServerResponse): Record<string, string> {
  if (!res.headersSent) return {};
  return { route: routeOf(req), caller: req.granuleCaller?.name ?? 'anonymous' };
}

/**
 * Counts every HTTP request once its answer is sent, by route and outcome, refusals of the token
 * guard and of the body reader included. The route is Express's pattern (`GET /nodes/:uid`), never
 * the path itself, so series do not grow with ids; a path no route matched is `unmatched`.
 */
export function requestMetricsMiddleware(metrics: Pick<RequestMetrics, 'answered'>) {
  return (req: RoutedRequest, res: ServerResponse, next: Next) => {
    const started = performance.now();
    res.once('finish', () => {
      metrics.answered('http', routeOf(req), outcomeOfStatus(res.statusCode), (performance.now() - started) / 1000);
    });
    next();
  };
}
