/** A finished charging session as the car app uploads it; unknown top-level fields are ignored. */
import { array, boolean, invalid, numberIn, object, optional, timeMs, uuid, type JsonObject } from '../http/validate.ts';
import { limits } from '../limits.ts';

/** Optional numbers of a session and their ranges (both ends included). */
const optionalNumbers = {
  durationSeconds: [0, 604_800],
  meteredSeconds: [0, 604_800],
  chargingLossPercent: [0, 100],
  gridEnergyKwh: [0, 2000],
  pricePerKwh: [0, 1_000_000],
  totalCost: [0, 1_000_000_000],
  startSocPercent: [0, 100],
  endSocPercent: [0, 100],
  lastPower: [-1000, 1000],
  curveIntervalMs: [0, 86_400_000],
} as const;

type OptionalNumbers = { [K in keyof typeof optionalNumbers]: number | null };

export interface CurvePoint {
  timestampMs: number;
  powerKw: number;
  socPercent?: number;
}

export interface ChargingSession extends OptionalNumbers {
  installationId: string;
  sessionId: string;
  startedAt: number;
  endedAt: number;
  energyKwh: number;
  isDemo: boolean | null;
  curve: CurvePoint[] | null;
}

/** 1 to `limits.sessionIdMaxChars` characters of `A-Z a-z 0-9 . _ -`, starting with a letter or digit (the app sends UUIDs). */
const SESSION_ID = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${limits.sessionIdMaxChars - 1}}$`);

export function parseSessionId(value: string): string {
  if (!SESSION_ID.test(value)) {
    invalid('sessionId', `must be 1..${limits.sessionIdMaxChars} characters of A-Z a-z 0-9 . _ - starting with a letter or digit`);
  }
  return value;
}

/** The session of a PUT: its path id first, then the body, both in the documented order. */
export function parseSession(pathSessionId: string, body: JsonObject): ChargingSession {
  const sessionId = parseSessionId(pathSessionId);
  const installationId = uuid(body.installationId, 'installationId');
  if (body.sessionId !== undefined && body.sessionId !== null && body.sessionId !== sessionId) {
    invalid('sessionId', 'does not match path');
  }
  const startedAt = timeMs(body.startedAt, 'startedAt');
  // The head unit's clock steps back when it picks up GPS or NTP time: an end before the start is kept as sent.
  const endedAt = timeMs(body.endedAt, 'endedAt');
  const energyKwh = numberIn(body.energyKwh, 'energyKwh', 0, 1000);
  const numbers = Object.fromEntries(
    Object.entries(optionalNumbers).map(([field, [min, max]]) => [
      field,
      optional(body[field], field, (value, path) => numberIn(value, path, min, max)),
    ]),
  ) as OptionalNumbers;
  return {
    installationId,
    sessionId,
    startedAt,
    endedAt,
    energyKwh,
    ...numbers,
    isDemo: optional(body.isDemo, 'isDemo', boolean),
    curve: optional(body.curve, 'curve', parseCurve),
  };
}

function parseCurve(value: unknown, path: string): CurvePoint[] {
  return array(value, path, limits.curvePointsMax).map((item, index) => {
    const at = `${path}[${index}]`;
    // A point that is null is there all the same: not "required", as an absent field would be.
    const point = item === null ? invalid(at, 'must be an object') : object(item, at);
    const timestampMs = timeMs(point.timestampMs, `${at}.timestampMs`);
    const powerKw = numberIn(point.powerKw, `${at}.powerKw`, 0, 1000);
    const socPercent = optional(point.socPercent, `${at}.socPercent`, (soc, socPath) => numberIn(soc, socPath, 0, 100));
    return socPercent === null ? { timestampMs, powerKw } : { timestampMs, powerKw, socPercent };
  });
}
