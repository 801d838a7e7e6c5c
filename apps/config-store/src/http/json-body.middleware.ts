import type { IncomingMessage, ServerResponse } from 'node:http';
import { INPUT_LIMITS, formatBytes, parseJsonText } from '@granule/core';
import type { Diagnostic } from '@granule/core';

type Next = (err?: unknown) => void;

/** `PUT /artifacts/<digest>`: a raw tar body, passed on unread. */
export const ARTIFACT_UPLOAD_PATH = '/artifacts/';

function refuse(res: ServerResponse, status: number, diagnostics: Diagnostic[]): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(
    JSON.stringify({
      error: {
        code: 'INVALID_INPUT',
        message: diagnostics
          .map((d) => `${d.line ? `line ${d.line}: ` : ''}${d.path ? `${d.path}: ` : ''}${d.message}`)
          .join('\n'),
        diagnostics,
      },
    }),
  );
}

/**
 * Reads and parses JSON request bodies in place of Express's parser: a body over the bound is
 * refused with 413 as soon as it passes it (naming the bound and the size), deep nesting and
 * broken JSON with 400 before anything recurses over it; the refusal never echoes the body.
 */
export function jsonBodyMiddleware(limitBytes: number = INPUT_LIMITS.httpBodyBytes) {
  return (req: IncomingMessage & { body?: unknown }, res: ServerResponse, next: Next): void => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'DELETE' || req.method === 'OPTIONS') {
      next();
      return;
    }
    // Deployment files are streamed to the artifacts bucket as they arrive, never buffered.
    if (req.method === 'PUT' && req.url?.startsWith(ARTIFACT_UPLOAD_PATH)) {
      next();
      return;
    }
    const tooLarge = (size: string): void =>
      refuse(res, 413, [
        {
          severity: 'error',
          code: 'INPUT_TOO_LARGE',
          path: 'body',
          message: `the request body is too large: expected at most ${formatBytes(limitBytes)}, got ${size}`,
        },
      ]);
    // A refused body is read to its end without keeping it (a client still sending would get
    // EPIPE instead of the answer), up to a few times the bound; past that the socket is closed.
    const drainLimit = 4 * limitBytes;
    const declared = Number(req.headers['content-length']);
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    if (Number.isFinite(declared) && declared > limitBytes) {
      done = true;
      tooLarge(formatBytes(declared));
    }
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (done) {
        if (size > drainLimit) req.socket.destroy();
        return;
      }
      if (size > limitBytes) {
        done = true;
        tooLarge(`more than ${formatBytes(limitBytes)}`);
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', (err) => {
      if (done) return;
      done = true;
      next(err);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') {
        req.body = undefined;
        next();
        return;
      }
      const type = String(req.headers['content-type'] ?? '');
      if (!/\bjson\b/i.test(type)) {
        refuse(res, 415, [
          {
            severity: 'error',
            code: 'INPUT_NOT_JSON',
            path: 'body',
            message: `expected a JSON body with Content-Type: application/json, got Content-Type ${JSON.stringify(type.slice(0, 100))}`,
          },
        ]);
        return;
      }
      const parsed = parseJsonText(text, 'body');
      if ('problem' in parsed) {
        refuse(res, 400, [{ ...parsed.problem, file: undefined, path: 'body' }]);
        return;
      }
      req.body = parsed.value;
      next();
    });
  };
}
