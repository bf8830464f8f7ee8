/** A paired car for tests: a device row and its token in the registry, as an approval leaves them. */
import { newDeviceToken, tokenHash } from '../src/devices/token.ts';
import type { TestService } from './support.ts';

export async function pairDevice(service: TestService, installationId: string): Promise<string> {
  const token = newDeviceToken();
  const device = { id: crypto.randomUUID(), installationId, name: null, tokenHash: tokenHash(token), createdAt: 0 };
  await service.storage.committer.write('insertDevice', device);
  service.devices.add(device.tokenHash, { id: device.id, installationId });
  return token;
}
