/**
 * The one place for the failures a client sees: their wording (docs/api.md quotes it)
 * and types; `on-error.ts` turns them into answers, every error body `{"error": "..."}`.
 */
export const messages = {
  hostInvalid: 'Host header is invalid',
  unauthorized: 'unauthorized',
  bodyUnreadable: 'body could not be read',
  bodyTooLarge: 'body is too large',
  bodyNotJson: 'body is not valid JSON',
  bodyNotUtf8: 'body is not valid UTF-8',
  bodyNotObject: 'body must be a JSON object',
  formNotUrlEncoded: 'form must be sent as application/x-www-form-urlencoded',
  otherInstallation: 'token belongs to another installation; pair this car again after its installation id changed',
  notFound: 'not found',
  tooManyPairingRequests: 'too many pairing requests',
  crossSite: 'a web page of another site may not start or poll pairing',
  tooManyWrongPasswords: 'too many wrong passwords, retry later',
  deviceNotFound: 'device not found',
  sessionNotFound: 'charging session not found',
  noSamples: 'no samples',
  internal: 'internal server error',
} as const;

/** A failure with the status and message the client is meant to see. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string, headers?: Record<string, string>) => new HttpError(400, message, headers);
// RFC 9110 §15.5.2: a 401 names the scheme it wants.
export const unauthorized = () => new HttpError(401, messages.unauthorized, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (message: string) => new HttpError(403, message);
export const notFound = (message: string) => new HttpError(404, message);
export const tooManyRequests = (message: string, headers?: Record<string, string>) =>
  new HttpError(429, message, headers);

/** An unexpected failure as one log field: its class and message (a 500's detail goes only to the log). */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export function errorResponse(status: number, message: string, headers: Record<string, string> = {}) {
  return Response.json({ error: message }, { status, headers });
}
