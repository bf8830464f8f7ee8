import type { Logger } from '../log.ts';
import type { ValidationError } from 'elysia';
import { describeError, errorResponse, HttpError, messages } from './errors.ts';
import { explainRefusal } from './validate.ts';

/** Headers the listener's own answers (a refused `Host`, an escaped failure) carry for a path, as the app's do. */
export type PathHeaders = (path: string) => Readonly<Record<string, string>>;

interface ErrorContext {
  code: string | number;
  error: unknown;
  request: Request;
}

/** Elysia's `onError`: every failure becomes `{"error": ...}`; only a 500's detail goes to the log. */
export function answerError(log: Logger) {
  return ({ code, error, request }: ErrorContext): Response => {
    // The pipeline's parse stage throws its own 401 and 400s, which Elysia wraps; any other parse error is a 400.
    const cause = code === 'PARSE' ? ((error as { cause?: unknown }).cause ?? error) : error;
    if (cause instanceof HttpError) return errorResponse(cause.status, cause.message, cause.headers);
    if (code === 'VALIDATION') {
      // A route's params schema refused the path: its field-by-field check words the 400.
      const { validator, value } = error as ValidationError;
      const refusal = explainRefusal((validator as { schema?: unknown }).schema, value);
      if (refusal) return errorResponse(refusal.status, refusal.message, refusal.headers);
      return errorResponse(400, invalidField((error as ValidationError).valueError?.path));
    }
    if (code === 'NOT_FOUND') return errorResponse(404, messages.notFound);
    if (code === 'PARSE') return errorResponse(400, messages.bodyNotJson);
    return internalError(log, request, cause);
  };
}

/** The 400 of a schema no field-by-field check explains: the first refused field, by its JSON pointer. */
function invalidField(pointer: string | undefined): string {
  const field = pointer?.slice(1).replaceAll('/', '.');
  return field ? `${field} is invalid` : 'the request is invalid';
}

/** A failure nothing answered: its detail to the log only, `internal server error` to the client. */
export function internalError(log: Logger, request: Request, error: unknown): Response {
  log.error('request.failed', { method: request.method, path: pathOf(request.url), error: describeError(error) });
  return errorResponse(500, messages.internal);
}

/** The path of a request URL without its query, which may carry a pairing code. */
export function pathOf(url: string): string {
  // Bun's url is the bare request target when the Host header holds a character no host may.
  const start = url.startsWith('/') ? 0 : url.indexOf('/', url.indexOf('//') + 2);
  if (start < 0) return '/';
  const query = url.indexOf('?', start);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}
