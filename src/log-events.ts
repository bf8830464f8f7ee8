/**
 * The catalogue of every log event: its level and the fields it may carry. The logger accepts only
 * these names at their level (a type error otherwise), and the tests render each one in both formats
 * and check that no field may carry a secret or a location. A new event is one line here.
 */
export const LOG_EVENTS = {
  started: {
    level: 'info',
    fields: ['version', 'address', 'database', 'durability', 'devices', 'pairing', 'planner', 'metrics'],
  },
  stopping: { level: 'info', fields: [] },
  stopped: { level: 'info', fields: ['groups', 'writes', 'syncs'] },
  'stop.failed': { level: 'error', fields: ['reason'] },
  'stop.forced': { level: 'warn', fields: ['signals'] },
  'bench.group_writes': { level: 'warn', fields: ['maxGroupWrites', 'hint'] },
  'database.hard_linked': { level: 'warn', fields: ['file', 'links', 'hint'] },
  'writer.failed': { level: 'error', fields: ['reason'] },
  request: { level: 'info', fields: ['method', 'path', 'status', 'ms'] },
  'request.failed': { level: 'error', fields: ['method', 'path', 'error'] },
  'ready.unavailable': { level: 'warn', fields: ['reason'] },
  'ready.recovered': { level: 'info', fields: ['was'] },
  'ready.read_failed': { level: 'error', fields: ['error'] },
  'telemetry.dropped': { level: 'info', fields: ['installation', 'count', 'first'] },
  'planner.resumed': { level: 'info', fields: ['installations'] },
  'planner.retry': { level: 'warn', fields: ['installation', 'status', 'error', 'attempt'] },
  'planner.given_up': { level: 'warn', fields: ['installation', 'status', 'error', 'attempts'] },
  'planner.failed': { level: 'error', fields: ['installation', 'reason'] },
  'planner.mark_failed': { level: 'error', fields: ['samples', 'failures', 'reason'] },
  'planner.mark_recovered': { level: 'info', fields: ['failures'] },
  'planner.sent': { level: 'info', fields: ['installation', 'count'] },
  'purge.applied': { level: 'info', fields: ['installation'] },
  'purge.check_failed': { level: 'error', fields: ['reason'] },
  'retention.deleted': { level: 'info', fields: ['samples', 'before', 'pagesFreed'] },
  'retention.failed': { level: 'error', fields: ['reason'] },
  'pairing.started': { level: 'info', fields: ['installation'] },
  'pairing.approved': { level: 'info', fields: ['installation', 'device'] },
  'pairing.denied': { level: 'info', fields: ['installation'] },
  'pairing.collected': { level: 'info', fields: ['installation', 'device'] },
  'pairing.revoked_before_collection': { level: 'info', fields: ['installation', 'device'] },
  'pairing.uncollected_revoked': { level: 'info', fields: ['device', 'reason'] },
  'pairing.revoke_failed': { level: 'error', fields: ['device', 'reason'] },
  'pairing.wrong_password': { level: 'warn', fields: ['installation'] },
  'pairing.page_failed': { level: 'error', fields: ['error'] },
  'pairing.public_url_unset': { level: 'warn', fields: ['hint'] },
  'device.revoked': { level: 'info', fields: ['device', 'by'] },
  'device.last_seen_failed': { level: 'warn', fields: ['device', 'reason'] },
  'devices.reloaded': { level: 'info', fields: ['active'] },
  'devices.reload_failed': { level: 'error', fields: ['reason'] },
} as const satisfies Record<string, { level: 'debug' | 'info' | 'warn' | 'error'; fields: readonly string[] }>;

export type LogEventName = keyof typeof LOG_EVENTS;
