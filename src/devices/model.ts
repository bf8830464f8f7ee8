/** The schemas of the device endpoints' answers, for the API document. */
import { Type } from '@sinclair/typebox';
import { messages } from '../http/errors.ts';
import { errorAnswer, sharedErrors, type ApiAnswer, type ApiOperation } from '../http/openapi.ts';

const nullableTime = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const DeviceSchema = Type.Object({
  id: Type.String(),
  installationId: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ description: 'ISO 8601' }),
  lastSeenAt: nullableTime('ISO 8601; written at most once a minute.'),
  revokedAt: nullableTime('ISO 8601; null while the token works.'),
});

const device = {
  id: '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
  installationId: '5b0c3c3e-9a51-4c5e-8f55-2f0e7b0c1a01',
  name: 'MG4',
  createdAt: '2026-11-25T12:00:00.000Z',
  lastSeenAt: '2026-11-25T12:05:00.000Z',
  revokedAt: null,
};

const ownerErrors: Record<number, ApiAnswer> = {
  401: errorAnswer(
    'Wrong or missing approval password (a wrong one counts towards the lockout), or a car’s token.',
    messages.unauthorized,
  ),
  429: sharedErrors.lockedOut,
  500: sharedErrors.internal,
};

/** The owner's device endpoints; present only when APPROVAL_PASSWORD is set. */
export const deviceApi: ApiOperation[] = [
  {
    method: 'get',
    path: '/v1/devices',
    summary: 'List paired devices, newest first',
    security: 'approvalPassword',
    answers: {
      200: {
        description: 'Every device.',
        schema: Type.Object({ devices: Type.Array(DeviceSchema) }),
        example: { devices: [device] },
      },
      ...ownerErrors,
    },
  },
  {
    method: 'post',
    path: '/v1/devices/{id}/revoke',
    summary: "Revoke a device's token",
    description: 'Refused from the next request on; revoking again answers the same.',
    security: 'approvalPassword',
    pathParams: Type.Object({ id: Type.String({ description: 'The device id.', examples: [device.id] }) }),
    answers: {
      200: {
        description: 'The device, `revokedAt` set.',
        schema: DeviceSchema,
        example: { ...device, revokedAt: '2026-11-26T08:00:00.000Z' },
      },
      ...ownerErrors,
      404: errorAnswer('No device has that id.', messages.deviceNotFound),
    },
  },
];
