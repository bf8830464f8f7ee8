-- wrk script for PUT /v1/consumption/daily: the argument after `--` is <run id>; bench/lib.ts puts the
-- Authorization header in front of it and the RESULT report after it.
-- Every request holds a new (installation, recordedAt) key, so each is a real insert (with its day and
-- lifetime sums); each wrk thread rotates over 16 installation ids of its own.
local nextThread = 0
function setup(thread)
  thread:set("threadIndex", nextThread)
  nextThread = nextThread + 1
end

wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"
local run
local counter = 0

function init(args)
  run = tonumber(args[1])
end

function request()
  counter = counter + 1
  local installation = counter % 16
  local id = string.format("%08x-0000-4000-8000-%04x%08x", run, threadIndex, installation)
  local recordedAt = 1767225600000 + counter * 1000
  local body = string.format(
    '{"installationId":"%s","recordedAt":%d,"date":"2026-01-01",' ..
    '"day":{"km":%.2f,"kwh":%.3f,"hours":0.03,"socDrop":0.4}}',
    id, recordedAt, 1 + (counter % 7) * 0.25, 0.18 + (counter % 5) * 0.01)
  return wrk.format(nil, "/v1/consumption/daily", nil, body)
end
