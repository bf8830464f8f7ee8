/** The address the car's QR code leads to: PUBLIC_URL, else the request's own origin. */
import type { Config } from '../config.ts';
import { requestOrigin } from '../http/origin.ts';
import { PAIR_PATH } from './page.tsx';

export function approvalUrl(
  config: Pick<Config, 'publicUrl' | 'trustProxy'>,
  request: Request,
  userCode: string,
): string {
  return `${config.publicUrl || requestOrigin(request, config.trustProxy)}${PAIR_PATH}?code=${userCode}`;
}
