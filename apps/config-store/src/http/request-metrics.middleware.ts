import type { IncomingMessage, ServerResponse } from 'node:http';
import { outcomeOfStatus, type RequestMetrics } from '@granule/observability';

type Next = (err?: unknown) => void;

/**
 * Counts every HTTP request once its answer is sent, by route and outcome, refusals of the token
 * guard and of the body reader included. The route is Express's pattern (`GET /nodes/:uid`), never
 * the path itself, so series do not grow with ids; a path no route matched is `unmatched`.
 */
export function requestMetricsMiddleware(metrics: Pick<RequestMetrics, 'answered'>) {
  return (req: IncomingMessage & { route?: { path?: unknown }; baseUrl?: string }, res: ServerResponse, next: Next) => {
    const started = performance.now();
    res.once('finish', () => {
      const pattern = typeof req.route?.path === 'string' ? `${req.baseUrl ?? ''}${req.route.path}` : undefined;
      const route = pattern === undefined ? 'unmatched' : `${req.method ?? 'GET'} ${pattern}`;
      metrics.answered('http', route, outcomeOfStatus(res.statusCode), (performance.now() - started) / 1000);
    });
    next();
  };
}
