import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable } from '@nestjs/common';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import type { Caller } from '@granule/messaging';
import { callerOf } from '@granule/nats-endpoints';

/** Who is asking, and over which transport, for the request being handled. */
export interface RequestCaller extends Caller {
  transport: 'nats' | 'http' | 'internal';
}

const current = new AsyncLocalStorage<RequestCaller>();

/** The caller of the request this code runs for (`internal` outside a request: start-up, tests). */
export function currentCaller(): RequestCaller {
  return current.getStore() ?? { name: 'internal', authenticated: false, transport: 'internal' };
}

/** What the HTTP token guard found: the caller of an HTTP request. */
export interface HttpCallerCarrier {
  granuleCaller?: Caller;
}

/**
 * Runs every request's handler with its caller in reach (`currentCaller`), so the API records
 * changes with who asked: over NATS the identity that signed the request (CallerGuard checked
 * it), over HTTP the API token's name (ApiTokenGuard).
 */
@Injectable()
export class CallerContextInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const caller: RequestCaller =
      context.getType() === 'http'
        ? {
            ...(context.switchToHttp().getRequest<HttpCallerCarrier>().granuleCaller ?? {
              name: 'anonymous',
              authenticated: false,
            }),
            transport: 'http',
          }
        : { ...callerOf(context), transport: 'nats' };
    return new Observable((subscriber) => current.run(caller, () => next.handle().subscribe(subscriber)));
  }
}
