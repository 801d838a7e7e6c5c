import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, UnauthorizedException } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { HttpCallerCarrier } from '../audit/caller-context';
import type { ApiCaller } from '../config/config.service';

/** Injection token of the configured API callers (names and tokens). */
export const API_CALLERS = Symbol('API_CALLERS');

/** Compares in constant time (hashes first, so the lengths match and leak nothing). */
export function tokenMatches(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * HTTP requests carry `Authorization: Bearer <token>` (or `X-Granule-Token`); the token names
 * the caller (GRANULE_API_TOKENS), whose name the audit and the request log record.
 */
@Injectable()
export class ApiTokenGuard implements CanActivate {
  constructor(@Inject(API_CALLERS) private readonly callers: readonly ApiCaller[]) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | string[] | undefined> } & HttpCallerCarrier>();
    const headers = request.headers;
    const auth = headers['authorization'];
    const bearer = typeof auth === 'string' && /^Bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
    const header = headers['x-granule-token'];
    const given = bearer ?? (typeof header === 'string' ? header : undefined);
    if (given === undefined)
      throw new UnauthorizedException('an API token is required: send Authorization: Bearer <GRANULE_API_TOKEN>');
    // Every token is compared (in constant time), so the time taken does not say which one matched.
    let caller: ApiCaller | undefined;
    for (const c of this.callers) if (tokenMatches(given, c.token) && !caller) caller = c;
    if (!caller) throw new UnauthorizedException('the API token is not valid');
    // A token gives an operator's rights; the audit records the change as its caller's.
    request.granuleCaller = { name: caller.name, role: 'operator', authenticated: true };
    return true;
  }
}
