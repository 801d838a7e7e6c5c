import { createParamDecorator, Injectable, SetMetadata } from '@nestjs/common';
import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { NatsRole } from '@granule/contracts';
import { ANONYMOUS, CallerRefusedError, allowedCaller } from '@granule/messaging';
import type { Caller } from '@granule/messaging';
import { GranuleNatsContext } from './granule-nats.server';

const ALLOWED_ROLES = 'granule:allowed-roles';

/** The roles that may call an endpoint. Every endpoint says it: one without is refused to everyone. */
export const Allow = (...roles: NatsRole[]): MethodDecorator => SetMetadata(ALLOWED_ROLES, roles);

function natsContextOf(context: ExecutionContext): GranuleNatsContext | undefined {
  if (context.getType() !== 'rpc') return undefined;
  const ctx = context.switchToRpc().getContext<unknown>();
  return ctx instanceof GranuleNatsContext ? ctx : undefined;
}

/** The caller of a request as the guard let it in (anonymous on a NATS without auth). */
export function callerOf(context: ExecutionContext): Caller {
  const ctx = natsContextOf(context);
  if (!ctx?.caller) return ANONYMOUS;
  return {
    name: ctx.caller.name,
    ...(ctx.caller.role ? { role: ctx.caller.role } : {}),
    ...(ctx.caller.node ? { node: ctx.caller.node } : {}),
    authenticated: true,
  };
}

/** `@CallerOf() caller: Caller`: who sent the request (proved by its signature). */
export const CallerOf = createParamDecorator((_data: unknown, context: ExecutionContext): Caller => callerOf(context));

/**
 * Lets a NATS request reach its endpoint only when its caller may: on an authenticated NATS the
 * request must be signed by an identity of the installation (`UNAUTHENTICATED` otherwise) whose
 * role the endpoint's `@Allow` lists (`FORBIDDEN` otherwise). On a NATS without auth everyone is
 * the anonymous caller. HTTP requests pass through (their guard is the API token's).
 */
@Injectable()
export class CallerGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const ctx = natsContextOf(context);
    if (!ctx) return true;
    const roles = this.reflector.get<NatsRole[] | undefined>(ALLOWED_ROLES, context.getHandler());
    const action = ctx.getSubject();
    if (!roles)
      throw new CallerRefusedError('FORBIDDEN', `${action} refused: the endpoint declares no role that may call it`);
    if (!ctx.authRequired) return true;
    if (!ctx.caller)
      throw new CallerRefusedError(
        'UNAUTHENTICATED',
        `${action} refused: the request is not signed by an identity of this installation (connect with a .creds file: GRANULE_NATS_CREDS)`,
      );
    allowedCaller(ctx.caller, roles, action);
    return true;
  }
}
