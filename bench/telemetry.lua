-- wrk script for POST /v1/telemetry: arguments after `--` are <samples per batch> <run id>; bench/lib.ts
-- puts the Authorization header in front of it and the RESULT report after it.
-- Every request holds new (installation, utc) keys, so rows are really inserted; each wrk thread
-- rotates over 16 installation ids of its own. Like live samples, each run's follow the runs before
-- (a million seconds apart) instead of landing among them, which only an offline cache upload does.
local nextThread = 0
function setup(thread)
  thread:set("threadIndex", nextThread)
  nextThread = nextThread + 1
end

wrk.headers["Content-Type"] = "application/json"
local batchSize, run
local counter = 0

function init(args)
  batchSize = tonumber(args[1])
  run = tonumber(args[2])
end

function request()
  counter = counter + 1
  local installation = counter % 16
  local sequence = math.floor(counter / 16)
  local id = string.format("%08x-0000-4000-8000-%04x%08x", run, threadIndex, installation)
  local samples = {}
  for i = 1, batchSize do
    local utc = 1000000000 + run * 1000000 + sequence * batchSize + i
    samples[i] = string.format(
      '{"utc":%d,"soc":%.1f,"power":%.2f,"speed":%d,"lat":%.5f,"lon":%.5f,"elevation":%d,' ..
      '"is_charging":false,"ext_temp":%.1f,"batt_temp":%.1f,"odometer":%.1f}',
      utc, 20 + (utc % 80), (utc % 200) - 50.5, utc % 130, 41 + (utc % 1000) / 10000, 28 + (utc % 997) / 10000,
      utc % 300, 12.5, 25.5, 12000 + utc % 10000)
  end
  local body = '{"installationId":"' .. id .. '","plannerSentUtc":0,"samples":[' .. table.concat(samples, ",") .. ']}'
  return wrk.format("POST", "/v1/telemetry", nil, body)
end
