import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, UnauthorizedException } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { HttpCallerCarrier } from '../audit/caller-context';

/** Injection token of the configured API token. */
export const API_TOKEN = Symbol('API_TOKEN');

/** Compares in constant time (hashes first, so the lengths match and leak nothing). */
export function tokenMatches(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** HTTP requests carry `Authorization: Bearer <token>` (or `X-Granule-Token`). */
@Injectable()
export class ApiTokenGuard implements CanActivate {
  constructor(@Inject(API_TOKEN) private readonly token: string) {}

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
    if (!tokenMatches(given, this.token)) throw new UnauthorizedException('the API token is not valid');
    // The token gives an operator's rights; the audit records the change as the token's.
    request.granuleCaller = { name: 'api-token', role: 'operator', authenticated: true };
    return true;
  }
}
