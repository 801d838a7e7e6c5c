import { Catch, HttpException, Logger } from '@nestjs/common';
import type { ArgumentsHost, ExceptionFilter } from '@nestjs/common';
import { throwError } from 'rxjs';
import type { Observable } from 'rxjs';
import { toReplyError } from '@granule/messaging';
import { httpStatusFor } from '../transport/config-store.api';
import { STREAM_RETRY_AFTER_S } from './stream-slots';

interface JsonResponse {
  status(code: number): { json(body: unknown): void };
  setHeader(name: string, value: string): void;
}

/**
 * HTTP: maps every error to `{error: {code, message, diagnostics?}}` with the status its code
 * calls for. NATS: hands the error to the transport as it is, which answers with its code.
 */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void | Observable<never> {
    if (host.getType() !== 'http') return throwError(() => exception);
    const res = host.switchToHttp().getResponse<JsonResponse>();
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const body = exception.getResponse();
      const message =
        typeof body === 'object' && body !== null && 'message' in body
          ? String((body as { message: unknown }).message)
          : exception.message;
      res.status(status).json({ error: { code: status === 401 ? 'UNAUTHORIZED' : `HTTP_${status}`, message } });
      return;
    }
    const error = toReplyError(exception);
    if (error.code === 'INTERNAL')
      this.logger.error(error.message, exception instanceof Error ? exception.stack : undefined);
    // A refusal that passes: the client is told when to come back.
    if (error.code === 'TOO_MANY_STREAMS') res.setHeader('retry-after', String(STREAM_RETRY_AFTER_S));
    res.status(httpStatusFor(error.code)).json({ error });
  }
}
