const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** 8-4-4-4-12 hex digits, any case (the API's UUID rule). */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}
