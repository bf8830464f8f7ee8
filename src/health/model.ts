/** The schemas of the health, readiness and API-document answers, for the API document. */
import { Type } from '@sinclair/typebox';
import type { ApiOperation } from '../http/openapi.ts';

export const healthApi: ApiOperation[] = [
  {
    method: 'get',
    path: '/v1/health',
    summary: 'Liveness: the process answers',
    security: 'none',
    answers: {
      200: { description: 'Alive.', schema: Type.Object({ status: Type.Literal('ok') }), example: { status: 'ok' } },
    },
  },
  {
    method: 'get',
    path: '/v1/ready',
    summary: 'Readiness: the database and its writer answer',
    security: 'none',
    answers: {
      200: {
        description: 'Ready.',
        schema: Type.Object({ status: Type.Literal('ready') }),
        example: { status: 'ready' },
      },
      503: {
        description: 'Not ready, with the reason.',
        schema: Type.Object({ status: Type.Literal('unavailable'), reason: Type.String() }),
        example: { status: 'unavailable', reason: 'the writer has failed; the service must be restarted' },
      },
    },
  },
  {
    method: 'get',
    path: '/v1/openapi.json',
    summary: 'This document',
    security: 'none',
    answers: {
      200: {
        description: 'The OpenAPI 3.1 document of the routes this server serves.',
        schema: Type.Object({ openapi: Type.Literal('3.1.0') }),
      },
    },
  },
];
