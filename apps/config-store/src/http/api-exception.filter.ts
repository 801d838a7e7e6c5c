import { Catch, HttpException, Logger } from '@nestjs/common';
import type { ArgumentsHost, ExceptionFilter } from '@nestjs/common';
import { httpStatusFor, toReplyError } from '../transport/config-store.api';

interface JsonResponse {
  status(code: number): { json(body: unknown): void };
}

/** Maps every error to `{error: {code, message, diagnostics?}}` with the status its code calls for. */
@Catch()
export class ApiExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('http');

  catch(exception: unknown, host: ArgumentsHost): void {
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
    res.status(httpStatusFor(error.code)).json({ error });
  }
}
