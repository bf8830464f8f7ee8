/**
 * JSON text as the car app's Android `org.json` writes it, so tests replay its bodies byte for byte:
 * a double with no fraction as an integer (`1800`), negative zero as `-0`, and other doubles as Java's
 * `Double.toString` writes them (`4.0E-4`, `1.23456789E7`, `121.4`). Keys keep their insertion order.
 */
export function orgJson(value: unknown): string {
  if (typeof value === 'number') return javaNumber(value);
  if (Array.isArray(value)) return `[${value.map(orgJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const members = Object.entries(value).filter(([, member]) => member !== undefined);
    return `{${members.map(([key, member]) => `${JSON.stringify(key)}:${orgJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** `JSONObject.numberToString`: `-0`, whole numbers as longs, else `Double.toString`. */
function javaNumber(x: number): string {
  if (Object.is(x, -0)) return '-0';
  if (Number.isInteger(x) && Math.abs(x) < 2 ** 63) return BigInt(x).toString();
  const magnitude = Math.abs(x);
  if (magnitude >= 1e-3 && magnitude < 1e7) return String(x);
  // Java: one digit before the point, at least one after it, `E` and a signed exponent without `+`.
  const [mantissa, exponent] = x.toExponential().split('e') as [string, string];
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${exponent.replace('+', '')}`;
}
